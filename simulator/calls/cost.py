"""Cost before work (issue 26; design section 8): every command estimates the time and the
memory of its work from its parameters before it starts, and refuses in one line what cannot
finish within the limits, naming the parameter and a remedy.

The estimates are *lower* estimates: each counts the elementary steps the work cannot avoid
(one user's report, one message through the pipeline, one trial's histogram) at a rate faster
than any machine this runs on (:data:`REPORT_SECONDS` and friends, a few times faster than
measured on a fast core). A refusal therefore never stops work that could finish in time; long
but feasible work runs, with its estimate in the progress line (``estimated >= 3 min``).

Limits (:class:`Limits`): ``max_seconds`` (default :data:`DEFAULT_MAX_SECONDS`, one day: work
estimated in days is refused) and ``max_memory`` (default: this machine's memory, or its
cgroup limit, divided between the workers: memory is checked per worker). The command line
sets them (:func:`configure`) with ``--max-seconds`` and ``--max-memory`` (``run`` and
``audit``); 0 switches a limit off.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from shufflesim.protocols.errors import shown
from shufflesim.simulator.batch import machine as this_machine
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.progress import format_duration
from shufflesim.simulator.lazy import lazy_module

#: user code's time limit, set from a scenario's [limits] (not needed by bound, calibrate)
usercode = lazy_module("shufflesim.simulator.usercode")
format_bytes = this_machine.format_bytes

#: Work estimated beyond this many seconds is refused by default (one day).
DEFAULT_MAX_SECONDS = 86_400.0
#: Seconds per user's report drawn by a vectorized randomizer (lower estimate; ~1e-8 measured).
REPORT_SECONDS = 2e-9
#: Seconds per message through the SimPy pipeline (lower estimate; ~2e-6 measured).
MESSAGE_SECONDS = 2e-7
#: Seconds per category of one trial's histogram (shuffle-level audit, lower estimate).
CELL_SECONDS = 1e-9
#: Seconds per sqrt(n) of the engine's exact lower bound for n users (the neighbouring triple
#: an audit attacks; the conditioning method's grid grows like sqrt(n); ~100 evaluations).
ENGINE_SECONDS = 1e-6


@dataclass(frozen=True)
class Limits:
    """The limits in force (module docstring); None: no limit / the machine's memory."""

    max_seconds: float | None = DEFAULT_MAX_SECONDS
    max_bytes: float | None = None


_limits = Limits()


_KEEP = object()
#: Where each limit in force was set: the flag, or the scenario key (for the refusal's line).
_source = {"seconds": "--max-seconds", "bytes": "--max-memory"}
#: Limits given on the command line (they win over the scenario's [limits]).
_explicit: set[str] = set()


def configure(max_seconds: float | None | object = _KEEP,
              max_bytes: float | None | object = _KEEP, *, explicit: bool = False,
              source: str | None = None) -> None:
    """Set the limits of this process (a limit not given is kept; None or 0: no limit).
    ``explicit``: given on the command line; ``source``: the scenario key that set it."""
    global _limits
    for name, value in (("seconds", max_seconds), ("bytes", max_bytes)):
        if value is not _KEEP:
            if explicit:
                _explicit.add(name)
            else:
                _explicit.discard(name)
            _source[name] = source or ("--max-seconds" if name == "seconds" else "--max-memory")
    seconds, size = _limits.max_seconds, _limits.max_bytes
    if max_seconds is not _KEEP:
        if max_seconds is not None and not (isinstance(max_seconds, (int, float))
                                            and 0 <= max_seconds < math.inf):
            raise UserError(f"--max-seconds = {shown(max_seconds)}: must be a number of "
                            "seconds >= 0 (0: no limit)")
        seconds = float(max_seconds) if max_seconds else None
    if max_bytes is not _KEEP:
        size = None if max_bytes is None else float(max_bytes)  # inf: no limit
    _limits = Limits(seconds, size)


def limits() -> Limits:
    return _limits


