"""Renyi DP of shuffling (002 Sec. 6.1), composed over rounds and converted to (eps, delta).

002 Sec. 6.1 bounds the Renyi divergence of the shuffled mechanism by that of the clone pair
(the mechanism is a post-processing of the pair, and Renyi divergences satisfy data
processing); the same holds for the 000 Thm 13 blanket pair. Per round and order alpha we take
the largest of the two directions of

    D_alpha(P || Q) = 1 / (alpha - 1) log E_P[e^{(alpha - 1) L}]

over the aggregates of a dominating pair of the round (the block pairs of blocks.py for the
clone pair and pairs without a neutral group, else the pair itself), each split
into its two extreme losses (a dominating pair, as in pld.py), with masses raised by their
relative error and the outcomes not enumerated charged by :func:`outside_log_moment` (or, where
that limits the result, a wide enumeration with the outside mass at loss_max). Renyi DP
composes additively under adaptive composition (Mironov 2017, Prop. 1); the composed curve
rho(alpha) is converted with Canonne, Kamath, Steinke 2020, Prop. 12:

    eps = rho(alpha) + (log(1/delta) + (alpha - 1) log(1 - 1/alpha) - log(alpha)) / (alpha - 1),

minimised over the orders of :data:`ORDERS` (each order gives a valid guarantee).
"""

from __future__ import annotations

import math
import time

import numpy as np

