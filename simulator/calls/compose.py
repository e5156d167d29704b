"""The ``compose`` capability: privacy of composed shuffled mechanisms (000 Sec. 4), from the
command line (``shufflesim compose``), Python (``shufflesim.compose``) and a scenario
(``[compose]``), with the same parts, the same validation and the same records.

A composition is a list of *parts*, each a dict ``{"randomizer": NAME, "epsilon0": E,
<randomizer parameters>, ...}`` (or ``{"randomizer": <built randomizer>, ...}``), and a mode:

* ``rounds`` (default): sequential composition of heterogeneous rounds, one part per group of
  identical rounds with its own ``n`` (users shuffled together) and ``repeat`` (how many such
  rounds, default 1); the composed methods of protocols.accounting.compose (privacy loss
  distributions of dominating pairs, Renyi DP, basic and advanced composition).
* ``joint``: every user runs each part's randomizer on its own coordinate in one round
  (000 Sec. 4.5, Thm 9; every Hamming pattern of changed coordinates, 000 Sec. 8).
* ``parallel``: every user runs part i with probability ``probability`` (000 Sec. 4.6,
  Thm 11); the parts share one input domain.
* ``subsampled``: one part, Poisson subsampling with participation probability ``rate``
  before shuffling (000 Sec. 1.1, Example 4.4).

The three one-round modes take ``n`` for the whole round and report the optimal blanket upper
bound and the exact lower bound (000 Thm 13 and 14) of the composed randomizer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from shufflesim.protocols.errors import ParameterError, require, require_int_at_least
from shufflesim.simulator.calls.bounds import check_against_proven_lower, silent
from shufflesim.simulator.calls.setting import build_randomizer, check_setting
from shufflesim.simulator.execution.progress import ProgressReport
from shufflesim.simulator.lazy import lazy_module

accounting = lazy_module("shufflesim.protocols.accounting.compose")
optimal = lazy_module("shufflesim.protocols.bounds.numerical.optimal")
randomizers = lazy_module("shufflesim.protocols.randomizers")

MODES = ("rounds", "joint", "parallel", "subsampled")
#: The one-round modes' methods: (upper, lower) functions of protocols.bounds.numerical.optimal.
ONE_ROUND_METHODS = ("optimal-blanket", "exact-lower")
#: Keys of a part that are not randomizer parameters.
PART_KEYS = ("randomizer", "epsilon0", "n", "repeat", "probability")


def build_part(part: Mapping, field: str):
    """(randomizer, n, repeat, probability) of one part; errors name ``field.<key>``."""
    if not isinstance(part, Mapping):
        raise ParameterError(field, part, "expected a table of randomizer, epsilon0, its "
                             "parameters, and n / repeat / probability")
    values = dict(part)
    name = values.pop("randomizer", None)
    n, repeat = values.pop("n", None), values.pop("repeat", 1)
    probability = values.pop("probability", None)
    epsilon0 = values.pop("epsilon0", None)
    try:
        if isinstance(name, randomizers.Randomizer):
            require(epsilon0 is None and not values, "randomizer", name,
                    "a built randomizer takes no epsilon0 or parameters beside it")
            randomizer = name
        else:
            require(isinstance(name, str), "randomizer", name,
                    "must be a registered randomizer name (or a built randomizer)")
            require(epsilon0 is not None, "epsilon0", epsilon0, "is required")
            randomizer = build_randomizer(name, epsilon0, values, values.pop("delta0", None))
        if n is not None:
            require_int_at_least("n", n, 2)
        require_int_at_least("repeat", repeat, 1)
    except ParameterError as error:
        key = error.field.removeprefix("randomizer.") if error.field.startswith(
            "randomizer.") and error.field != "randomizer.name" else error.field
        key = "randomizer" if key == "randomizer.name" else key
        raise ParameterError(f"{field}.{key}", error.value, error.requirement) from None
    return randomizer, n, repeat, probability


def _record(mode: str, method: str, parts: int, delta: float, rounds: int) -> dict:
    return {"mode": mode, "method": method, "kind": None, "epsilon": None,
            "epsilon_error": None, "delta": float(delta), "rounds": rounds, "parts": parts,
            "status": "", "statuses": [], "reference": "", "seconds": 0.0, "note": "",
            "error": ""}


def _check(parts: Sequence, delta: float, mode: str, n, rate) -> None:
    require(mode in MODES, "mode", mode, f"choose one of {list(MODES)}")
    require(isinstance(parts, Sequence) and not isinstance(parts, str | bytes) and len(parts) > 0,
            "rounds" if mode == "rounds" else "components", parts,
            "needs at least one part (a table of randomizer, epsilon0, ...)")
    check_setting(n, delta)
    if mode == "rounds":
        require(n is None, "n", n, "in mode 'rounds' every round gives its own n")
        require(rate is None, "rate", rate, "belongs to mode 'subsampled'")
        return
    require(n is not None, "n", n, f"is required in mode {mode!r} (users shuffled together)")
    if mode == "subsampled":
        require(len(parts) == 1, "components", len(parts), "mode 'subsampled' takes one part")
        require(rate is not None, "rate", rate, "is required in mode 'subsampled'")
    else:
        require(rate is None, "rate", rate, "belongs to mode 'subsampled'")


def _one_round(mode: str, built: list, n: int, delta: float, rate, method: str):
    randomizers_ = [r for r, _, _, _ in built]
    upper = method == "optimal-blanket"
    if mode == "joint":
        fn = optimal.optimal_blanket_epsilon_joint if upper else optimal.exact_lower_epsilon_joint
        return fn(randomizers_, n, delta)
    if mode == "parallel":
        probabilities = [p for _, _, _, p in built]
        require(all(p is not None for p in probabilities), "probability", probabilities,
                "every part of mode 'parallel' needs its probability")
        fn = (optimal.optimal_blanket_epsilon_parallel if upper
              else optimal.exact_lower_epsilon_parallel)
        return fn(randomizers_, probabilities, n, delta)
    fn = (optimal.optimal_blanket_epsilon_subsampled if upper
          else optimal.exact_lower_epsilon_subsampled)
    return fn(randomizers_[0], rate, n, delta)


def validate(parts: Sequence, delta: float, *, mode: str = "rounds", methods=None,
             n: int | None = None, rate: float | None = None):
    """Every check of :func:`compose`, without computing: (built parts, method names, rounds
    (mode ``rounds``: the protocols.accounting Rounds; else None), total rounds).
    ParameterError names the field (``rounds[1].epsilon0``, ``method``, ``n``, ...)."""
    _check(parts, delta, mode, n, rate)
    field = "rounds" if mode == "rounds" else "components"
    built = [build_part(p, f"{field}[{i}]") for i, p in enumerate(parts)]
    if isinstance(methods, str):
        methods = [methods]
    known = (accounting.composed_method_names() if mode == "rounds"
             else list(ONE_ROUND_METHODS))
    names = list(dict.fromkeys(methods)) if methods else known
    for name in names:
        require(name in known, "method", name, f"unknown method for mode {mode!r}; choose one "
                f"of {known}")
    if mode != "rounds":
        for i, (_, part_n, repeat, probability) in enumerate(built):
            require(part_n is None and repeat == 1, f"components[{i}]", parts[i],
                    "one-round modes take n for the whole round and no repeat")
            require(mode == "parallel" or probability is None, f"components[{i}].probability",
                    probability, "belongs to mode 'parallel'")
        return built, names, None, 1
    for i, (_, part_n, _, probability) in enumerate(built):
        require(part_n is not None, f"rounds[{i}].n", part_n,
                "is required (users shuffled together in these rounds)")
        require(probability is None, f"rounds[{i}].probability", probability,
                "belongs to mode 'parallel'")
    rounds = [accounting.Round(r, part_n, repeat) for r, part_n, repeat, _ in built]
    return built, names, rounds, accounting.total_rounds(rounds)


def compose(parts: Sequence, delta: float, *, mode: str = "rounds", methods=None,
            n: int | None = None, rate: float | None = None,
            progress: ProgressReport | None = None) -> list[dict]:
    """One record per method: ``mode``, ``method``, ``kind``, ``epsilon`` (conservative side),
    ``delta``, ``rounds`` (total rounds), ``parts``, ``status``, ``reference``, ``seconds``,
    ``note`` and ``error`` (a method that cannot compose these parts gives its reason there
    instead of a number), and the proven-lower-bound check of ``shufflesim bound``."""
    built, names, rounds, total = validate(parts, delta, mode=mode, methods=methods, n=n,
                                           rate=rate)
    records = []
    report = progress or silent("composing", "methods")
    with report, report.heartbeat():
        for name in report.steps(names):
            record = _record(mode, name, len(parts), delta, total)
            started = time.perf_counter()
            try:
                if mode == "rounds":
                    spec = accounting.get_composed_method(name)
                    result = accounting.compose_rounds(rounds, delta, name)
                    record.update(kind=result.kind.value, epsilon=float(result.epsilon),
                                  status=result.status.value, statuses=[result.status.value],
                                  reference=result.reference or spec.reference,
                                  note=result.note)
                else:
                    result = _one_round(mode, built, n, delta, rate, name)
                    record.update(kind=result.kind.value, epsilon=float(result.epsilon),
                                  epsilon_error=float(result.epsilon_error),
                                  status=result.status.value, statuses=[result.status.value],
                                  reference=result.reference, note=result.note)
            except ParameterError as error:
                if mode == "rounds":
                    spec = accounting.get_composed_method(name)
                    record.update(kind=spec.kind.value, status=spec.status.value,
                                  statuses=[spec.status.value], reference=spec.reference)
                record["error"] = str(error)
            record["seconds"] = time.perf_counter() - started
            records.append(record)
    return check_against_proven_lower(records)
