"""``--trials auto`` (the default of ``shufflesim audit``): trials per world chosen per level
before the run, large enough that the planted faults of issue 29 are caught with default
flags, and capped so that the run is expected to finish in about :data:`BUDGET_SECONDS`.

**The targets** (:data:`TARGETS`, trials per world; per input at the randomizer level). They
come from measured detections, not from a per-claim computation:

* pipeline, 3 x 10^6: a krr client at 1.1 x its eps0 (claim eps0 = 2, d = 4, n = 20,
  delta = 1e-6) is caught by ``implementation-shuffled`` at 3 x 10^6 rounds (eps_lb 2.071 >
  optimal-blanket 1.999, adjusted p 0.001) and not at 10^6 (1.915). From the exact law of the
  worst triple's histogram, the best tail event chosen for free certifies at most 1.96-2.05 at
  10^6 rounds and 2.09-2.12 at 3 x 10^6 (session 10's pipeline notes): below 3 x 10^6 no
  attack can be sure to catch it;
* shuffle, 10^6 for an implementation under test (the same 1.1 x client: 2.150 / 2.103 >
  1.999 at 10^6, seeds 0 and 1), 10^7 for the project's own sampler (bulk sufficient
  statistics: a second or two);
* randomizer, 2 x 10^5 per input (a Gaussian client with sigma 20 % too small: caught by
  ``implementation-profile`` and the fit at 10^5; a Laplace client leaking its input in 1 of
  1000 reports: caught by the atom rows at 2 x 10^4).

**The cap.** The expected seconds are (trials x per-trial work x :data:`SECONDS`), with rates a
few times *slower* than measured on one core of the loaded 2-core machine (about 0.06 us per
implementation report at the shuffle level and 0.12 us per pipeline message, krr at n = 20),
so the cap errs on the side of fewer trials; the target is lowered (to a 1-2-3-5 step, at
least :data:`FLOOR`) until the estimate fits. The choice and its reason are returned for the
output's first line. A run whose floor cannot finish within ``--max-seconds`` is refused up front by
simulator.calls.cost (one line naming ``--trials`` and the remedy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Trials per world (per input at the randomizer level) with default flags (module docstring).
TARGETS = {"randomizer": 200_000, "shuffle": 1_000_000, "shuffle-sampler": 10_000_000,
           "pipeline": 3_000_000}
#: Expected seconds an automatic choice may take (the cap).
BUDGET_SECONDS = 120.0
#: Fewest trials an automatic choice takes.
FLOOR = 10_000
#: Seconds per unit of work (upper estimates, module docstring): one report of the user's code
#: at the randomizer level, one at the shuffle level (the full audit and the two-stage one
#: beside it each draw n), one pipeline message, one cell of a sampler's histogram.
SECONDS = {"randomizer": 1e-6, "shuffle": 2e-7, "pipeline": 3e-7, "shuffle-sampler": 5e-8}
#: The word that asks for the automatic choice.
AUTO = "auto"


@dataclass(frozen=True)
class TrialsChoice:
    trials: int
    reason: str


def steps_below(value: float) -> int:
    """The largest 1-2-3-5 x 10^k not above ``value`` (at least 1)."""
    if value < 1:
        return 1
    k = 10 ** math.floor(math.log10(value))
    return max(s * k for s in (1, 2, 3, 5) if s * k <= value)


def choose(level: str, n: int | None, implementation: bool, outputs: int | None = None,
           message_size: int = 1, messages_per_client: int = 1) -> TrialsChoice:
    """The automatic trials of one audit (module docstring)."""
    level = str(level)
    users = float(n or 1)
    if level == "randomizer":
        key, per_trial = "randomizer", 2 * SECONDS["randomizer"] * message_size
    elif level == "pipeline":
        key = "pipeline"
        per_trial = 2 * users * messages_per_client * message_size * SECONDS["pipeline"]
    elif implementation:
        key = "shuffle"
        per_trial = 2 * 2 * users * messages_per_client * message_size * SECONDS["shuffle"]
    else:
        key, per_trial = "shuffle-sampler", 2 * max(outputs or 1, 1) * SECONDS["shuffle-sampler"]
    target = TARGETS[key]
    affordable = BUDGET_SECONDS / per_trial
    if affordable >= target:
        return TrialsChoice(target, f"auto: the {level} level's default")
    trials = max(FLOOR, steps_below(affordable))
    return TrialsChoice(trials, f"auto: the {level} level's default {target:.0e} capped to "
                        f"about {BUDGET_SECONDS:g} s of work; give --trials for more power")


def parse(value) -> int | str:
    """``value`` as trials (a positive integer; ``3e6`` is read as 3000000) or :data:`AUTO`;
    else a ValueError naming what is expected."""
    if value is None or (isinstance(value, str) and value.strip().lower() == AUTO):
        return AUTO
    if isinstance(value, bool):
        raise ValueError("expected a positive integer or auto")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("expected a positive integer or auto") from None
    if not (math.isfinite(number) and number.is_integer() and number >= 1):
        raise ValueError("expected a positive integer or auto")
    return int(number)
