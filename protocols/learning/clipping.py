"""L2 clipping of gradients (Abadi et al. 2016; 003 Algorithm 3 line 12; 002 Sec. 5.2).

Two clipping points (``CLIP_POINTS``; the ``[learning]`` key ``clip_point``):

* ``"example"`` (the default): **per-example** clipping, then the client averages its clipped
  gradients:

    g~_j = g_j / max(1, ||g_j||_2 / C),     g_client = (1/m) sum_j g~_j,   ||g_client|| <= C.

* ``"client-mean"``: 003 Algorithm 3 as printed (line 12): the client averages its raw
  gradients and clips *the mean*, g~ = g / max(1, ||g|| / C) with g = (1/m) sum_j g_j. The
  report still lies in the ball of radius C (client-level sensitivity 2C), but one example is
  no longer bounded by 2C/m: it can move the clipped mean anywhere in the ball (up to 2C).

Why per-example is the default: (1) the client's report lies in the L2 ball of radius C
whatever its m examples, so a local randomizer calibrated to that ball (sensitivity 2C under
replacement of the client's input) is a client-level (eps0, delta0)- or eps0-LDP randomizer,
exactly as with client-mean clipping; (2) in addition each single example moves the client's
mean by at most 2C/m, which is the sensitivity 003 uses in its noise
sigma = (2C/m) sqrt(2 log(1.25/delta)) / eps (Algorithm 3 line 7). 003 writes the clip after
the average (line 12), but that sigma is only valid for example-level privacy when every
example is clipped; with client-mean clipping one
example can move the clipped mean by up to 2C. With one example per client (002 Sec. 5.2, the
default here) the two coincide; at client level (``privacy_unit = "client"``) both hold.
"""

from __future__ import annotations

import numpy as np

from shufflesim.protocols.errors import require_positive_finite


def clip_rows(g: np.ndarray, bound: float) -> np.ndarray:
    """Scale every row (last axis) of ``g`` to L2 norm at most ``bound``; shorter rows unchanged."""
    require_positive_finite("clip", float(bound))
    g = np.asarray(g, dtype=float)
    norms = np.linalg.norm(g, axis=-1, keepdims=True)
    return g / np.maximum(1.0, norms / bound)


#: Where the clip applies: to every example's gradient, or to the client's mean gradient.
CLIP_POINTS = ("example", "client-mean")


def clip_client_means(per_example: np.ndarray, bound: float | None) -> np.ndarray:
    """``(clients, m, P)`` per-example gradients -> ``(clients, P)``: each client's mean
    gradient, clipped to L2 norm ``bound`` (003 Algorithm 3 line 12 as printed; None: no
    clipping)."""
    means = np.asarray(per_example, dtype=float).mean(axis=1)
    return means if bound is None else clip_rows(means, bound)


def clipped_client_means(per_example: np.ndarray, bound: float | None) -> np.ndarray:
    """``(clients, m, P)`` per-example gradients -> ``(clients, P)`` means of clipped rows.

    ``bound = None`` means no clipping (non-private training)."""
    per_example = np.asarray(per_example, dtype=float)
    if bound is not None:
        per_example = clip_rows(per_example, bound)
    return per_example.mean(axis=1)
