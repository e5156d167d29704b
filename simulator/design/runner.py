"""``design``: from a lifetime privacy target and a utility goal to a ranked table of candidate
deployments (issue 30). The one function the CLI command ``shufflesim design`` and the public
``shufflesim.design(...)`` both call.

For every candidate (simulator.design.candidates) and every n: the certified per-round eps0 or
blanket-message count (simulator.design.certify, proven bounds composed over T rounds), the
predicted error from the exact variance (simulator.design.predict), bits and messages per user
per round and the server's work per round. Candidates that meet the target are ranked by the
chosen metric (rank 1 = smallest predicted error); the others follow without a rank, with the
reason. When none meets the target, :func:`design` raises a ParameterError naming the closest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pandas as pd

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.simulator.design import certify, multi
from shufflesim.simulator.design.candidates import (
    TASKS,
    Candidate,
    bits_per_message,
    candidates,
    decode_operations,
    messages_per_user,
)
from shufflesim.simulator.design.predict import METRICS, predict, scale_of
from shufflesim.simulator.design.records import DesignRow
from shufflesim.simulator.design.scenario import scenario_text, simulate

EPSILON0_MIN = 1e-3
EPSILON0_MAX = 20.0
#: The fields of a design record, in order (simulator.design.records.DesignRow).
FIELDS = DesignRow.columns()
#: How many of the best candidates ``validate`` simulates (per n).
VALIDATE_TOP = 3


def _check_inputs(task, n, target_epsilon, delta, rounds, domain_size, interval, metric,
                  max_bits, max_messages, min_epsilon0, max_epsilon0, bound):
    require(task in TASKS, "task", task, f"must be one of {list(TASKS)}")
    ns = list(n) if isinstance(n, Sequence) and not isinstance(n, str) else [n]
    require(len(ns) >= 1, "n", n, "needs at least one number of users")
    for value in ns:
        require(isinstance(value, int) and not isinstance(value, bool) and value >= 2, "n",
                value, "must be an integer >= 2")
    require(isinstance(target_epsilon, (int, float)) and 0 < target_epsilon < math.inf,
            "target_epsilon", target_epsilon, "must be a finite number > 0")
    require(isinstance(delta, (int, float)) and 0 < delta < 1, "delta", delta,
            "must lie in the open interval (0, 1)")
    require(isinstance(rounds, int) and not isinstance(rounds, bool) and rounds >= 1,
            "rounds", rounds, "must be an integer >= 1")
    require(metric in METRICS, "metric", metric, f"must be one of {list(METRICS)}")
    if task == "frequency":
        require(interval is None, "interval", interval,
                "applies to the mean and sum tasks; frequency takes domain_size")
        require(isinstance(domain_size, int) and not isinstance(domain_size, bool)
                and domain_size >= 2, "domain_size", domain_size,
                "must be an integer >= 2 (the frequency task needs it)")
    else:
        require(domain_size is None, "domain_size", domain_size,
                f"applies to the frequency task; {task} takes interval")
        require(interval is not None and len(interval) == 2
                and all(isinstance(v, (int, float)) and math.isfinite(v) for v in interval)
                and interval[0] < interval[1], "interval", interval,
                f"must be two finite numbers LOW < HIGH (the {task} task needs it)")
    for name, value in (("max_bits", max_bits), ("max_messages", max_messages)):
        require(value is None or (isinstance(value, int) and value >= 1), name, value,
                "must be an integer >= 1")
    low = EPSILON0_MIN if min_epsilon0 is None else min_epsilon0
    high = EPSILON0_MAX if max_epsilon0 is None else max_epsilon0
    require(isinstance(low, (int, float)) and 0 < low, "min_epsilon0", min_epsilon0,
            "must be a number > 0")
    require(isinstance(high, (int, float)) and low < high <= 50, "max_epsilon0", max_epsilon0,
            f"must be a number in ({low:g}, 50] (above min_epsilon0)")
    names = certify.bound_names(rounds)
    require(bound is None or bound in names, "bound", bound,
            f"must be one of {names} (proven, composing over {rounds} round(s))")
    return ns, float(low), float(high)


def _row(candidate: Candidate, cert, n, task, target, delta, rounds, domain_size, interval,
         data) -> dict:
    row = dict.fromkeys(FIELDS)
    row.update(n=n, randomizer=candidate.randomizer, kind=candidate.kind,
               parameters=json.dumps(candidate.parameters, sort_keys=True),
               bound=cert.bound, epsilon=cert.epsilon, target_epsilon=float(target),
               delta=float(delta), rounds=rounds, meets_target=cert.ok, note=cert.note,
               reason=cert.reason, seconds=cert.seconds, epsilon0=cert.epsilon0,
               blanket_messages=cert.blanket_messages)
    if not cert.ok:
        return row
    randomizer = candidate.build(cert.epsilon0, cert.blanket_messages)
    messages = messages_per_user(randomizer)
    row.update(bits=messages * bits_per_message(randomizer), messages=messages,
               server_operations=float(n * messages * decode_operations(
                   candidate.randomizer, domain_size)))
    for metric, value in predict(randomizer, task, n, domain_size=domain_size,
                                 interval=interval, data=data).items():
        row[f"predicted_{metric}"] = value
    return row


def _within_limits(row: dict, max_bits, max_messages) -> str:
    if max_bits is not None and row["bits"] > max_bits:
        return f"{row['bits']} bits per user > max_bits = {max_bits}"
    if max_messages is not None and row["messages"] > max_messages:
        return f"{row['messages']} messages per user > max_messages = {max_messages}"
    return ""


def _blanket_limit(candidate: Candidate, domain_size, max_bits, max_messages) -> int:
    limit = multi.BLANKET_MAX
    if max_messages is not None:
        limit = min(limit, max_messages - 1)
    if max_bits is not None:
        per = bits_per_message(candidate.build(1.0, 1))
        limit = min(limit, max_bits // per - 1)
    return limit


def design(task: str, n, target_epsilon: float, delta: float, rounds: int = 1, *,
           domain_size: int | None = None, interval: tuple[float, float] | None = None,
           metric: str = "l2", max_bits: int | None = None, max_messages: int | None = None,
           min_epsilon0: float | None = None, max_epsilon0: float | None = None,
           bound: str | None = None, data: dict | None = None, binary: bool = False,
           only: Sequence[str] | None = None, thorough: bool = False, unproven: bool = False,
           validate: int = 0,
           validate_top: int = VALIDATE_TOP, seed: int = 30) -> pd.DataFrame:
    """The design table (module docstring) as a DataFrame with the columns :data:`FIELDS`.

    ``data``: the data assumption of the prediction ({"distribution": "uniform"} or
    {"distribution": "zipf", "exponent": s} for frequencies); ``binary``: the mean/sum inputs
    take only the interval's two ends (adds balcer for the sum); ``only``: restrict to these
    randomizer names; ``thorough``: try the specific single-round bound for every candidate
    (simulator.design.certify.single_methods; slow); ``unproven``: fill the separate,
    labelled columns ``epsilon0_not_proven`` / ``bound_not_proven`` (never used for the rank or
    the scenario; simulator.design.certify.not_proven); ``validate``: simulate that many
    repetitions of the ``validate_top`` best candidates per n (simulator.design.scenario) and
    fill the ``empirical_*`` columns (95% intervals). Raises ParameterError (one line) for a
    bad input, for limits no candidate can satisfy, and when no candidate meets the target
    (naming the closest).
    """
    ns, low, high = _check_inputs(task, n, target_epsilon, delta, rounds, domain_size,
                                  interval, metric, max_bits, max_messages, min_epsilon0,
                                  max_epsilon0, bound)
    require(isinstance(validate, int) and not isinstance(validate, bool) and validate >= 0
            and validate != 1, "validate", validate, "must be 0 or an integer >= 2")
    if interval is not None:
        interval = (float(interval[0]), float(interval[1]))
    pool = candidates(task, domain_size, binary=binary)
    if only:
        pool = [c for c in pool if c.randomizer in set(only)]
        require(bool(pool), "only", list(only), "names no candidate of this task")
    rows = []
    for size in ns:
        for candidate in pool:
            if candidate.kind == "multi":
                if bound not in (None, multi.MULTI_BOUND):
                    continue
                limit = _blanket_limit(candidate, domain_size, max_bits, max_messages)
                if limit < 1:
                    continue
                cert = multi.certify_multi(candidate, size, rounds, target_epsilon, delta,
                                             limit)
            else:
                if bound == multi.MULTI_BOUND:
                    continue
                cert = certify.certify_single(candidate, size, rounds, target_epsilon, delta,
                                              low, high, bound, thorough)
            row = _row(candidate, cert, size, task, target_epsilon, delta, rounds,
                       domain_size, interval, data)
            if unproven and candidate.kind == "single":
                row["epsilon0_not_proven"], row["bound_not_proven"] = certify.not_proven(
                    candidate, size, rounds, target_epsilon, delta, low, high)
            if cert.ok:
                why = _within_limits(row, max_bits, max_messages)
                if why:
                    continue
            rows.append(row)
    if not rows:
        raise ParameterError("max_bits" if max_bits is not None else "max_messages",
                             max_bits if max_bits is not None else max_messages,
                             "no candidate fits this limit")
    frame = _rank(pd.DataFrame(rows, columns=list(FIELDS)), metric, target_epsilon)
    if validate:
        context = {"task": task, "domain_size": domain_size, "interval": interval, "data": data}
        for index in frame.index[frame["rank"].fillna(0).between(1, validate_top)]:
            _validate_row(frame, index, context, validate, seed)
    return frame


def row_scenario(row: dict, task: str, *, domain_size=None, interval=None, data=None,
                 repetitions: int = 100, seed: int = 30) -> tuple[str, float]:
    """(scenario TOML text of a ranked row, the scale of its recorded errors)."""
    randomizer = Candidate(row["randomizer"], json.loads(row["parameters"]), row["kind"]).build(
        row["epsilon0"], row["blanket_messages"])
    scale = 1.0 if task == "frequency" else scale_of(randomizer, interval)
    text = scenario_text(row, randomizer, task, domain_size=domain_size, interval=interval,
                         data=data, repetitions=repetitions, seed=seed)
    return text, scale


def _validate_row(frame: pd.DataFrame, index, context: dict, repetitions: int, seed: int
                  ) -> None:
    row = frame.loc[index].to_dict()
    text, scale = row_scenario(row, repetitions=repetitions, seed=seed, **context)
    found = simulate(text, context["task"], scale)
    frame.loc[index, "validated_repetitions"] = repetitions
    for metric, (value, low, high) in found.items():
        frame.loc[index, f"empirical_{metric}"] = value
        frame.loc[index, f"empirical_{metric}_low"] = low
        frame.loc[index, f"empirical_{metric}_high"] = high


def _rank(frame: pd.DataFrame, metric: str, target: float) -> pd.DataFrame:
    met = frame[frame.meets_target.astype(bool)]
    if met.empty:
        closest = frame.sort_values("epsilon", na_position="last").iloc[0]
        reach = ("" if pd.isna(closest.epsilon)
                 else f": eps = {closest.epsilon:.4g} at its most private setting")
        raise ParameterError("target_epsilon", target,
                             f"no candidate meets it; the closest is {closest.randomizer} "
                             f"{closest.parameters}{reach}")
    key = f"predicted_{metric}"
    met = met.sort_values(["n", key, "bits"], kind="stable").copy()
    met["rank"] = met.groupby("n").cumcount() + 1
    rest = frame[~frame.meets_target.astype(bool)]
    out = pd.concat([met, rest], ignore_index=True)
    out["rank"] = out["rank"].astype("Int64")
    return out


def curves(options: dict, factors: Sequence[float]) -> pd.DataFrame:
    """The met rows of :func:`design` at target_epsilon x each factor (targets no candidate
    meets are skipped): the figure's curves. ``options``: design's keyword arguments."""
    frames = []
    for factor in factors:
        try:
            frame = design(**{**options, "target_epsilon": options["target_epsilon"] * factor,
                              "validate": 0})
        except ParameterError:
            continue
        frames.append(frame[frame.meets_target.astype(bool)])
    return pd.concat(frames, ignore_index=True)
