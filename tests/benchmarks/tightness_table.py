"""Tightness table of issue 31: best proven upper / best proven lower over a grid, per randomizer.

Run on demand (long; each point is written to the JSONL file as it finishes, and a rerun skips
the points already there):

    python tests/benchmarks/tightness_table.py run results/issue31/tightness.jsonl
    python tests/benchmarks/tightness_table.py render results/issue31/tightness.jsonl

``render`` prints the Markdown section (docs/bounds.md, "Tightness"). "before" is the best of
the bounds that existed before issue 31 (optimal-blanket / exact-lower, ...), "after" adds
brr-exact / brr-exact-lower. Wall and CPU seconds are recorded per bound.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.randomizers import make_randomizer

EPSILON0 = (0.1, 1.0, 4.0, 10.0)
N = (100, 1000, 10**4, 10**5, 10**6)
DELTA = (1e-4, 1e-8, 1e-12)
CONFIGS = [("brr", {}), ("krr", {"domain_size": 3})]
NEW = {"brr-exact", "brr-exact-lower"}
OLD_UPPER = ("optimal-blanket",)
OLD_LOWER = ("exact-lower",)


def _methods(name: str) -> list[str]:
    extra = ["brr-exact", "brr-exact-lower"] if name == "brr" else []
    return [*OLD_UPPER, *OLD_LOWER, *extra]


def run(path: Path) -> None:
    done = set()
    if path.exists():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["randomizer"], r["epsilon0"], r["n"], r["delta"], r["method"]))
    with path.open("a") as out:
        for (name, params), n, e0, delta in itertools.product(CONFIGS, N, EPSILON0, DELTA):
            randomizer = make_randomizer(name, epsilon0=e0, **params)
            for method in _methods(name):
                key = (name, e0, n, delta, method)
                if key in done:
                    continue
                wall, cpu = time.perf_counter(), time.process_time()
                ev = cat.evaluate(method, randomizer, n, delta)
                rec = {"randomizer": name, "epsilon0": e0, "n": n, "delta": delta,
                       "method": method, "kind": ev.spec.kind.value,
                       "epsilon": ev.result.epsilon if ev.ok else None, "error": ev.error,
                       "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                       "load": os.getloadavg()[0]}
                out.write(json.dumps(rec) + "\n")
                out.flush()


def render(path: Path) -> str:
    points: dict[tuple, dict] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["epsilon"] is None:
            continue
        key = (r["randomizer"], r["epsilon0"], r["n"], r["delta"])
        points.setdefault(key, {})[r["method"]] = r["epsilon"]
    lines = ["| randomizer | eps0 | n | delta | upper before | lower before | ratio before | "
             "upper after | lower after | ratio after | loose side |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(points):
        v = points[key]
        old_u = min((v[m] for m in OLD_UPPER if m in v), default=None)
        old_l = max((v[m] for m in OLD_LOWER if m in v), default=None)
        new_u = min([x for m, x in v.items() if m in OLD_UPPER or m == "brr-exact"],
                    default=None)
        new_l = max([x for m, x in v.items() if m in OLD_LOWER or m == "brr-exact-lower"],
                    default=None)
        if None in (old_u, old_l, new_u, new_l) or old_l <= 0 or new_l <= 0:
            continue
        before, after = old_u / old_l, new_u / new_l
        side = ("upper (blanket decomposition; the exact curve closes it)"
                if key[0] == "brr" and before > 1.01 else "-")
        lines.append(f"| {key[0]} | {key[1]:g} | {key[2]:.0e} | {key[3]:.0e} | {old_u:.5g} | "
                     f"{old_l:.5g} | {before:.4f} | {new_u:.5g} | {new_l:.5g} | {after:.4f} | "
                     f"{side} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    command, file = sys.argv[1], Path(sys.argv[2])
    if command == "run":
        run(file)
    else:
        print(render(file), end="")
