"""Confidence limits for event probabilities and the epsilon lower bound built from them.

One-sided Clopper-Pearson limits (exact binomial limits, via the beta quantile function,
``scipy.stats.beta.ppf``): for k successes in t trials and error level alpha,

    lower(k, t, alpha) = Beta^{-1}(alpha; k, t - k + 1)      (0 when k = 0)
    upper(k, t, alpha) = Beta^{-1}(1 - alpha; k + 1, t - k)  (1 when k = t)

so that P[p < lower] <= alpha and P[p > upper] <= alpha for every true p. The quantile is
accurate to a few ulps; every limit is moved outward by a relative ``NUDGE`` so that it stays on
the conservative side of that error.

The attack bound (docs/architecture.md, "The auditor"; the hockey-stick divergence
characterisation of (eps, delta)-DP): for any event S and neighbouring inputs with output laws
P0, P1, P0(S) <= e^eps P1(S) + delta, hence

    eps >= eps_lb(S) = ln((P0(S) - delta) / P1(S)).

With P0_lo <= P0(S) and P1_hi >= P1(S) (each failing with probability at most its alpha, and S
chosen independently of the counts they are computed from), ln((P0_lo - delta) / P1_hi) is a
lower bound on eps with confidence at least 1 - alpha_0 - alpha_1 (union bound). When several
events, directions or attacks are combined, the error level is split between them
(:class:`ErrorBudget`), again by the union bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from shufflesim.protocols.errors import ParameterError, require

#: Relative outward move of every limit (beta.ppf is accurate to far better than this).
NUDGE = 1e-9


def _check_alpha(alpha) -> np.ndarray:
    alpha = np.asarray(alpha, dtype=float)
    if np.any(~(alpha > 0) | ~(alpha < 1)):
        raise ParameterError("alpha", alpha.tolist(), "must lie in the open interval (0, 1)")
    return alpha


def _check_counts(k, t) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(k, dtype=float)
    t = np.asarray(t, dtype=float)
    if np.any(t <= 0) or np.any(k < 0) or np.any(k > t) or np.any(~np.isfinite(k)):
        raise ParameterError("counts", (k.tolist(), t.tolist()),
                             "need 0 <= successes <= trials and trials > 0")
    return k, t


def clopper_pearson_lower(k, t, alpha) -> np.ndarray:
    """One-sided lower Clopper-Pearson limit at error level ``alpha`` (broadcast).

    ``k`` may be non-integer (the selection step predicts limits for scaled counts)."""
    k, t = _check_counts(k, t)
    alpha = _check_alpha(alpha)
    k, t, alpha = np.broadcast_arrays(k, t, alpha)
    out = np.zeros(k.shape)
    positive = k > 0
    if positive.any():
        kp, tp, ap = k[positive], t[positive], alpha[positive]
        out[positive] = stats.beta.ppf(ap, kp, tp - kp + 1.0) * (1.0 - NUDGE)
    return np.clip(out, 0.0, 1.0)


def clopper_pearson_upper(k, t, alpha) -> np.ndarray:
    """One-sided upper Clopper-Pearson limit at error level ``alpha`` (broadcast)."""
    k, t = _check_counts(k, t)
    alpha = _check_alpha(alpha)
    k, t, alpha = np.broadcast_arrays(k, t, alpha)
    out = np.ones(k.shape)
    below = k < t
    if below.any():
        kb, tb, ab = k[below], t[below], alpha[below]
        out[below] = stats.beta.ppf(1.0 - ab, kb + 1.0, tb - kb) * (1.0 + NUDGE)
    return np.clip(out, 0.0, 1.0)


def epsilon_from_limits(p0_lower, p1_upper, delta: float) -> np.ndarray:
    """ln((p0_lower - delta) / p1_upper), -inf where p0_lower <= delta (broadcast)."""
    p0 = np.asarray(p0_lower, dtype=float) - delta
    p1 = np.asarray(p1_upper, dtype=float)
    out = np.full(np.broadcast(p0, p1).shape, -np.inf)
    ok = np.broadcast_to(p0 > 0, out.shape) & np.broadcast_to(p1 > 0, out.shape)
    with np.errstate(divide="ignore"):
        values = np.log(np.broadcast_to(p0, out.shape)[ok]) - np.log(
            np.broadcast_to(p1, out.shape)[ok])
    out[ok] = values
    return out


def epsilon_lower_bound(k0, t0, k1, t1, delta: float, alpha0, alpha1) -> np.ndarray:
    """ln((P0_lo - delta) / P1_hi) from counts k0 of t0 trials (world 0) and k1 of t1 trials
    (world 1); valid with confidence >= 1 - alpha0 - alpha1 for an event fixed in advance."""
    lo = clopper_pearson_lower(k0, t0, alpha0)
    hi = clopper_pearson_upper(k1, t1, alpha1)
    return epsilon_from_limits(lo, hi, delta)


@dataclass(frozen=True)
class ErrorBudget:
    """The error level 1 - confidence, split evenly (union bound) over ``rows`` statements
    (attacks x directions, or input pairs), each of which uses ``events`` candidate events and
    two one-sided limits per event.

    ``row_alpha``: the error level of one row (its confidence is 1 - row_alpha); ``limit_alpha``:
    the error level of one Clopper-Pearson limit. The maximum over rows of their bounds holds
    with the overall ``confidence``.
    """

    confidence: float
    rows: int = 1
    events: int = 1

    def __post_init__(self) -> None:
        c = self.confidence
        if not (isinstance(c, (int, float)) and not isinstance(c, bool) and 0 < c < 1):
            raise ParameterError("confidence", c, "must lie in the open interval (0, 1)")
        for name in ("rows", "events"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise ParameterError(name, value, "must be an integer >= 1")

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def row_alpha(self) -> float:
        return self.alpha / self.rows

    @property
    def row_confidence(self) -> float:
        return 1.0 - self.row_alpha

    @property
    def limit_alpha(self) -> float:
        return self.row_alpha / (2 * self.events)


class HoldoutTrials:
    """Trials split into a selection part (``holdout_fraction`` of them: it chooses events and
    spends no confidence) and an evaluation part (fresh samples that certify them). Mixed into
    the audit levels' option dataclasses, which declare ``trials``, ``confidence`` and
    ``holdout_fraction``."""

    trials: int
    confidence: float
    holdout_fraction: float

    @property
    def selection_trials(self) -> int:
        return int(round(self.holdout_fraction * self.trials))

    @property
    def evaluation_trials(self) -> int:
        return self.trials - self.selection_trials

    def check_holdout(self, *, min_trials: int, zero_holdout: bool) -> None:
        """Validate ``trials`` (an integer >= min_trials), ``confidence`` and
        ``holdout_fraction`` (in [0, 1) with ``zero_holdout``, else in (0, 1)); a non-zero
        fraction must leave both parts non-empty."""
        trials = self.trials
        require(isinstance(trials, int) and not isinstance(trials, bool) and trials >= min_trials,
                "trials", trials, f"must be an integer >= {min_trials}")
        ErrorBudget(self.confidence)  # validates confidence
        f = self.holdout_fraction
        low_ok = (0 <= f) if zero_holdout else (0 < f)
        require(isinstance(f, (int, float)) and not isinstance(f, bool) and low_ok and f < 1,
                "holdout_fraction", f,
                "must lie in [0, 1)" if zero_holdout else "must lie in (0, 1)")
        require(f == 0 or 1 <= self.selection_trials < trials, "holdout_fraction", f,
                f"leaves no selection or evaluation trials out of {trials}")
