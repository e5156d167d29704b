"""Tightness table of issue 31: best proven upper / best proven lower over a grid, for every
single-message randomizer.

Run on demand (long; each bound at each point is written to the JSONL file as it finishes, and
a rerun skips what is already there; the points run in priority order, see ``POINTS``):

    nice -n 10 python tests/benchmarks/tightness_table.py run results/issue31/tightness.jsonl
    python tests/benchmarks/tightness_table.py render results/issue31/tightness.jsonl
    python tests/benchmarks/tightness_table.py docs results/issue31/tightness.jsonl \
        docs/tightness.md

Every applicable (non-personalized) bound is evaluated. "Best proven" uses the status each
result states (an ``optimal-blanket`` maximised over a grid of pairs says ``approximate`` and
does not count). "Before" leaves out the bounds added for issue 31 (``NEW``). Wall and CPU
seconds and the load average are recorded per bound. ``render`` prints the Markdown of
docs/tightness.md's per-randomizer table, with the reason for every ratio above 1.01.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical import optimal, pair_search
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

#: (label, registry name, parameters) of the single-message randomizers.
CONFIGS = [
    ("brr", "brr", {}), ("krr3", "krr", {"domain_size": 3}),
    ("krr16", "krr", {"domain_size": 16}),
    ("rappor4", "rappor", {"domain_size": 4}), ("oue4", "oue", {"domain_size": 4}),
    ("subset6", "subset", {"domain_size": 6, "subset_size": 2}),
    ("blh4", "blh", {"domain_size": 4}), ("olh4", "olh", {"domain_size": 4, "hash_range": 2}),
    ("hr16", "hr", {"domain_size": 16}), ("duchi", "duchi", {}),
    ("summation4", "summation", {"precision": 4}),
    ("laplace", "laplace", {}), ("laplace_binary", "laplace_binary", {}),
    ("piecewise", "piecewise", {}),
    ("witch_hat", "witch_hat", {"height": 2.0, "brim": 0.4}),
    ("laplace_metric", "laplace_metric", {"low": -1.0, "high": 2.0}),
]
CONFIGS_BY_LABEL = {label: (name, params) for label, name, params in CONFIGS}
#: Bounds added for issue 31 (left out of "before").
NEW = {"brr-exact", "brr-exact-lower", "blanket_hoeffding_laplace", "blanket_bennett_laplace",
       "krr-exact", "krr-exact-lower", "exact-lower-best", "pair-search-lower",
       "exact-lower-fft", "krr-relabel"}


#: Bounds that issue 31 made work for one configuration (laplace_binary's exact-lower failed
#: before session 11).
NEW_FOR = {("laplace_binary", "exact-lower")}
#: The issue's grid: eps0 0.1-10, n 1e2-1e7, delta 1e-4..1e-12.
GRID_EPSILON0 = (0.1, 1.0, 4.0, 10.0)
GRID_N = (100, 1000, 10**4, 10**5, 10**6, 10**7)
GRID_DELTA = (1e-4, 1e-8, 1e-12)
#: Tiers in the order they run (the machine is shared: a stopped run has covered the first
#: ones): the issue's reference sizes n = 1e3 and 1e6 at the middle eps0 first, delta = 1e-8
#: over the whole (eps0, n) grid next, the other deltas last. Every grid point is in a tier.
TIERS = (
    ((1.0, 4.0), (1000, 10**6), (1e-8,)),
    ((0.1, 10.0), (1000, 10**6), (1e-8,)),
    ((1.0, 4.0), (100, 10**4, 10**5, 10**7), (1e-8,)),
    ((0.1, 10.0), (100, 10**4, 10**5, 10**7), (1e-8,)),
    (GRID_EPSILON0, (1000, 10**6), (1e-4, 1e-12)),
    (GRID_EPSILON0, GRID_N, (1e-4, 1e-12)),
)
#: Per-evaluation caps: CPU seconds of the evaluating process, and wall seconds (the machine is
#: shared; the wall cap only stops a starved evaluation). A capped method is recorded with
#: error "capped: ..." and not run again at a larger n for the same (randomizer, eps0, delta).
CPU_CAP = 90.0
WALL_CAP = 900.0


def _levels():
    """(eps0, n, delta) in the order they run (TIERS), each once."""
    seen = []
    for eps0s, ns, deltas in TIERS:
        for n in ns:
            for delta in deltas:
                for eps0 in eps0s:
                    if (eps0, n, delta) not in seen:
                        seen.append((eps0, n, delta))
    return seen


POINTS = _levels()


def _short(note: str) -> str:
    """The note's start and end (where the "attained at" / "pair" part is)."""
    return note if len(note) <= 320 else f"{note[:200]} ... {note[-110:]}"


