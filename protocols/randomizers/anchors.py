"""The anchor inputs of a randomizer's output groups (``output_groups(anchors)``, base.py): the
anchors validated and made distinct, and the bit patterns over m distinct anchors that group a
unary encoding's or a hash's outputs. Shared by k-RR, RAPPOR/OUE, subset selection, the local
hashes and Hadamard response, so that none imports another's module for them (issue 32)."""

from __future__ import annotations

import numpy as np

from shufflesim.protocols.errors import ParameterError

#: Largest number of distinct anchors ``output_groups`` accepts (2^m bit patterns).
MAX_ANCHORS = 16


def unique_anchors(anchors: tuple, domain_size: int) -> tuple[tuple, np.ndarray, np.ndarray]:
    """Validate ``anchors`` against [0, domain_size) and return (anchors as ints, the distinct
    anchors, the position of each anchor among the distinct ones)."""
    anchors = tuple(int(a) for a in anchors)
    if not anchors:
        raise ParameterError("anchors", anchors, "needs at least one anchor input")
    for a in anchors:
        if not 0 <= a < domain_size:
            raise ParameterError("anchors", a, f"must lie in [0, {domain_size})")
    distinct, position = np.unique(np.asarray(anchors, dtype=np.int64), return_inverse=True)
    if distinct.size > MAX_ANCHORS:
        raise ParameterError("anchors", len(distinct), f"at most {MAX_ANCHORS} distinct anchors")
    return anchors, distinct, position


def bit_patterns(m: int) -> np.ndarray:
    """All 2^m patterns of m bits, shape (2^m, m), as 0/1 integers."""
    return (np.arange(1 << m)[:, None] >> np.arange(m)) & 1
