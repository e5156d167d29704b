"""The result of an eps(delta) search (:class:`EpsilonEstimate`): the certified bracket
lower <= eps* <= upper of the crossing eps* = min{eps : delta(eps) <= delta} of a
non-increasing delta(eps) (000 Sec. 6: the privacy curve inverted at the target delta).

Its own module (issue 32, session 16) so that the engine's delta(eps) questions, which only
name the type, do not compile the search itself (engine/eps_search.py, which re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EpsilonEstimate:
    """Result of an eps(delta) search.

    The true crossing eps* = min{eps : delta(eps) <= delta} satisfies lower <= eps* <= upper
    (``upper`` is inf when no eps <= eps_max was certified). ``value`` is the requested side;
    ``error = upper - lower``. ``saturated`` is True when the crossing was not found below
    ``eps_max``: then the upper side is inf and the lower side is the largest certified eps.
    """

    value: float
    lower: float
    upper: float
    error: float
    saturated: bool
    evaluations: int
    #: the estimates behind ``lower`` and ``upper`` ((eps, Estimate) pairs), for a follow-up
    #: search that starts from this bracket without evaluating its ends again
    ends: tuple = field(default=(), compare=False, repr=False)
    #: side="lower": True when ``upper`` comes only from the final probe past the bracket (no
    #: point of the search itself was certified below delta); a follow-up polish is then
    #: skipped (before that probe, such results had upper = inf and were never polished)
    upper_probed: bool = field(default=False, compare=False, repr=False)
