"""Privacy accounting of a whole shuffled DP-SGD run (issue 19).

The run (simulator.learning): every epoch the ``n`` clients are randomly permuted and go through
the steps in that order, each client once per epoch; a client's report is the output of an
(eps_i, delta0)-LDP Gaussian or an eps_i-LDP Duchi randomizer applied to its clipped gradient
at the current parameters (an *adaptive* local randomizer: it depends on the earlier outputs).
Every bound below is an upper bound on the central (eps, delta) of the released sequence of
parameters after ``epochs`` passes (rounded to the conservative side of its own numerics):

* ``fmt21_pass`` (002 Prop. 5.3 via Thm 3.8, and Thm 3.1 for pure randomizers): one pass over
  the ``n`` shuffled clients at eps0 = the largest budget
  (:func:`~shufflesim.protocols.bounds.closed_form.fmt21.fmt21_approx_dp`; None with the
  reason when the theorem's regime excludes the setting, e.g. when ``2 n delta0 >= delta``).
* ``clone_epochs``: 002 Thm 3.2's clone pair of each pass (valid for adaptive eps-LDP
  randomizers, 002 Thm 3.2 / Prop. 5.3) composed over the passes with privacy loss
  distributions (protocols.accounting ``fmt21-clone``). For the Gaussian randomizer the pure
  part uses 002 Lemma 3.7: N(g, s^2 I) on the ball of radius C is *deletion* (eps_d, delta0)-DP
  against the reference N(0, s^2 I) with eps_d the Gaussian eps at sensitivity C, so there is a
  replacement 2 eps_d-DP randomizer within total variation delta0 of it (2 eps_d <= eps0 since the
  Gaussian eps is convex in the sensitivity; tests/test_learning_accounting.py checks it).
  Replacing all ``N = n * epochs`` reports costs at most ``N delta0`` in total variation on
  either dataset, so (eps, delta_in)-DP of the pure run gives (eps, delta_in + (1 + e^eps) N
  delta0) for the real one; ``delta_in`` is solved for (None when ``2 N delta0 >= delta``).
* ``clone_steps``: the same composition seen per step: each step shuffles only its
  ``clients_per_step`` reports, and a client takes part in one step per epoch (conditioning on
  the random assignment of clients to steps only helps the adversary), so ``epochs`` rounds of
  ``clients_per_step`` users. None with one client per step (nothing to hide among).
* ``gspa_epochs``: 003 Thm 2 mu-GDP with the clients' actual budgets (and delta0 as the local
  delta), composed as sqrt(epochs) mu (003 Sec. "Application": Algorithm 3 is approximately
  sqrt(T) mu-GDP). *Approximate* (003 drops a Berry-Esseen term and relies on the
  stronger-clone reduction, see protocols.bounds.closed_form.gdp); reported, not certified.
* ``local``: no amplification at all, the lifetime eps of one client from its own reports:
  Gaussian reports compose exactly into one Gaussian mechanism, mu_i = sqrt(epochs) Delta /
  sigma_i (Dong, Roth and Su 2022: Gaussian DP composes as sqrt of the sum of squares),
  converted at delta with the exact mu-GDP curve; Duchi reports: epochs x eps_i (pure DP).
* every central bound above is capped at ``local_max`` (the released output is a
  post-processing of the reports, and only the differing client's reports change);
* per-user lifetime eps: user i's loss is bounded both by its ``local`` value and by the
  shuffled bound ``clone_epochs`` (computed at the largest budget, so valid for everyone):
  ``min(local_i, clone_epochs)``; reported as the median and the maximum over the clients.

Example-level privacy (003's unit: sigma calibrated to one example's sensitivity 2C/m). The
shuffle bounds need every *other* client's randomizer to be close to the target's on arbitrary
inputs (002 Thm 3.2 writes R(x_j) as a mixture containing R(x_1^0) and R(x_1^1); 003 Thm 2
likewise), i.e. the client-level LDP parameters: the same noise at sensitivity 2C, whose eps at
delta0 is about m times the example-level budget. ``fmt21_pass``, ``clone_*`` and ``gspa_epochs``
therefore use the client-level eps_i (``client_sensitivity``); a client-level guarantee covers
the change of one example. ``local`` uses the example-level sensitivity.

Client-mean clipping (003 Algorithm 3 line 12 as printed; protocols.learning.clipping): the
client clips its mean gradient, so one example can move the report's mean by up to 2C, not 2C/m.
The noise is still calibrated to 2C/m (003 line 7), but the sensitivity that holds for one
example is 2C (``unit_sensitivity``): every column is computed at it (``local`` with
mu = sqrt(epochs) 2C / sigma_i; the shuffle bounds already use 2C), so each stays a valid upper
bound, and the note says so. They are not nulled: a true (if large) bound is more useful than
none, and the nominal eps_i is what the run does *not* deliver.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.accounting.compose import compose_rounds
from shufflesim.protocols.accounting.rounds import Round
from shufflesim.protocols.bounds.closed_form.fmt21 import fmt21_approx_dp, fmt21_closed_form
from shufflesim.protocols.bounds.closed_form.gdp import gdp_epsilon, gdp_mu
from shufflesim.protocols.errors import ParameterError, require, require_int_at_least
from shufflesim.protocols.learning.gdp_vector import gdp_epsilons

#: Budgets are rounded *up* to this grid before composing (so that runs share compositions; a
#: larger eps0 only weakens the bound, the conservative side).
EPSILON_GRID = 1e-3
#: The columns :func:`account` fills, in order.
BOUND_COLUMNS = ("fmt21_pass", "clone_epochs", "clone_steps", "gspa_epochs", "local_max",
                 "user_median", "user_max")


@dataclass(frozen=True)
class PureLDP:
    """Any eps0-LDP local randomizer (the clone pair of 002 Thm 3.2 depends on eps0 alone)."""

    epsilon0: float


def _ceil_grid(value: float) -> float:
    return math.ceil(value / EPSILON_GRID - 1e-9) * EPSILON_GRID


@functools.lru_cache(maxsize=4096)
def clone_composed(epsilon0: float, n: int, rounds: int, delta: float) -> float:
    """002 Thm 3.2 clone pair of ``n`` shuffled eps0-LDP users, composed over ``rounds`` rounds
    (protocols.accounting ``fmt21-clone``); capped at rounds x eps0 (pure composition)."""
    result = compose_rounds([Round(PureLDP(float(epsilon0)), int(n), int(rounds))], delta,
                            "fmt21-clone")
    return min(float(result.epsilon), rounds * epsilon0)


def clone_with_tv(epsilon0: float, n: int, rounds: int, delta: float,
                  tv: float) -> tuple[float | None, str]:
    """(eps, note): the composed clone bound at total ``delta`` when the real run is within total
    variation ``tv`` of a pure one (module docstring). Finds eps with
    eps >= clone(delta - (1 + e^eps) tv) by fixed-point steps; every returned eps is checked."""
    if tv <= 0:
        return clone_composed(epsilon0, n, rounds, delta), ""
    if 2.0 * tv >= delta:
        return None, (f"total variation to the pure run {tv:.3g} (reports x delta0) leaves no "
                      f"room in delta = {delta:g}")
    eps = clone_composed(epsilon0, n, rounds, delta - 2.0 * tv)
    for _ in range(60):
        d_in = delta - (1.0 + math.exp(eps)) * tv
        if d_in > 0:
            value = clone_composed(epsilon0, n, rounds, d_in)
            if value <= eps:
                return eps, f"delta_in = {d_in:.4g} for the pure run"
            eps = value
        else:
            break
        eps = eps * 1.02 + 1e-6
    return None, f"no eps found with (1 + e^eps) x {tv:.3g} < delta = {delta:g}"


def gaussian_local_epsilon(sensitivity: float, sigma, rounds, delta: float) -> np.ndarray:
    """Exact lifetime eps at ``delta`` of ``rounds`` Gaussian releases N(g, sigma^2 I) with L2
    sensitivity ``sensitivity``: one Gaussian mechanism with mu = sqrt(rounds) Delta / sigma.
    ``rounds`` may be an array: the result then has shape ``rounds.shape + sigma.shape`` (one
    vectorized search for every epoch and client, issue 32)."""
    sigma = np.asarray(sigma, dtype=float)
    unique, inverse = np.unique(sigma, return_inverse=True)
    rounds = np.asarray(rounds, dtype=float)
    mu = np.sqrt(rounds)[..., None] * sensitivity / unique
    values, _ = gdp_epsilons(mu, delta)
    return values[..., inverse.ravel()].reshape(rounds.shape + sigma.shape)


def deletion_pure_epsilon(sensitivity: float, sigma: float, delta0: float) -> float:
    """2 eps_d: the replacement eps of 002 Lemma 3.7's pure randomizer for N(g, sigma^2 I) on a
    ball of diameter ``sensitivity`` (deletion eps_d at sensitivity Delta / 2 against N(0, .))."""
    return 2.0 * gdp_epsilon(0.5 * sensitivity / sigma, delta0).value


@dataclass(frozen=True)
class RunPrivacy:
    """What the accounting needs to know about a run."""

    randomizer: str                 # "gaussian", "duchi" or "none"
    epsilons: np.ndarray            # the clients' budgets (n,)
    n_clients: int
    clients_per_step: int
    delta: float                    # central delta of every bound
    delta0: float = 0.0             # Gaussian: the local delta of the calibration
    sigma: np.ndarray | None = None  # Gaussian: each client's noise std
    sensitivity: float = 0.0        # Gaussian: L2 sensitivity the sigma was calibrated for
    #: Gaussian: the sensitivity between two arbitrary clients' inputs (2C); 0: ``sensitivity``
    client_sensitivity: float = 0.0
    #: Gaussian: the sensitivity that holds for the privacy unit when it exceeds the calibrated
    #: one (example-level sigma with client-mean clipping, 003 Alg. 3 as printed: 2C); 0:
    #: ``sensitivity``
    unit_sensitivity: float = 0.0

    def __post_init__(self):
        require(0 < self.delta < 1, "delta", self.delta, "must lie in (0, 1)")
        require_int_at_least("n_clients", self.n_clients, 1)
        require_int_at_least("clients_per_step", self.clients_per_step, 1)


def account(run: RunPrivacy, epochs: int) -> tuple[dict[str, float | None], str]:
    """The bounds of :data:`BOUND_COLUMNS` after ``epochs`` passes (None where a bound does not
    apply) and a note naming what was left out and why."""
    return account_epochs(run, [epochs])[0]


def account_epochs(run: RunPrivacy, epochs) -> list[tuple[dict[str, float | None], str]]:
    """:func:`account` for every number of passes in ``epochs``; what does not depend on the
    number of passes is computed once, and the mu-GDP conversions of all of them in one
    vectorized search (protocols.learning.gdp_vector; issue 32)."""
    epochs = [int(e) if isinstance(e, int | np.integer) and not isinstance(e, bool) else e
              for e in epochs]
    for e in epochs:
        require_int_at_least("epochs", e, 0)
    if run.randomizer == "none":
        return [(dict.fromkeys(BOUND_COLUMNS), "no randomizer: no privacy") for _ in epochs]
    positive = sorted({e for e in epochs if e > 0})
    if not positive:
        return [(dict.fromkeys(BOUND_COLUMNS, 0.0), "") for _ in epochs]
    common: list[str] = []
    eps = np.asarray(run.epsilons, dtype=float)
    n, k, delta = run.n_clients, run.clients_per_step, run.delta
    gaussian = run.randomizer == "gaussian"
    client_sensitivity = run.client_sensitivity or run.sensitivity
    if gaussian and client_sensitivity > run.sensitivity:
        # client-level LDP parameters of the reports (module docstring): eps at delta0
        unique, inverse = np.unique(np.asarray(run.sigma, dtype=float), return_inverse=True)
        client, _ = gdp_epsilons(client_sensitivity / unique, run.delta0)
        eps = np.maximum(eps, client[inverse.ravel()].reshape(eps.shape))
    eps_max = float(eps.max())
    unit_sensitivity = run.sensitivity
    if gaussian and run.unit_sensitivity > run.sensitivity:
        unit_sensitivity = run.unit_sensitivity
        common.append(f"unit sensitivity: clip_point = 'client-mean' lets one example move the "
                      f"clipped client mean by up to {unit_sensitivity:g} (2C), not the "
                      f"{run.sensitivity:.4g} (2C/m) the noise was calibrated to: every bound "
                      f"at {unit_sensitivity:g}")

    # 002 Prop. 5.3 / Thm 3.8 (Thm 3.1 for pure randomizers): one pass.
    fmt21 = None
    try:
        if n < 2:
            raise ParameterError("n", n, "needs at least 2 clients")
        one = (fmt21_approx_dp(eps_max, n, delta, run.delta0) if gaussian and run.delta0 > 0
               else fmt21_closed_form(eps_max, n, delta))
        fmt21 = float(one.epsilon)
    except ParameterError as error:
        common.append(f"fmt21_pass: {error}")

    # The pure eps0 of the clone pair, and the total variation to the pure run.
    if gaussian:
        sigma_min = float(np.min(run.sigma))
        pure = deletion_pure_epsilon(client_sensitivity, sigma_min, run.delta0)
    else:
        pure = eps_max
    pure = _ceil_grid(pure)

    # 003 Thm 2 (approximate), composed as sqrt(epochs) mu: every epoch in one search.
    gspa: dict[int, float] = {}
    if n >= 2:
        try:
            mu = gdp_mu(eps, np.full(eps.shape, run.delta0) if gaussian else None)
            values, _ = gdp_epsilons(np.sqrt(np.asarray(positive, float)) * mu, delta)
            gspa = dict(zip(positive, values.tolist(), strict=True))
        except ParameterError as error:
            common.append(f"gspa_epochs: {error}")

    # No amplification: each client's own reports, every epoch in one search.
    if gaussian:
        local_all = gaussian_local_epsilon(unit_sensitivity, run.sigma, positive, delta)
    else:
        local_all = np.asarray(positive, float)[:, None] * eps[None, :]
    local_of = dict(zip(positive, local_all, strict=True))

    results = {}
    for e in positive:
        out: dict[str, float | None] = dict.fromkeys(BOUND_COLUMNS)
        notes = list(common)
        out["fmt21_pass"] = fmt21
        tv = n * e * run.delta0 if gaussian else 0.0
        if n >= 2:
            clone, note = clone_with_tv(pure, n, e, delta, tv)
            out["clone_epochs"] = clone
            if clone is None:
                notes.append(f"clone_epochs: {note}")
        if k >= 2:
            value, note = clone_with_tv(pure, k, e, delta, tv)
            out["clone_steps"] = value
            if value is None:
                notes.append(f"clone_steps: {note}")
        if e in gspa:
            out["gspa_epochs"] = gspa[e]
        local = local_of[e]
        out["local_max"] = float(local.max())
        # Every central bound is at most the most exposed client's own loss (the output is a
        # post-processing of the reports, and only that client's reports change).
        for name in ("clone_epochs", "clone_steps", "gspa_epochs"):
            if out[name] is not None and out[name] > out["local_max"]:
                out[name] = out["local_max"]
                notes.append(f"{name}: capped at local_max")
        clone = out["clone_epochs"]
        users = local if clone is None else np.minimum(local, clone)
        out["user_median"] = float(np.quantile(users, 0.5, method="higher"))
        out["user_max"] = float(users.max())
        results[e] = (out, _ordered_notes(notes))
    return [results[e] if e > 0 else (dict.fromkeys(BOUND_COLUMNS, 0.0), "") for e in epochs]


#: The order of the notes (as the per-epoch computation wrote them before issue 32).
_NOTE_ORDER = ("fmt21_pass:", "clone_epochs:", "clone_steps:", "gspa_epochs:")


def _ordered_notes(notes: list[str]) -> str:
    def rank(note: str) -> tuple[int, int]:
        capped = note.endswith("capped at local_max")
        head = next((i for i, p in enumerate(_NOTE_ORDER) if note.startswith(p)), 0)
        return (1 if capped else 0, head)
    return "; ".join(sorted(notes, key=rank))
