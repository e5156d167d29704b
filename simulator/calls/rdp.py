"""The ``rdp`` capability: Renyi DP curves eps(alpha) of the shuffled mechanism (002 Sec. 6.1),
for one or several groups of rounds, from ``shufflesim rdp``, ``shufflesim.rdp`` and a
scenario's ``[rdp]`` section.

Per round and order alpha, the Renyi divergence of the shuffled mechanism is bounded by that
of a dominating pair (the mechanism is a post-processing of it, and Renyi divergences satisfy
data processing): the 002 clone pair (``rdp-clone``, any eps0-LDP randomizer) or the 000 Thm 13
blanket pair (``rdp-blanket``, k-RR and binary RR), computed by protocols.accounting.rdp
(rounded up); each round's value is also at most eps0 (the shuffled round is eps0-DP). Rounds
add up (Mironov 2017, Prop. 1). With ``delta`` each row also gives the (eps, delta) that order
certifies (Canonne, Kamath, Steinke 2020, Prop. 12); the smallest over the orders is what the
composed methods ``rdp-blanket`` / ``rdp-clone`` of ``compose`` report over their own grid.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from shufflesim.protocols.errors import ParameterError, require, require_probability_open
from shufflesim.simulator.calls.bounds import silent
from shufflesim.simulator.calls.compose import build_part
from shufflesim.simulator.lazy import lazy_module

np = lazy_module("numpy")
pairs = lazy_module("shufflesim.protocols.accounting.pairs")
rdp = lazy_module("shufflesim.protocols.accounting.rdp")

METHODS = ("rdp-blanket", "rdp-clone")
REFERENCES = {"rdp-blanket": "000 Thm 13 pair + 002 Sec. 6.1 + Mironov 2017 Prop. 1",
              "rdp-clone": "002 Thm 3.2 clone pair + 002 Sec. 6.1 + Mironov 2017 Prop. 1"}
#: The orders of the table by default (each gives a valid guarantee).
DEFAULT_ORDERS = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0, 64.0)


def _model(method: str, randomizer):
    if method == "rdp-clone":
        return pairs.clone_model(float(randomizer.epsilon0))
    return pairs.blanket_model(randomizer)


def check_orders(orders) -> tuple[float, ...]:
    orders = DEFAULT_ORDERS if orders is None else (
        (orders,) if isinstance(orders, int | float) else tuple(orders))
    require(len(orders) > 0, "orders", list(orders), "needs at least one order")
    for a in orders:
        require(isinstance(a, int | float) and not isinstance(a, bool) and 1 < a < math.inf,
                "orders", a, "every Renyi order must be a finite number > 1")
    return tuple(float(a) for a in orders)


def validate(parts: Sequence, *, orders=None, methods=None, delta: float | None = None):
    """(rounds as (randomizer, n, repeat), orders, methods), every input checked."""
    require(isinstance(parts, Sequence) and not isinstance(parts, str | bytes) and len(parts) > 0,
            "rounds", parts, "needs at least one round (a table of randomizer, epsilon0, n, ...)")
    built = []
    for i, part in enumerate(parts):
        randomizer, n, repeat, probability = build_part(part, f"rounds[{i}]")
        require(n is not None, f"rounds[{i}].n", n, "is required")
        require(probability is None, f"rounds[{i}].probability", probability,
                "belongs to compose's mode 'parallel'")
        built.append((randomizer, n, repeat))
    if isinstance(methods, str):
        methods = [methods]
    names = list(dict.fromkeys(methods)) if methods else list(METHODS)
    for name in names:
        require(name in METHODS, "method", name, f"choose one of {list(METHODS)}")
    if delta is not None:
        require_probability_open("delta", delta)
    return built, check_orders(orders), names


def curve(parts: Sequence, *, orders=None, methods=None, delta: float | None = None,
          progress=None) -> list[dict]:
    """One record per (method, order): ``method``, ``order``, ``rdp_epsilon`` (the composed
    Renyi DP of every round at that order, rounded up), ``rounds`` (total), ``parts``,
    ``delta`` and ``epsilon`` (the (eps, delta)-DP that order certifies; None without
    delta), ``reference``, ``seconds``, ``error`` (a method that does not apply: its reason,
    no numbers)."""
    built, alphas, names = validate(parts, orders=orders, methods=methods, delta=delta)
    a = np.asarray(alphas)
    total = sum(repeat for _, _, repeat in built)
    records = []
    report = progress or silent("rdp", "methods")
    with report, report.heartbeat():
        for name in report.steps(names):
            started = time.perf_counter()
            error, rho = "", None
            try:
                rho = np.zeros(a.size)
                for randomizer, n, repeat in built:
                    one = rdp.renyi_curve(_model(name, randomizer), n, orders=a)
                    rho += repeat * np.minimum(one, float(randomizer.epsilon0))
            except ParameterError as failure:
                error, rho = str(failure), None
            seconds = time.perf_counter() - started
            for i, alpha in enumerate(alphas):
                epsilon = None
                if rho is not None and delta is not None:
                    epsilon = float(max(rho[i] + (math.log(1 / delta) + (alpha - 1)
                                                  * math.log1p(-1 / alpha) - math.log(alpha))
                                        / (alpha - 1), 0.0))
                records.append({"method": name, "order": alpha,
                                "rdp_epsilon": None if rho is None else float(rho[i]),
                                "rounds": total, "parts": len(built), "delta": delta,
                                "epsilon": epsilon, "reference": REFERENCES[name],
                                "seconds": seconds, "error": error})
    return records
