"""Issue 32: exact_band's X tables by the one-user recurrence (exact_band._x_recurrence) equal
the tables built row by row (window_pmf and two cumulative sums on a wider window) within the
stated relative error plus the stated missing mass, for windows following the law rightwards
(q <= 1/2) and leftwards (q > 1/2), and a wrong recurrence is caught by the same comparison."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import exact_band
from shufflesim.protocols.bounds.engine.plans import t_plan


def _row_by_row(m, q, x_lo, width):
    """CX = P[X <= x] and CCX of every row at x = x_lo - 1 + j (j = 0 .. width), built directly
    from window_pmf on one wide window starting 200 below every x_lo."""
    start = max(float(x_lo.min()) - 200.0, 0.0)
    span = int(float(x_lo.max()) + width - start) + 1
    px, err = exact_band.window_pmf(m, q, np.full(m.size, start), span)
    full = np.zeros((m.size, span + 1))
    np.cumsum(px, axis=1, out=full[:, 1:])
    full_cc = np.zeros_like(full)
    np.cumsum(full[:, 1:], axis=1, out=full_cc[:, 1:])
    index = (x_lo - start).astype(np.int64)[:, None] + np.arange(width + 1)[None, :]
    rows = np.arange(m.size)[:, None]
    return (full[rows, index], full_cc[rows, index],
            err + exact_band.REL_SPECIAL + 2 * (span + 1) * exact_band.U)


def _check(x_lo, cx, ccx, x_out, err, m, q):
    ref_cx, ref_ccx, ref_err = _row_by_row(m, q, x_lo, cx.shape[1] - 1)
    rel = err + ref_err
    # missing mass (a sub-measure): an entry of CX is short by at most x_out, of CCX by at
    # most x_out times the columns below it (and 200 more: the reference starts lower)
    cols = np.arange(cx.shape[1])[None, :] + 200.0
    assert np.all(np.abs(cx - ref_cx) <= rel * ref_cx + x_out[:, None])
    assert np.all(np.abs(ccx - ref_ccx) <= rel * ref_ccx + x_out[:, None] * cols)
    assert np.all(cx <= ref_cx * (1 + rel))          # a sub-measure: never above
    return float(np.max(np.abs(cx - ref_cx) / np.maximum(ref_cx, 1e-300) * (ref_cx > 1e-12)))


@pytest.mark.parametrize("n,w_pair,q", [(60, 0.3, 0.4), (3000, 0.05, 0.13),
                                        (100_000, 0.0314, 0.1299), (5000, 0.6, 0.97),
                                        (30_000, 0.1707, 0.8232), (3000, 0.05, 0.87)])
def test_recurrence_tables_match_the_row_by_row_tables(n, w_pair, q):
    m = n - t_plan(n, w_pair).t
    x_lo, cx, ccx, x_out, err, x_rows = exact_band._x_recurrence(m, q)
    cx, ccx = cx[x_rows], ccx[x_rows]
    assert err < 1e-8 and np.all(x_out < 1e-15)
    worst = _check(x_lo, cx, ccx, x_out, err, m, q)
    assert worst < 1e-9
    if q > 0.5:                   # the window follows the law leftwards: narrower than a union
        lo, width = exact_band._window(m, q)
        union = float(np.max(np.minimum(lo + width - 1, m)) - lo.min()) + 1
        assert cx.shape[1] - 1 < union - 0.5 * (2 * q - 1) * (m.size - 1)


def test_a_wrong_recurrence_is_caught(monkeypatch):
    """Negative control: a recurrence that adds a user with probability q (1 + 1e-6) drifts
    past the stated error."""
    n, w_pair, q = 3000, 0.05, 0.13
    m = n - t_plan(n, w_pair).t
    real_multiply = np.multiply
    calls = {"n": 0}

    def skewed(a, b, *args, **kwargs):
        if isinstance(b, float) and b == q:
            calls["n"] += 1
            b = q * (1 + 1e-6)
        return real_multiply(a, b, *args, **kwargs)

    monkeypatch.setattr(exact_band.np, "multiply", skewed)
    x_lo, cx, ccx, x_out, err, x_rows = exact_band._x_recurrence(m, q)
    monkeypatch.undo()
    cx, ccx = cx[x_rows], ccx[x_rows]
    assert calls["n"] > 0
    with pytest.raises(AssertionError):
        _check(x_lo, cx, ccx, x_out, err, m, q)
