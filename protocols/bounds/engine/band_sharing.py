"""Sharing of exact_band's eps-independent tables between parameters a few ulps apart
(protocols.bounds.engine.exact_band, 000 Thm 12-14's conditioning sums): the same group met at
another eps has weights that differ in the last bits, and a bounded factor covers the
difference (:func:`_shared_parameters`)."""

from __future__ import annotations

import math

#: a parameter within this many units in the last place of one seen before shares its tables
SHARE_ULPS = 4
_seen_parameters: dict[tuple[int, int], list[float]] = {}


def _shared_parameters(n: int, w_pair: float, rho: float, q: float):
    """(w_pair, rho, q), each replaced by a value of the same slot met before for n if it is
    within SHARE_ULPS ulps of it (and strictly inside (0, 1), as both are), and the log factor
    ``shift`` that covers the difference. The same group met at another eps has weights that
    differ in the last bits (merged or renormalized categories), e.g. w_pair =
    0.19979919846721214 and 0.1997991984672122 at 10-RR, eps0 = 0.01, n = 1e4, which cost a
    second 17 ms table. Every cell (t, k, x) is a product of three binomial pmfs, and
    |d ln P[Bin(m, p) = k] / dp| = |k / p - (m - k) / (1 - p)| <= m / min(p, 1 - p), so the
    probability of each cell, of each window's outside mass, and hence E[S_+] and its bracket
    change by a factor within exp(+-shift), shift = n sum |dp| / min(p, 1 - p) (minimum over
    both values; ~1e-12 here). Where nothing is shared, shift = 0: the result is unchanged."""
    out, shift = [], 0.0
    for slot, value in enumerate((w_pair, rho, q)):
        seen = _seen_parameters.setdefault((n, slot), [])
        chosen = value
        for old in seen:
            low = min(old, value, 1.0 - old, 1.0 - value)
            if old != value and low > 0 and \
                    abs(old - value) <= SHARE_ULPS * math.ulp(max(old, value)):
                chosen = old
                shift += n * abs(old - value) / low
                break
        else:
            if value not in seen:
                seen.append(value)
                del seen[:-8]
        out.append(chosen)
    if len(_seen_parameters) > 48:
        del _seen_parameters[next(iter(_seen_parameters))]
    return (*out, shift * (1 + 1e-6))