def _evaluate(task: tuple) -> dict:
    """One bound at one point, in the worker process: the record's result fields."""
    name, params, eps0, n, delta, method = task
    randomizer = make_randomizer(name, epsilon0=eps0, **params)
    wall, cpu = time.perf_counter(), time.process_time()
    if method == PAIR:
        ev = _pair_search(randomizer, n, delta)
    elif method == EXACT_FFT:
        ev = _exact_fft(randomizer, n, delta)
    elif method == RELABEL:
        ev = _relabel(randomizer, n, delta)
    else:
        ev = cat.evaluate(method, randomizer, n, delta)
    ok = ev.ok
    return {"epsilon": ev.result.epsilon if ok else None,
            "epsilon_error": ev.result.epsilon_error if ok else None,
            "status": ev.result.status.value if ok else None,
            "note": _short(ev.result.note or "") if ok else "",
            "error": "" if ok else ev.error,
            "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}


#: The dataset-pair search (protocols/bounds/numerical/pair_search.py), not in the catalogue:
#: run by ``pairs`` at these n, recorded in pairs.jsonl next to the grid's file.
PAIR = "pair-search-lower"
PAIR_N = (100, 1000)
#: exact-lower (000 Thm 14) through the engine's FFT on the unmerged likelihood-ratio levels
#: (the catalogue's "auto" merges a continuous output's levels into a few bins, a weaker but
#: cheaper post-processing): the same proven bound, for the continuous configurations.
EXACT_FFT = "exact-lower-fft"
CONTINUOUS = {"laplace", "laplace_binary", "piecewise", "laplace_metric"}
#: where the pair search runs: the categorical configurations whose gap the triple leaves open
#: (brr, k-RR, duchi and summation are within ~1 % or have their exact curves)
PAIR_CONFIGS = {"rappor4", "oue4", "subset6", "blh4", "olh4", "hr16"}


@dataclass
class _PairEvaluation:
    result: object = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.result is not None


def _pair_search(randomizer, n: int, delta: float) -> _PairEvaluation:
    try:
        # beyond n = 100 a coarser grid (each mixed dataset costs an FFT of ~2 (n + 1)^2
        # cells; at n = 100 the best datasets were corners or next to them)
        coarse = {} if n <= 100 else {"grid": 2, "refine": 3}
        return _PairEvaluation(pair_search.pair_search_epsilon(randomizer, n, delta, **coarse))
    except ParameterError as error:
        return _PairEvaluation(error=str(error))


def _exact_fft(randomizer, n: int, delta: float) -> _PairEvaluation:
    try:
        return _PairEvaluation(optimal.exact_lower_epsilon(randomizer, n, delta,
                                                           engine_method="fft"))
    except ParameterError as error:
        return _PairEvaluation(error=str(error))


#: krr-relabel (protocols/bounds/numerical/krr_relabel.py, k-RR with k >= 4): the catalogue
#: declares it for n <= 40 (2-3 CPU s); at the grid's n = 100 it is called directly (about 100
#: CPU s), by ``relabel``, where the ratio is above 1.01; recorded in relabel.jsonl.
RELABEL = "krr-relabel"
RELABEL_N = 100
RELABEL_CPU_CAP = 400.0


def _relabel(randomizer, n: int, delta: float) -> _PairEvaluation:
    from shufflesim.protocols.bounds.numerical.krr_relabel import krr_relabel_epsilon
    try:
        return _PairEvaluation(krr_relabel_epsilon(randomizer, n, delta, limit=RELABEL_N))
    except ParameterError as error:
        return _PairEvaluation(error=str(error))


def _done_keys(path: Path, *fields: str) -> set[tuple]:
    """The keys (the records' ``fields``) already written to a resumable JSONL file."""
    if not path.exists():
        return set()
    return {tuple(r[f] for f in fields) for r in map(json.loads, path.read_text().splitlines())}


def run_relabel(path: Path, grid: Path) -> None:
    """krr-relabel at every k-RR (k >= 4) point of the grid with n = RELABEL_N whose ratio is
    above 1.01 (resumable JSONL next to the grid's file)."""
    done = _done_keys(path, "randomizer", "epsilon0", "n", "delta")
    worker = CappedWorker()
    with path.open("a") as out:
        for key, recs in sorted(load(grid).items()):
            label, eps0, n, delta = key
            params = dict(CONFIGS_BY_LABEL[label][1])
            if (CONFIGS_BY_LABEL[label][0] != "krr" or params.get("domain_size", 0) < 4
                    or n != RELABEL_N or key in done):
                continue
            ua, _ = best(recs, "upper", True)
            la, _ = best(recs, "lower", True)
            if ua is None or not la or ua / la <= 1.01:
                continue
            rec = {"randomizer": label, "epsilon0": eps0, "n": n, "delta": delta,
                   "method": RELABEL, "kind": "upper"}
            rec.update(worker.run(("krr", params, eps0, n, delta, RELABEL),
                                  cpu_cap=RELABEL_CPU_CAP, wall_cap=4 * RELABEL_CPU_CAP))
            rec["load"] = os.getloadavg()[0]
            out.write(json.dumps(rec) + "\n")
            out.flush()


def run_pairs(path: Path) -> None:
    """The lower side's evidence at every grid point with n in PAIR_N, under the caps
    (resumable JSONL): the pair search for every configuration it applies to (categorical
    input, finite output), and exact-lower through the engine's FFT (EXACT_FFT) for the
    continuous ones."""
    done = _done_keys(path, "randomizer", "epsilon0", "n", "delta", "method")
    worker = CappedWorker()
    with path.open("a") as out:
        for eps0, n, delta in POINTS:  # the grid's order, so its rows get their evidence
            if n not in PAIR_N:
                continue
            # the continuous ones first (their FFT value moves the ratio), then the pair
            # search where the ratio is above 1.01 (PAIR_CONFIGS)
            for label, name, params in sorted(CONFIGS, key=lambda c: c[0] not in CONTINUOUS):
                categorical = pair_search.applies(make_randomizer(name, epsilon0=eps0, **params))
                method = PAIR if categorical else EXACT_FFT
                if (label, eps0, n, delta, method) in done or label not in (
                        PAIR_CONFIGS if categorical else CONTINUOUS):
                    continue
                rec = {"randomizer": label, "epsilon0": eps0, "n": n, "delta": delta,
                       "method": method, "kind": "lower"}
                rec.update(worker.run((name, params, eps0, n, delta, method)))
                rec["load"] = os.getloadavg()[0]
                out.write(json.dumps(rec) + "\n")
                out.flush()


#: The bounds issue 31 added in session 11 (and 004 Lemma 5.8's, cheap), timed at n = 1e3,
#: 1e6 and 1e8 for the closing note (brr-exact's times are session 10's, krr-exact's t31k's).
TIMED = (("laplace_binary", "exact-lower"), ("laplace_binary", EXACT_FFT), ("oue4", PAIR),
         ("laplace", "blanket_bennett_laplace"), ("laplace", "blanket_hoeffding_laplace"))
TIMED_N = (1000, 10**6, 10**8)


def run_times(path: Path) -> None:
    """Each TIMED bound at n in TIMED_N, eps0 in (1, 4), delta = 1e-8, under the caps
    (resumable JSONL: value or refusal, wall and CPU seconds, load average)."""
    configs = {c[0]: c for c in CONFIGS}
    done = _done_keys(path, "randomizer", "method", "epsilon0", "n")
    worker = CappedWorker()
    with path.open("a") as out:
        for n in TIMED_N:
            for eps0 in (1.0, 4.0):
                for label, method in TIMED:
                    if (label, method, eps0, n) in done:
                        continue
                    _, name, params = configs[label]
                    rec = {"randomizer": label, "epsilon0": eps0, "n": n, "delta": 1e-8,
                           "method": method}
                    rec.update(worker.run((name, params, eps0, n, 1e-8, method),
                                          cpu_cap=120.0, wall_cap=1200.0))
                    rec["load"] = os.getloadavg()[0]
                    out.write(json.dumps(rec) + "\n")
                    out.flush()


def render_times(path: Path) -> str:
    lines = ["| bound | randomizer | eps0 | n | value | wall s | CPU s | load |",
             "|---|---|---|---|---|---|---|---|"]
    for r in map(json.loads, path.read_text().splitlines()):
        value = _fmt(r["epsilon"]) if r["epsilon"] is not None else r["error"][:70]
        wall = "-" if r["wall"] is None else f"{r['wall']:.2f}"
        cpu = "-" if r["cpu"] is None else f"{r['cpu']:.2f}"
        lines.append(f"| {r['method']} | {r['randomizer']} | {r['epsilon0']:g} | "
                     f"{r['n']:.0e} | {value} | {wall} | {cpu} | {r['load']:.1f} |")
    return "\n".join(lines) + "\n"


def _serve(conn) -> None:
    while True:
        task = conn.recv()
        if task is None:
            return
        try:
            conn.send(_evaluate(task))
        except Exception as error:  # noqa: BLE001 - a crashing bound is recorded, not fatal
            conn.send({"epsilon": None, "epsilon_error": None, "status": None, "note": "",
                       "error": f"crashed: {type(error).__name__}: {str(error)[:150]}",
                       "wall": None, "cpu": None})


class CappedWorker:
    """A forked worker process evaluating one bound at a time under CPU_CAP / WALL_CAP; a
    worker over a cap is killed and replaced (its CPU time read from /proc)."""

    def __init__(self):
        self.process = None

    def _start(self):
        import multiprocessing as mp
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()

    def _cpu(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def run(self, task: tuple, cpu_cap: float = CPU_CAP, wall_cap: float = WALL_CAP) -> dict:
        if self.process is None or not self.process.is_alive():
            self._start()
        cpu0, wall0 = self._cpu(), time.perf_counter()
        self.conn.send(task)
        while not self.conn.poll(1.0):
            cpu, wall = self._cpu() - cpu0, time.perf_counter() - wall0
            if cpu > cpu_cap or wall > wall_cap or not self.process.is_alive():
                self.process.kill()
                self.process.join()
                self.process = None
                why = "worker died" if cpu <= cpu_cap and wall <= wall_cap else (
                    f"capped: over {cpu_cap:g} CPU s or {wall_cap:g} wall s")
                return {"epsilon": None, "epsilon_error": None, "status": None, "note": "",
                        "error": why, "wall": wall, "cpu": cpu}
        return self.conn.recv()


def _capped_before(records: list[dict], label: str, eps0: float, n: int, delta: float,
                   method: str) -> int | None:
    """The smallest n at which ``method`` hit a cap at (label, eps0), at a smaller n or at this
    n with another delta (the cost of these methods grows with n and hardly depends on delta)."""
    hits = [r["n"] for r in records if r["randomizer"] == label and r["epsilon0"] == eps0
            and r["method"] == method and r["error"].startswith("capped")
            and (r["n"] < n or (r["n"] == n and r["delta"] != delta))]
    return min(hits) if hits else None


def shards(path: Path) -> list[Path]:
    """The grid's file and its shards (``grid2.jsonl`` next to ``grid.jsonl``, written by a
    second process that runs the points in another order): read together, each written by
    one process."""
    base = path.stem.rstrip("0123456789")
    return [path] + sorted(p for p in path.parent.glob(f"{base}*{path.suffix}")
                           if p != path)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for file in shards(path) if file.exists()
            for line in file.read_text().splitlines()]


def run(path: Path, randomizers: set[str] | None = None) -> None:
    """Every applicable (non-personalized) bound at every grid point, each under the caps,
    appended to ``path`` (JSONL) as it finishes; what is already there is skipped."""
    worker = CappedWorker()
    with path.open("a") as out:
        for eps0, n, delta in POINTS:
            for label, name, params in CONFIGS:
                if randomizers and label not in randomizers:
                    continue
                # read again each time: another process may be filling a shard
                records = _records(path)
                done = {(r["randomizer"], r["epsilon0"], r["n"], r["delta"], r["method"])
                        for r in records}
                randomizer = make_randomizer(name, epsilon0=eps0, **params)
                specs = [s for s in cat.all_bounds()
                         if s.scope != "personalized" and s.applies_to(randomizer)]
                for spec in specs:
                    key = (label, eps0, n, delta, spec.name)
                    if key in done:
                        continue
                    rec = {"randomizer": label, "epsilon0": eps0, "n": n, "delta": delta,
                           "method": spec.name, "kind": spec.kind.value}
                    capped = _capped_before(records, label, eps0, n, delta, spec.name)
                    if capped is not None:
                        rec.update({"epsilon": None, "epsilon_error": None, "status": None,
                                    "note": "", "wall": 0.0, "cpu": 0.0,
                                    "error": f"capped: not run (capped at n = {capped:.0e})"})
                    else:
                        rec.update(worker.run((name, params, eps0, n, delta, spec.name)))
                    rec["load"] = os.getloadavg()[0]
                    records.append(rec)
                    out.write(json.dumps(rec) + "\n")
                    out.flush()


def load(path: Path) -> dict[tuple, dict[str, dict]]:
    """Records by point and method: the grid's file, plus the lower-side evidence (pair search,
    exact-lower through the FFT) of pairs.jsonl and times.jsonl next to it, at the grid's
    points."""
    points: dict[tuple, dict] = {}
    for r in _records(path):
        key = (r["randomizer"], r["epsilon0"], r["n"], r["delta"])
        points.setdefault(key, {})[r["method"]] = r
    # the lower side's evidence (PAIR, EXACT_FFT) and krr-relabel at n = 100 (RELABEL)
    for extra in ("pairs.jsonl", "times.jsonl", "relabel.jsonl"):
        file = path.with_name(extra)
        if not file.exists():
            continue
        for r in map(json.loads, file.read_text().splitlines()):
            key = (r["randomizer"], r["epsilon0"], r["n"], r["delta"])
            if key in points and r["method"] in (PAIR, EXACT_FFT, RELABEL) \
                    and r["epsilon"] is not None:
                kind = "upper" if r["method"] == RELABEL else "lower"
                points[key][r["method"]] = dict(r, kind=kind, status=r.get("status"))
    return points


def best(records: dict[str, dict], kind: str, new: bool) -> tuple[float | None, str]:
    """The best proven value of ``kind`` and its method (``new``: include the NEW bounds)."""
    pick = min if kind == "upper" else max
    rows = [(r["epsilon"], m) for m, r in records.items()
            if r["kind"] == kind and r["status"] == "proven" and r["epsilon"] is not None
            and (new or (m not in NEW and (r["randomizer"], m) not in NEW_FOR))]
    if not rows:
        return None, ""
    return pick(rows)


#: What the small-n truth (every dataset pair, docs/tightness.md's truth table and issue 31's
#: other lane) showed about the side of the gap, per configuration.
TRUTH_SIDE = {
    "rappor4": "n = 4: optimal-blanket 1.26x the truth, the truth = exact-lower",
    "oue4": "n = 4: optimal-blanket 1.18x the truth, the truth = exact-lower",
    "subset6": "n = 3: optimal-blanket 1.03x the truth, the truth = exact-lower",
    "blh4": "n = 4: optimal-blanket 1.35x (eps0 = 1) / 1.04x (eps0 = 4) the truth = exact-lower",
    "olh4": "n = 4: optimal-blanket 1.35x (eps0 = 1) / 1.04x (eps0 = 4) the truth = exact-lower",
    "krr16": "10-RR, n = 5-6: optimal-blanket 1.01-1.04x the truth = exact-lower (t31k)",
    "hr16": "hr d = 4, n = 5: optimal-blanket 1.03-1.24x the truth = exact-lower (d = 16: "
            "beyond the truth's reach)",
    "summation4": "not reached (output space too large for the truth)",
}

#: The codes of the "why" column (docs/tightness.md prints the legend).
LEGEND = {
    "T": "the small-n truth shows the upper side (blanket decomposition) loose",
    "P=": "the dataset-pair search (mixed others) did not move the lower side",
    "P+": "the dataset-pair search moved the lower side",
    "A": "optimal-blanket is approximate (worst pair of [0, 1] not proven): the best proven "
         "upper is a concentration bound (004 Lemma 5.8) or a generic one",
    "L": "the lower bound's own bracket is wide (likelihood-ratio levels merged into a few "
         "bins): the lower side can move by up to the factor shown",
    "M": "metric randomizer: no decomposition, generic upper vs one metric pair",
    "F": "exact-lower through the engine's FFT (unmerged likelihood-ratio levels) is the best "
         "lower bound",
    "C": "a method hit its per-evaluation cap",
    "O": "open side: a continuous output (no small-n truth, no exact curve), neither bound's "
         "bracket is wide and no cap was hit; the gap lies between the two methods named in "
         "the row, and which of them is loose is not known",
    "N": "no proven amplification: the best proven upper bound is eps0 itself (within 1e-6)",
    "R": "a bound resting on the stronger-clone reduction (001's variation-ratio; 000 Sec. 3.3 "
         "shows the reduction's post-processing wrong) is within 1.01 of the proven lower "
         "bound or below it (factor < 1: that unproven bound is contradicted there); the "
         "open gap is on the proven upper side",
}


def explain(records: dict[str, dict], label: str, upper_method: str, lower_method: str,
            ratio: float) -> str:
    """Why a ratio is above 1.01, as LEGEND codes with numbers, from what the records show."""
    if ratio <= 1.01:
        return ""
    codes = []
    eps0 = next(iter(records.values()))["epsilon0"]
    upper = min((r["epsilon"] for r in records.values() if r["kind"] == "upper"
                 and r["status"] == "proven" and r["epsilon"] is not None), default=None)
    if upper is not None and upper >= eps0 * (1 - 1e-6):
        codes.append("N")
    lower = records.get(lower_method, {}).get("epsilon")
    relying = [r["epsilon"] for r in records.values() if r["kind"] == "upper"
               and r["status"] == "relies-on-stronger-clone-reduction"
               and r["epsilon"] is not None]
    if lower and relying and min(relying) <= lower * 1.01:
        codes.append(f"R ({min(relying) / lower:.4g}x)")
    opt = records.get("optimal-blanket")
    if opt is not None and opt["epsilon"] is not None and opt["status"] != "proven":
        codes.append(f"A (optimal-blanket {opt['epsilon']:.4g})")
    if label in TRUTH_SIDE and upper_method == "optimal-blanket" \
            and not TRUTH_SIDE[label].startswith("not reached"):
        codes.append("T")
    low = records.get(lower_method, {})
    if low.get("epsilon") and low.get("epsilon_error"):
        reach = (low["epsilon"] + low["epsilon_error"]) / low["epsilon"]
        if reach > 1.01:
            codes.append(f"L ({reach:.3g}x)" if math.isfinite(reach) else "L (bracket open)")
    if lower_method == EXACT_FFT:
        codes.append("F")
    pair = records.get(PAIR)
    if pair is not None and pair["epsilon"] is not None:
        others = [r["epsilon"] for m, r in records.items() if m != PAIR
                  and r["kind"] == "lower" and r["status"] == "proven" and r["epsilon"]]
        moved = pair["epsilon"] > max(others, default=0.0) * (1 + 1e-6)
        codes.append("P+" if moved else "P=")
    if label in ("witch_hat", "laplace_metric") and "A" not in " ".join(codes):
        codes.append("M")
    if any(r["error"].startswith("capped") for r in records.values()):
        codes.append("C")
    return ", ".join(codes) or "O"


def zero_lower(upper: float | None, lower: float | None) -> str:
    """The explanation of a point whose best proven lower bound is 0 (no ratio exists)."""
    if lower is None or lower != 0.0 or upper is None:
        return ""
    if upper == 0.0:
        return "closed at eps = 0 (delta alone covers the pair)"
    return ("Z: the lower pairs' total variation is below delta, so they show no eps > 0; "
            "the upper side is not known to be tight")


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.5g}"