from shufflesim.protocols.accounting import neutral_blocks, pairs
from shufflesim.protocols.accounting.aggregate_parts import (
    DEFAULT_TAIL,
    DEFAULT_WEAK_RTOL,
    AggregateStream,
    is_symmetric,
)
from shufflesim.protocols.accounting.blocks import (
    block_aggregates,
    block_pairs_apply,
    cached_block_aggregates,
)
from shufflesim.protocols.accounting.pld import (
    _Accumulator,
    _upper_direction,
    mass_relative_error,
    upper_split,
)
from shufflesim.protocols.accounting.rounds import (
    ComposedMethod,
    ComposedResult,
    pure_cap,
    round_models,
    total_rounds,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.lazy import lazy_functions, lazy_module

#: the pair's own enumeration as a stream (enumeration.py), on first use (issue 32: the block
#: paths' rounds never run it)
(aggregate_stream,) = lazy_functions("shufflesim.protocols.accounting.enumeration",
                                     "aggregate_stream")
#: the pair by (D, bin of m), for rdp-blanket at small n only (issue 32: a round at n = 1e5
#: never imports it)
m_bins = lazy_module("shufflesim.protocols.accounting.m_bins")

#: Tail mass left out of the binomial windows: the mass outside is charged at the largest loss,
#: e^{(alpha - 1) loss_max}, so it must be tiny for large orders.
RDP_TAIL = 1e-60
#: Renyi orders tried.
ORDERS = np.concatenate([1 + np.geomspace(1e-2, 1, 12)[:-1],
                         np.geomspace(2, 1e5, 60)])


def _log_sums(log_w: np.ndarray, losses: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """log(sum_i w_i e^{(alpha - 1) L_i}) for every order at once: a matrix log-sum-exp (each
    order's largest term taken out), in blocks of losses whose matrix stays in the cache
    (issue 32: scipy's logsumexp took 3x as long on the 71 x 10^4 matrices of a k-RR round)."""
    scale = (orders - 1.0)[:, None]
    out = np.full(orders.size, -np.inf)
    step = max(1, LOG_SUM_ENTRIES // orders.size)
    for first in range(0, losses.size, step):
        block = scale * losses[None, first:first + step]
        block += log_w[None, first:first + step]
        top = block.max(axis=1)
        block -= top[:, None]
        np.exp(block, out=block)
        out = np.logaddexp(out, top + np.log(block.sum(axis=1)))
    return out


#: Entries of the (orders x losses) matrix of :func:`_log_sums` computed at once.
LOG_SUM_ENTRIES = 1 << 16


def outside_log_moment(model, n: int, mass: float, orders: np.ndarray,
                       shrink: float = 1.0) -> np.ndarray:
    """log of an upper bound on E_P[e^{(alpha - 1) L}; O] for either direction of a symmetric
    pair (enumeration.is_symmetric: A - B = g D, D = h1 - h2), O the outcomes not enumerated,
    of M-mass at most ``mass``. P = M A / n (or M B / n) with A / n, B / n <= a_max. With
    Y = c S + r h3 (c the smallest informative ratio, S = h1 + h2, r h3 the neutral part) the
    denominator of L = ln(1 +- g D / B) is >= Y, so on {Y >= y0}, L <= |g| |D| / y0 and, by
    Hoelder with exponent q, E_M[e^{lam |D|}; O] <= mass^(1 - 1/q) (E e^{q lam D} +
    E e^{-q lam D})^(1/q), lam = (alpha - 1) |g| / y0, E e^{sD} = (1 + w1 (e^s - 1) +
    w2 (e^-s - 1))^n. On {Y < y0} (Chernoff bound, minimised over a grid of exponents, each
    valid) L <= loss_max. Minimised over grids of q and y0 = kappa E[Y] (every choice is a
    valid bound), and over the plain charge mass * e^{(alpha - 1) loss_max}; ``mass`` is raised
    by 1 % for the error of its binomial tails.

    Block pairs (blocks.py, neutral_blocks.py; ``shrink`` = the smallest Sa / S): their
    outcomes have D' ~ Bin(Sa, 1/2) given S with Sa <= S, P' <= a_max M' (M' = M with D'
    for D; |D'| <= Sa), and denominators >= (Sa / S) Y >= shrink Y, so L' <= |g| |D'| /
    (shrink y0) on {Y >= y0}; and E e^{s D'} = E[cosh(s)^Sa] <= E[cosh(s)^S] = E_M e^{sD}. The
    bound above with y0 replaced by shrink y0 therefore holds for them.

    Sharper denominators (issue 32): with A = sbar S + alpha D + r h3 and B = sbar S + beta D +
    r h3 (sbar the mean ratio of a symmetric pair), on {|D| <= s S} both are at least
    Y_s = (sbar - max(|alpha|, |beta|) s) S + r h3, which exceeds Y by far when s is small
    (the clone pair at eps0 = 2.75: sbar 15.6 against c 1.9). The bound above with Y_s for Y
    (block pairs: |D'| <= s Sa gives denominators >= (Sa / S) Y_s >= shrink Y_s) holds off the
    event {|D| > s S}, whose M-mass is at most E[2 e^{-s^2 shrink S / 2}] =
    2 (1 - (w1 + w2) (1 - e^{-s^2 shrink / 2}))^n (Hoeffding given S, Sa >= shrink S,
    S ~ Bin(n, w1 + w2)); that event is charged at loss_max with {Y_s < y0}. Every s of
    :data:`OUTSIDE_SHARES` gives a valid bound (s = 1: the one above); the smallest is used.
    It spares the wide enumeration of :func:`composed_curve` where the plain Y limited the
    result (10-RR over 100 rounds at n = 1e5: rdp-clone's calibration 1.1 -> 0.3 s)."""
    (a1, a2), (b1, b2), (w1, w2) = model.a, model.b, model.w
    g = abs(a1 - b1)
    c = min(a1, a2, b1, b2)
    r, wn, wnull = model.r, model.w_neutral, model.w_null
    log_top = math.log(model.a_max * (1 + 1e-9))
    mass = min(1.0, mass * 1.01)
    if mass <= 0:
        return np.full(orders.size, -np.inf)
    plain = math.log(mass) + (orders - 1.0) * model.loss_max
    best = plain
    sbar = 0.25 * (a1 + a2 + b1 + b2)
    tilt = max(abs(a1 - a2), abs(b1 - b2)) / 2.0
    for share in OUTSIDE_SHARES:
        # on {|D| <= share S} the denominators are at least (sbar - tilt share) S + r h3
        c_share = c if share >= 1.0 else max(c, sbar - tilt * share)
        if share < 1.0:
            # M(|D'| > share Sa) <= E[2 e^{-share^2 Sa / 2}] <= E[2 e^{-share^2 shrink S / 2}]
            # (Hoeffding given S; Sa >= shrink S; S ~ Bin(n, w1 + w2)): charged at loss_max
            wide = math.log(2.0) + n * math.log1p((w1 + w2) * math.expm1(
                -0.5 * share * share * shrink))
            if wide >= math.log(mass):
                continue
        else:
            wide = -math.inf
        bound = _outside_below(c_share, g, r, w1, w2, wn, wnull, n, mass, orders, shrink,
                               model.loss_max, wide)
        best = np.minimum(best, bound)
    return log_top + best


#: Shares s of the event {|D| <= s S} tried by :func:`outside_log_moment` (1: every outcome).
OUTSIDE_SHARES = (1.0, 0.5, 0.25, 0.12, 0.06, 0.03)


def _outside_below(c: float, g: float, r: float, w1: float, w2: float, wn: float,
                   wnull: float, n: int, mass: float, orders: np.ndarray, shrink: float,
                   loss_max: float, wide: float) -> np.ndarray:
    """The bound of :func:`outside_log_moment` (without log a_max) for denominators at least
    Y = c S + r h3 off an event of M-mass at most e^``wide`` (charged at loss_max with
    {Y < y0}), minimised over y0 and the Hoelder exponent q; +inf where it does not apply."""
    mean_y = n * (c * (w1 + w2) + r * wn)
    if mean_y <= 0:
        return np.full(orders.size, np.inf)
    kappa = np.array([0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98])[:, None, None]
    q = np.array([1.5, 2.0, 3.0, 4.0, 6.0, 10.0, 20.0, 50.0])[None, :, None]
    a_1 = (orders - 1.0)[None, None, :]
    y0 = kappa * mean_y
    theta = np.geomspace(1e-6, 1e3, 600) / max(c, r)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        per_user = np.log((w1 + w2) * np.exp(-theta * c) + wn * np.exp(-theta * r) + wnull)
        log_low = np.nanmin(theta[None, :] * y0[:, 0] + n * per_user[None, :], axis=1)
        log_low = np.minimum(log_low, 0.0)[:, None, None]
        log_low = np.logaddexp(log_low, wide)
        s = q * a_1 * g / (shrink * y0)
        log_mgf = np.logaddexp(n * np.log1p(w1 * np.expm1(s) + w2 * np.expm1(-s)),
                               n * np.log1p(w1 * np.expm1(-s) + w2 * np.expm1(s)))
        near = (1.0 - 1.0 / q) * math.log(mass) + log_mgf / q
        near = np.where(np.isnan(near), np.inf, near)
        split = np.logaddexp(near, log_low + a_1 * loss_max)
        return np.where(np.isnan(split), np.inf, split).min(axis=(0, 1))


#: Outcomes of an aggregate stream put onto the grid at once (enumeration.AggregateStream).
STREAM_CHUNK = 1 << 18


def _batches(agg):
    """The (p0, p1, ell, lo, hi) arrays of ``agg``: all at once for Aggregates, in batches of
    about STREAM_CHUNK outcomes for an AggregateStream (memory of one batch)."""
    if not isinstance(agg, AggregateStream):
        yield agg.p0, agg.p1, agg.ell, agg.lo, agg.hi
        return
    batch, size = [], 0
    for part in agg.parts:
        batch.append(part)
        size += part[0].size
        if size >= STREAM_CHUNK:
            yield tuple(np.concatenate(arrays) for arrays in zip(*batch, strict=True))
            batch, size = [], 0
    if batch:
        yield tuple(np.concatenate(arrays) for arrays in zip(*batch, strict=True))


def _log_moments(agg, model, n: int, orders: np.ndarray) -> list[np.ndarray]:
    """Per direction (one if swap-symmetric), log E_P[e^{(alpha - 1) L}] over the enumerated
    outcomes: each aggregate split into its two extreme losses keeping P- and Q-mass (a
    dominating pair, pld.py) on the grid, masses raised by their relative error. ``agg``:
    Aggregates, or an AggregateStream (summed batch by batch onto the same grid)."""
    eta = mass_relative_error(n)
    interval = max(model.loss_scale(n) / 200.0, model.loss_max * 2e-7)
    directions = 1 if model.is_swap_symmetric() else 2
    if isinstance(agg, AggregateStream):
        accs = [_Accumulator() for _ in range(directions)]
        for p0, p1, ell, lo, hi in _batches(agg):
            for d, acc in enumerate(accs):
                if d == 0:
                    _upper_direction(acc, p0 * (1 + eta), ell, lo, hi, interval)
                else:
                    _upper_direction(acc, p1 * (1 + eta), -ell, -hi, -lo, interval)
        grids = [(acc.low, acc.values) for acc in accs]
    else:                     # the split of the round's PLD (pld.upper_split), shared
        grids = [upper_split(agg, interval, d) for d in range(directions)]
        grids = [(low, values * (1 + eta)) for low, values in grids]
    sums = []
    for low, weights in grids:
        losses = (np.arange(weights.size) + low) * interval
        keep = weights > 0
        sums.append(_log_sums(np.log(weights[keep]), losses[keep], orders))
    return sums


def _curve(sums: list[np.ndarray], orders: np.ndarray, outside) -> np.ndarray:
    """max over directions d of (log moment + charge ``outside(d)``) / (alpha - 1)."""
    return np.max([np.logaddexp(s, outside(d)) / (orders - 1.0) for d, s in enumerate(sums)],
                  axis=0)


#: Over FEW_ROUNDS rounds or more, the k-RR blanket pair's Renyi curve comes from the neutral
#: block pairs (neutral_blocks.py, shared with the round's PLD) once the pair's own symmetric
#: enumeration has more than NEUTRAL_BLOCKS_FROM entries (S values x D values): 0, i.e. always.
#: On the composition grid's k-RR points (k = 3, 10; eps0 0.5, 1, 4; n 1e3-1e5) with T = 30,
#: 100 and 1000 the result is within 3e-5 relative of the enumeration's, and 5-15x faster
#: below n = 1e5 (issue 32; tests/test_accounting_fast_paths.py).
NEUTRAL_BLOCKS_FROM = 0.0
#: The same over fewer than FEW_ROUNDS rounds (the large Renyi orders of few rounds weigh the
#: split ends of the blocks' m'-bins): with blocks rdp-blanket was 1.2 % looser at n = 1000,
#: T = 10 (10-RR, eps0 = 1), up to 93 % at n = 1000, 8 % at n = 1e5 (eps0 = 0.5) and 0.9 % at
#: n = 2.7e5 (10-RR, eps0 = 1) with T = 1, within 1e-4 from n = 1e6.
NEUTRAL_BLOCKS_FROM_FEW = 2.4e7
FEW_ROUNDS = 30
#: Below this many (S, D) entries of its binomial table the k-RR blanket pair itself comes by
#: (D, bin of m) (m_bins.py) instead of the (S, D, h3-bin) enumeration (rdp-blanket over few
#: rounds at small n, and the wide windows of :data:`RDP_TAIL`).
M_BINS_UP_TO = 1 << 24


def enumeration_entries(model, n: int) -> float:
    """About how many (S, D) entries enumeration.symmetric_aggregates computes for a symmetric
    pair (normal widths of its 1e-15 windows, +-8.5 sd): the cost of the pair's own
    enumeration."""
    p2 = min(1.0, 2.0 * model.w[0])
    sd_s = math.sqrt(n * p2 * (1.0 - p2))
    sd_h = 0.5 * math.sqrt(n * p2)
    return (17.0 * sd_s + 1.0) * (17.0 * sd_h + 1.0)


def _dominating_aggregates(model, n: int, weak_rtol: float, tail: float = DEFAULT_TAIL,
                           rounds: int = FEW_ROUNDS):
    """Aggregates of a dominating pair of the round: the block pairs of blocks.py for symmetric
    pairs without a neutral group (the clone pair, the brr blanket pair); for the k-RR blanket
    pair the neutral block pairs of neutral_blocks.py (shared with the round's PLD, cached)
    over FEW_ROUNDS ``rounds`` or more, and over fewer once the pair's own enumeration exceeds
    :data:`NEUTRAL_BLOCKS_FROM_FEW` entries; else the pair itself (enumeration.py, as an
    AggregateStream: summed part by part, never held whole). Below that size and over few
    rounds the neutral block pairs are not used: their m'-bins merge outcomes whose losses
    differ more than the former (S, h3) cells at small n, and the split of an aggregate into
    its extreme losses weighs heavily at the large Renyi orders that T = 1 needs."""
    if block_pairs_apply(model, "upper") and not neutral_blocks.applies(model):
        if tail != DEFAULT_TAIL:
            return block_aggregates(model, int(n), "upper", tail=tail)
        return cached_block_aggregates(model, int(n), "upper", DEFAULT_TAIL)
    switch = NEUTRAL_BLOCKS_FROM if rounds >= FEW_ROUNDS else NEUTRAL_BLOCKS_FROM_FEW
    if (tail == DEFAULT_TAIL and neutral_blocks.applies(model)
            and enumeration_entries(model, int(n)) > switch):
        return neutral_blocks.cached_neutral_block_aggregates(model, int(n), DEFAULT_TAIL,
                                                              float(weak_rtol))
    if m_bins.applies(model) and m_bins.entries(model, int(n), float(tail)) <= M_BINS_UP_TO:
        # the pair itself by (D, bin of m) (m_bins.py; issue 32: 32 million (S, D, h3-bin)
        # cells of the enumeration at n = 1000 become about 0.3 million aggregates)
        return m_bins.m_bin_stream(model, int(n), tail=float(tail), weak_rtol=float(weak_rtol))
    # the pair itself, streamed (issue 32: at n = 1000 the wide windows hold 32 million
    # aggregates; summed part by part, not kept)
    return aggregate_stream(model, int(n), tail=float(tail), weak_rtol=float(weak_rtol))


def _pld_curve(model, n: int, weak_rtol: float, orders: np.ndarray, rounds: int = 1):
    """Renyi curve of the round's pessimistic PLD's dominating pair (tail DEFAULT_TAIL), the
    outcomes not enumerated charged by :func:`outside_log_moment`. Also returns the curve
    without that charge (not valid; only to tell whether the charge limits the result).
    ``rounds``: how many rounds the curve will be composed over (the choice of dominating pair,
    :func:`_dominating_aggregates`; a curve on its own is taken as one round's)."""
    agg = _dominating_aggregates(model, int(n), float(weak_rtol), rounds=rounds)
    outside = outside_log_moment(model, n, agg.outside_mass, orders, agg.shrink)
    sums = _log_moments(agg, model, n, orders)
    return (_curve(sums, orders, lambda d: outside),
            _curve(sums, orders, lambda d: np.full(orders.size, -np.inf)))


def renyi_curve(model, n: int, *, tail: float | None = None, weak_rtol: float = DEFAULT_WEAK_RTOL,
                orders=ORDERS) -> np.ndarray:
    """max over both directions of D_alpha of a dominating pair of the round, rounded up:
    each aggregate (:func:`_dominating_aggregates`) is split into its two extreme losses keeping
    P- and Q-mass (a dominating pair, pld.py), masses are raised by their relative error; the
    outcomes not enumerated are charged by :func:`outside_log_moment` (symmetric pairs, no
    ``tail``) or put at the largest possible loss (windows of tail ``tail``)."""
    orders = np.asarray(orders, dtype=float)
    if tail is None and is_symmetric(model):
        curve, _ = _pld_curve(model, int(n), weak_rtol, orders)
        return _round_up(curve)
    tail = RDP_TAIL if tail is None else tail
    agg = _dominating_aggregates(model, int(n), float(weak_rtol), float(tail))
    eta = mass_relative_error(n)
    # the mass outside the region at the largest possible loss
    return _round_up(_curve(_log_moments(agg, model, n, orders), orders, lambda d: np.log(
        (agg.outside0 if d == 0 else agg.outside1) * (1 + eta)) + (orders - 1.0) * model.loss_max))


def _round_up(curve: np.ndarray) -> np.ndarray:
    return np.maximum(curve, 0.0) * (1 + 1e-12) + 1e-15


def composed_curve(models, delta: float, weak_rtol: float = DEFAULT_WEAK_RTOL,
                   orders=ORDERS) -> np.ndarray:
    """sum over rounds of repeat x the round's Renyi curve. Symmetric pairs first use the
    pessimistic PLD's dominating pair with the outside bound (:func:`_pld_curve`); where that
    bound limits the converted eps by more than 0.1 % (small n, where the 1e-15 windows are too
    narrow for the best order), each round's curve becomes the order-wise minimum with the
    wide enumeration (tail RDP_TAIL, outside mass at loss_max): both are valid at every
    order."""
    orders = np.asarray(orders, dtype=float)
    fast, bare, plain, own = np.zeros(orders.size), np.zeros(orders.size), [], {}
    total = sum(int(repeat) for _, _, repeat in models)
    for i, (model, n, repeat) in enumerate(models):
        if is_symmetric(model):
            curve, without = _pld_curve(model, int(n), weak_rtol, orders, total)
            own[i] = _round_up(curve)
            fast += repeat * own[i]
            bare += repeat * _round_up(without)
        else:
            plain.append((model, n, repeat))
    rest = np.zeros(orders.size)
    for model, n, repeat in plain:
        rest += repeat * renyi_curve(model, n, tail=RDP_TAIL, weak_rtol=weak_rtol, orders=orders)
    if own:
        eps_fast, _ = epsilon_from_rdp(fast + rest, delta, orders)
        eps_bare, _ = epsilon_from_rdp(bare + rest, delta, orders)
        if eps_fast > eps_bare * (1 + 1e-3) + 1e-12:
            fast = np.zeros(orders.size)
            for i, curve in own.items():
                model, n, repeat = models[i]
                wide = renyi_curve(model, n, tail=RDP_TAIL, weak_rtol=weak_rtol,
                                   orders=orders)
                fast += repeat * np.minimum(curve, wide)
    return fast + rest


def epsilon_from_rdp(rho: np.ndarray, delta: float, orders=ORDERS) -> tuple[float, float]:
    """CKS20 Prop. 12 minimised over orders: (eps, best order)."""
    a = np.asarray(orders, dtype=float)
    eps = rho + (math.log(1 / delta) + (a - 1) * np.log1p(-1 / a) - np.log(a)) / (a - 1)
    i = int(np.argmin(eps))
    return float(max(eps[i], 0.0)), float(a[i])


def _rdp_method(name: str, model_of, reference: str):
    def compute(rounds, delta, *, interval=None, tail=None,
                weak_rtol=DEFAULT_WEAK_RTOL) -> ComposedResult:
        start = time.perf_counter()
        rounds, models = round_models(rounds, delta, model_of)
        if tail is None:
            rho = composed_curve(models, delta, weak_rtol)
        else:
            rho = np.zeros(len(ORDERS))
            for model, n, repeat in models:
                rho += repeat * renyi_curve(model, n, tail=tail, weak_rtol=weak_rtol)
        eps, alpha = epsilon_from_rdp(rho, delta)
        eps = min(eps, pure_cap(rounds))
        return ComposedResult(name, BoundKind.UPPER, eps, float(delta), total_rounds(rounds),
                              BoundStatus.PROVEN, reference, time.perf_counter() - start, None,
                              f"best Renyi order {alpha:.4g}")
    return compute


METHODS = (
    ComposedMethod("rdp-clone", BoundKind.UPPER, BoundStatus.PROVEN,
                   "Renyi DP of the 002 clone pair (002 Sec. 6.1), Mironov composition, "
                   "CKS20 Prop. 12 conversion", "any eps0-LDP randomizer with eps0 <= 50",
                   _rdp_method("rdp-clone", lambda r: pairs.clone_model(float(r.epsilon0)),
                               "002 Sec. 6.1 + Mironov 2017 Prop. 1 + CKS20 Prop. 12")),
    ComposedMethod("rdp-blanket", BoundKind.UPPER, BoundStatus.PROVEN,
                   "Renyi DP of the 000 Thm 13 blanket pair, Mironov composition, CKS20 "
                   "Prop. 12 conversion", f"randomizers {', '.join(pairs.SUPPORTED)}",
                   _rdp_method("rdp-blanket", pairs.blanket_model,
                               "000 Thm 13 pair + Mironov 2017 Prop. 1 + CKS20 Prop. 12")),
)