def apply_scenario_limits(scenario) -> None:
    """The scenario's ``[limits]`` (simulator/scenario/limits.py), for each limit the command
    line did not set."""
    section = next((p.settings.sections.get("limits") for p in scenario.points
                    if p.settings.sections.get("limits") is not None), None)
    if section is None:
        return
    if section.max_seconds is not None and "seconds" not in _explicit:
        configure(max_seconds=section.max_seconds or None, source="limits.max_seconds")
    if section.max_memory_mb is not None and "bytes" not in _explicit:
        configure(max_bytes=section.max_memory_mb * 2**20 or math.inf,
                  source="limits.max_memory_mb")
    if section.call_timeout is not None and not usercode.time_limit_explicit():
        usercode.set_time_limit(section.call_timeout)


#: a size: number, unit, optional "i" and "b" (compiled on first use, by re's own cache: a command
#: without --max-memory never compiles it)
_SIZE = r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)i?b?\s*$"


def parse_size(text: str) -> float:
    """``"4G"``, ``"512M"``, ``"1.5 GiB"``, ``"800"`` (MiB) -> bytes; a UserError naming
    ``--max-memory`` otherwise."""
    match = re.match(_SIZE, str(text), re.IGNORECASE)
    if match is None:
        raise UserError(f"--max-memory = {str(text)!r}: expected a size such as 4G, 512M or "
                        "800 (MiB); 0: no limit")
    scale = {"": 2**20, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[match[2].lower()]
    return float(match[1]) * scale


@dataclass(frozen=True)
class Cost:
    """The estimated work of a command: ``seconds`` and peak ``bytes`` per worker (lower
    estimates), the ``parameter`` that drives it with its ``value``, and a ``remedy``."""

    seconds: float
    bytes: float
    parameter: str
    value: object
    remedy: str

    def describe(self) -> str:
        """``estimated >= 3 min`` (for the progress line)."""
        return f"estimated >= {format_duration(self.seconds)}"


def worker_bytes(workers: int = 1) -> float | None:
    """The memory one worker may take: ``--max-memory``, else the machine's share per worker."""
    if _limits.max_bytes is not None:
        return None if math.isinf(_limits.max_bytes) else _limits.max_bytes
    machine = this_machine.machine_bytes()
    return None if machine is None else machine / max(1, workers)


def memory_per_worker(workers: int) -> tuple[float, str] | None:
    """(bytes one of ``workers`` units running at once may take, where that limit comes from),
    for the run's memory plan check (simulator/batch/memory.py); None: the plan's own check
    against the whole machine (one unit at a time)."""
    if _limits.max_bytes is None and workers <= 1:
        return None  # the plan's own check against the machine's memory
    allowed = worker_bytes(workers)
    if allowed is None:
        return None
    source = (_source["bytes"] if _limits.max_bytes is not None
              else f"this machine's memory shared by {workers} workers")
    return allowed, source


def check(cost: Cost, workers: int = 1) -> Cost:
    """Refuse ``cost`` beyond the limits (one line naming the parameter, the estimate, the limit
    and the remedy); return it otherwise."""
    allowed = worker_bytes(workers)
    if allowed is not None and cost.bytes > allowed:
        source = (_source["bytes"] if _limits.max_bytes is not None
                  else f"this machine's memory{' per worker' if workers > 1 else ''}")
        raise UserError(f"{cost.parameter} = {shown(cost.value)}: needs at least "
                        f"{format_bytes(cost.bytes)}, more than {format_bytes(allowed)} "
                        f"({source}); {cost.remedy}")
    if _limits.max_seconds is not None and cost.seconds > _limits.max_seconds:
        raise UserError(f"{cost.parameter} = {shown(cost.value)}: the work is estimated at "
                        f"{_long_duration(cost.seconds)} or more, beyond the limit of "
                        f"{_long_duration(_limits.max_seconds)} ({_source['seconds']}); "
                        f"{cost.remedy}")
    return cost


def _long_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds >= 2 * 86_400:
        days = seconds / 86_400
        return f"{days:.3g} days" if days < 1e6 else f"{days:.1e} days"
    return format_duration(seconds)


def dominant(factors: dict[str, float]) -> str:
    """The factor with the largest value (the parameter a refusal names)."""
    return max(factors, key=lambda key: factors[key])


# -- per command -----------------------------------------------------------------------------

def run_cost(scenario) -> Cost:
    """A scenario's work: per sweep point, repetitions x n reports (x rounds through the
    pipeline, or x trials x n for a pipeline- or shuffle-level audit)."""
    seconds = 0.0
    worst: tuple[float, dict[str, float]] = (-1.0, {})
    for point in scenario.points:
        settings = point.settings
        reps, n = float(settings.repetitions), float(settings.population.n)
        factors = {"repetitions": reps, "population.n": n}
        point_seconds = reps * n * REPORT_SECONDS
        pipeline = settings.sections.get("pipeline")
        rounds = getattr(getattr(pipeline, "config", pipeline), "rounds", None)
        if pipeline is not None and isinstance(rounds, int):
            factors["pipeline.rounds"] = float(rounds)
            point_seconds = reps * n * rounds * MESSAGE_SECONDS
        audit = settings.sections.get("audit")
        trials = getattr(audit, "trials", None)
        if audit is not None and isinstance(trials, int):
            factors["audit.trials"] = float(trials)
            level = str(getattr(getattr(audit, "level", None), "value", "shuffle"))
            per_trial = (n * MESSAGE_SECONDS if level == "pipeline"
                         else 2 * REPORT_SECONDS if level == "randomizer" else CELL_SECONDS)
            point_seconds += trials * per_trial
        learning = settings.sections.get("learning")
        if learning is not None and hasattr(learning, "epochs"):
            learned = learning_cost(learning)
            if learned.seconds > point_seconds:  # the training dominates: name its key
                factors = {learned.parameter: float(learned.value)}
            point_seconds += learned.seconds
        seconds += point_seconds
        if point_seconds > worst[0]:
            worst = (point_seconds, factors)
    factors = worst[1] or {"repetitions": 0.0}
    key = dominant(factors)
    value = int(factors[key]) if factors[key] < 2**63 else factors[key]
    if len(scenario.points) > 1 and seconds > 2 * worst[0]:
        remedy = f"lower {key} or use fewer sweep values ({len(scenario.points)} points)"
    else:
        remedy = f"lower {key}"
    return Cost(seconds, 0.0, key, value, remedy + ", or raise the limit")


def audit_cost(level: str, trials: int, n: int | None, outputs: int | None,
               implementation: bool) -> Cost:
    """``shufflesim audit``: trials per world; a trial costs one report (randomizer level), a
    histogram over the outputs (shuffle level; n reports with an implementation, which draws
    every user's report), or n messages (pipeline level)."""
    n_users = float(n or 1)
    if level == "randomizer":
        per_trial = 2 * REPORT_SECONDS
    elif level == "pipeline":
        per_trial = n_users * MESSAGE_SECONDS
    elif implementation:  # the full audit and the two-stage one beside it (two_stage_bulk.py)
        per_trial = 2 * n_users * REPORT_SECONDS
    else:
        per_trial = max(outputs or 1, 1) * CELL_SECONDS
    trial_seconds = trials * per_trial
    engine_seconds = 0.0 if level == "randomizer" else math.sqrt(n_users) * ENGINE_SECONDS
    key, value = "--trials", trials
    if engine_seconds > trial_seconds or (level != "randomizer" and n_users > trials
                                          and per_trial > 2 * REPORT_SECONDS):
        key, value = "--n", n
    return Cost(trial_seconds + engine_seconds, 0.0, key, value,
                f"lower {key}, or raise the limit")


# -- bounds over rounds, calibration, composition, design (issue 26, t26b) -------------------

#: Grid points a composed privacy loss distribution holds per round, at least: dp_accounting's
#: self-composition sizes its window from Chernoff bounds at a fixed set of orders, which grows
#: linearly in the rounds for many rounds (measured for krr, d 4, eps0 1, n 1000: 106 points per
#: round at T 1e3, 10.7 at 1e5, 5.2 at 1e6, 4.6 at 1e7, 12.4 asked at 1e12; krr d 100, eps0 0.1
#: to 4, n 1e3 to 1e5: 10.6 to 701 at T <= 1e5); one is a lower estimate.
PLD_POINTS_PER_ROUND = 1.0
#: Bytes per grid point of a composed distribution (one float64; the FFT needs more).
PLD_POINT_BYTES = 8.0
#: Seconds per grid point of a composition (lower estimate: each point is touched once).
PLD_POINT_SECONDS = 1e-9
#: Evaluations of the composed bound a calibration makes, at least (a bisection on eps0).
CALIBRATION_STEPS = 10
#: Seconds per training step of [learning] (a Python-level step; lower estimate, ~1e-4 measured)
#: and per multiply-add of its gradient.
STEP_SECONDS = 1e-6
FLOP_SECONDS = 1e-10


def rounds_cost(rounds: int, parameter: str = "--rounds", evaluations: int = 1,
                value: object = None) -> Cost:
    """Composing one round's privacy loss distribution over ``rounds`` rounds (``bound
    --rounds``, ``compose --round ...,repeat=``, ``design --rounds``): a window of at least
    :data:`PLD_POINTS_PER_ROUND` grid points per round, built ``evaluations`` times."""
    points = float(rounds) * PLD_POINTS_PER_ROUND if rounds > 1 else 0.0
    return Cost(points * PLD_POINT_SECONDS * max(1, evaluations), points * PLD_POINT_BYTES,
                parameter, rounds if value is None else value,
                f"lower {parameter} (or account for the rounds with basic or advanced "
                "composition), or raise the limit")


def calibrate_cost(rounds: int) -> Cost:
    """``calibrate --rounds T``: at least :data:`CALIBRATION_STEPS` evaluations of the T-round
    composed bound."""
    return rounds_cost(rounds, "--rounds", CALIBRATION_STEPS)


def compose_cost(parts: list[dict]) -> Cost:
    """``compose --round``: the rounds of all groups (``repeat`` each) composed together."""
    total = sum(int(p.get("repeat", 1)) for p in parts
                if isinstance(p.get("repeat", 1), int) and not isinstance(p.get("repeat"), bool))
    estimate = rounds_cost(total, "--round", value=f"repeat={total}" if total > 1 else total)
    return Cost(estimate.seconds, estimate.bytes, estimate.parameter, estimate.value,
                estimate.remedy.replace("lower --round", "lower the rounds' repeat"))


def design_cost(rounds: int, candidates: int = 1) -> Cost:
    """``design --rounds T``: each of ``candidates`` randomizers calibrated over T rounds."""
    return rounds_cost(rounds, "--rounds", CALIBRATION_STEPS * max(1, candidates))


def learning_cost(section) -> Cost:
    """``[learning]``: epochs x steps (at least one per epoch) x clients per step x examples per
    client x model size (at least its input dimension, pca_components when set)."""
    epochs = float(getattr(section, "epochs", 1))
    per_step = float(getattr(section, "clients_per_step", 1)) * float(
        getattr(section, "examples_per_client", 1))
    size = float(getattr(section, "pca_components", None) or 1)
    if getattr(section, "model", "softmax") == "mlp":
        size *= float(getattr(section, "hidden", 1))
    seconds = epochs * (STEP_SECONDS + per_step * size * FLOP_SECONDS)
    if per_step * size * FLOP_SECONDS > STEP_SECONDS and per_step > epochs:
        key = "learning.clients_per_step"
        value = getattr(section, "clients_per_step", 1)
    else:
        key, value = "learning.epochs", getattr(section, "epochs", 1)
    return Cost(seconds, 0.0, key, value, f"lower {key}, or raise the limit")