def render(path: Path) -> str:
    points = load(path)
    lines = ["| randomizer | eps0 | n | delta | best upper (before) | best lower (before) | "
             "ratio before | best upper (after) | best lower (after) | ratio after | why > 1.01 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {c[0]: i for i, c in enumerate(CONFIGS)}
    for key in sorted(points, key=lambda k: (order.get(k[0], 99), k[1], k[2], -k[3])):
        recs = points[key]
        ub, ub_m = best(recs, "upper", False)
        lb, lb_m = best(recs, "lower", False)
        ua, ua_m = best(recs, "upper", True)
        la, la_m = best(recs, "lower", True)
        before = ub / lb if ub is not None and lb else None
        after = ua / la if ua is not None and la else None
        if la is None:
            why = "no proven lower bound (" + ", ".join(
                f"{m}: {r['error'][:50]}" for m, r in recs.items()
                if r["kind"] == "lower" and r["epsilon"] is None) + ")"
        elif after is None:
            why = zero_lower(ua, la)
        else:
            why = explain(recs, key[0], ua_m, la_m, after)
        lines.append(
            f"| {key[0]} | {key[1]:g} | {key[2]:.0e} | {key[3]:.0e} | {_fmt(ub)} ({ub_m}) | "
            f"{_fmt(lb)} ({lb_m}) | {_fmt(before)} | {_fmt(ua)} ({ua_m}) | {_fmt(la)} ({la_m}) "
            f"| {_fmt(after)} | {why} |")
    return "\n".join(lines) + "\n"


def summary(path: Path) -> str:
    """Per randomizer: points, worst ratio before / after, and points above 1.01."""
    points = load(path)
    rows = {}
    for key, recs in points.items():
        ua, _ = best(recs, "upper", True)
        la, _ = best(recs, "lower", True)
        ub, _ = best(recs, "upper", False)
        lb, _ = best(recs, "lower", False)
        r = rows.setdefault(key[0], [0, -math.inf, -math.inf, 0])
        r[0] += 1
        if ub is not None and lb:
            r[1] = max(r[1], ub / lb)
        if ua is not None and la:
            r[2] = max(r[2], ua / la)
            r[3] += ua / la > 1.01
    lines = ["| randomizer | points | worst ratio before | worst ratio after | points > 1.01 |",
             "|---|---|---|---|---|"]
    for label, (count, before, after, above) in rows.items():
        shown = ["-" if not math.isfinite(x) else f"{x:.4g}" for x in (before, after)]
        lines.append(f"| {label} | {count} | {shown[0]} | {shown[1]} | {above} |")
    return "\n".join(lines) + "\n"


# -- the truth at small n (issue 31's other lane: protocols/bounds/numerical/small_n_truth.py) --
TRUTH_EPSILON0 = (1.0, 4.0)
TRUTH_DELTA = (1e-2, 1e-4)
#: largest (multisets x histograms x ordered pairs) a truth point may cost here
TRUTH_WORK = 1_000_000


def _truth_n(randomizer) -> int | None:
    from shufflesim.protocols.bounds.numerical.small_n_truth import merged_matrix
    try:
        inputs, cells = merged_matrix(randomizer).shape
    except Exception:          # noqa: BLE001 - not categorical: no truth here
        return None
    for n in (40, 24, 12, 8, 6, 5, 4, 3, 2):
        work = (math.comb(n - 1 + inputs - 1, inputs - 1) * math.comb(n + cells - 1, cells - 1)
                * inputs * (inputs - 1))
        if work <= TRUTH_WORK:
            return n
    return None


def run_truth(path: Path) -> None:
    """Per categorical randomizer, at the largest n its truth affords: the truth's bracket and
    every applicable proven bound (JSONL, resumable)."""
    from shufflesim.protocols.bounds.numerical.small_n_truth import small_n_truth_epsilon
    done = _done_keys(path, "randomizer", "epsilon0", "delta")
    with path.open("a") as out:
        for eps0 in TRUTH_EPSILON0:
            for label, name, params in CONFIGS:
                randomizer = make_randomizer(name, epsilon0=eps0, **params)
                n = _truth_n(randomizer)
                for delta in TRUTH_DELTA:
                    if n is None or (label, eps0, delta) in done:
                        continue
                    wall, cpu = time.perf_counter(), time.process_time()
                    lo, hi = small_n_truth_epsilon(randomizer, n, delta)
                    rec = {"randomizer": label, "epsilon0": eps0, "n": n, "delta": delta,
                           "truth": [lo, hi], "truth_cpu": time.process_time() - cpu,
                           "truth_wall": time.perf_counter() - wall, "bounds": {}}
                    for spec in cat.all_bounds():
                        if spec.scope == "personalized" or not spec.applies_to(randomizer):
                            continue
                        ev = cat.evaluate(spec.name, randomizer, n, delta)
                        if ev.ok and ev.result.status.value == "proven":
                            rec["bounds"][spec.name] = [spec.kind.value, ev.result.epsilon]
                    out.write(json.dumps(rec) + "\n")
                    out.flush()


def render_truth(path: Path) -> str:
    lines = ["| randomizer | eps0 | n | delta | truth | best proven upper | upper / truth | "
             "best proven lower | truth / lower | loose side | best upper after / truth |",
             "|---" * 11 + "|"]
    for r in map(json.loads, path.read_text().splitlines()):
        lo, hi = r["truth"]
        # the bounds that existed before issue 31: which of their sides is loose
        ups = [(v, m) for m, (k, v) in r["bounds"].items() if k == "upper" and m not in NEW]
        lows = [(v, m) for m, (k, v) in r["bounds"].items() if k == "lower" and m not in NEW]
        new_up = min([v for m, (k, v) in r["bounds"].items() if k == "upper"], default=None)
        up, up_m = min(ups) if ups else (None, "")
        low, low_m = max(lows) if lows else (None, "")
        ru = up / hi if up is not None and hi > 0 else None
        rl = lo / low if low else None
        sides = [s for s, x in (("upper", ru), ("lower", rl)) if x is not None and x > 1.01]
        lines.append(
            f"| {r['randomizer']} | {r['epsilon0']:g} | {r['n']} | {r['delta']:.0e} | "
            f"[{lo:.5g}, {hi:.5g}] | {_fmt(up)} ({up_m}) | {_fmt(ru)} | {_fmt(low)} ({low_m}) | "
            f"{_fmt(rl)} | {', '.join(sides) or '-'} | "
            f"{_fmt(new_up / hi if new_up is not None and hi > 0 else None)} |")
    return "\n".join(lines) + "\n"


def coverage(path: Path) -> str:
    """Which grid points have records, and how many evaluations hit the cap."""
    points = load(path)
    seen = sorted({key[1:] for key in points}, key=lambda k: (k[1], k[0], -k[2]))
    capped = sum(r["error"].startswith("capped") for recs in points.values()
                 for r in recs.values())
    cpu = sum(r["cpu"] or 0.0 for recs in points.values() for r in recs.values())
    loads = [r["load"] for recs in points.values() for r in recs.values()]
    by_n: dict[int, list] = {}
    for eps0, n, delta in seen:
        by_n.setdefault(n, []).append(f"{eps0:g}/{delta:.0e}")
    lines = [f"Coverage of this run: {len(seen)} of {len(POINTS)} (eps0, n, delta) points "
             f"({len(points)} randomizer-points), {capped} evaluations capped, "
             f"{cpu:.0f} CPU s in all, load average {min(loads):.1f}-{max(loads):.1f} "
             "(a shared 2-core machine). Points reached (eps0/delta by n):",
             ""]
    lines += [f"- n = {n:.0e}: {', '.join(v)}" for n, v in sorted(by_n.items())]
    return "\n".join(lines) + "\n"


def fill(path: Path, doc: Path) -> None:
    """Write the summary and the table between the markers of ``doc`` (docs/tightness.md)."""
    text = doc.read_text()
    parts = [("coverage", coverage(path)), ("summary", summary(path)),
             ("table", render(path))]
    truth = path.with_name("truth.jsonl")
    if truth.exists():
        parts.append(("truth", render_truth(truth)))
    times = path.with_name("times.jsonl")
    if times.exists():
        parts.append(("times", render_times(times)))
    for name, body in parts:
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = f"{before}{start}\n{body}{end}{after}"
    doc.write_text(text)


if __name__ == "__main__":
    command, file = sys.argv[1], Path(sys.argv[2])
    if command == "run":             # run FILE [label,label,...]
        run(file, set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None)
    elif command == "times":         # times /work/notes/t31t-grid/times.jsonl
        run_times(file)
    elif command == "times-table":
        print(render_times(file), end="")
    elif command == "pairs":         # pairs /work/notes/t31t-grid/pairs.jsonl
        run_pairs(file)
    elif command == "relabel":       # relabel /work/notes/t31t-grid/relabel.jsonl GRID
        run_relabel(file, Path(sys.argv[3]))
    elif command == "truth":         # truth results/issue31/truth.jsonl
        run_truth(file)
    elif command == "summary":
        print(summary(file), end="")
    elif command == "docs":          # docs results/issue31/tightness.jsonl docs/tightness.md
        fill(file, Path(sys.argv[3]))
    else:
        print(render(file), end="")
