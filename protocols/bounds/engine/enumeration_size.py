"""How many count vectors the exact enumeration (engine/enumerate.py) of one group would visit:
the question the method choice (engine/methods.py) asks before enumerating anything. A group
of n users over p categories (000 Thm 12-14's multinomial counts) has C(n + p - 1, p - 1)
count vectors (stars and bars). Kept apart from the enumeration so that a bound that never
enumerates never compiles it (issue 32).
"""

from __future__ import annotations

import math

__all__ = ["composition_count"]


def composition_count(total: int, parts: int) -> int:
    """Count vectors of ``parts`` non-negative integers summing to ``total``."""
    return math.comb(total + parts - 1, parts - 1)
