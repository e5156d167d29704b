"""The blanket bounds of 004 (Lemmas 5.3, 5.5, 5.6 corrected) with a randomizer's own blanket:
the PARV of every candidate neighbour pair from its decomposition (k-RR: 004 Lemma 5.7), the
Hoeffding or Bennett concentration of protocols.bounds.closed_form.blanket, and the maximum over
the pairs.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.closed_form.blanket import (
    BBGN19,
    EPSILON0_MAX,
    MAX_PAIR_OUTPUTS,
    PairAtoms,
    PARVBounds,
    atoms_parv_bounds,
    bennett_delta,
    hoeffding_delta,
    krr_blanket_gamma,
    krr_parv_scalar,
)
from shufflesim.protocols.bounds.closed_form.concentration_log import (
    bennett_log,
    hoeffding_log,
    invert_log_delta,
)
from shufflesim.protocols.bounds.numerical import decompositions
from shufflesim.protocols.bounds.numerical.clones import (
    DEFAULT_TOL,
    check_delta,
    check_epsilon,
    check_epsilon0,
    check_n,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, discrete_output
from shufflesim.protocols.errors import ParameterError


@dataclass(frozen=True)
class PairSet:
    """Blanket atoms of the neighbour pairs a per-randomizer bound maximises over, and whether
    that maximum is provably the worst case over all pairs."""

    atoms: list
    exhaustive: bool
    argument: str


def randomizer_blanket_atoms(randomizer) -> PairSet:
    """Blanket atoms of every neighbour pair that can be worst for ``randomizer``.

    Randomizers with a decomposition (declared, or the discrete default) and neighbour
    candidates (protocols.randomizers.analysis): its candidate pairs, both directions,
    with its blanket atoms (rounded up for continuous outputs); exhaustive as argued there.
    Other randomizers with a categorical input domain and an enumerable output space: every
    ordered pair (x, x'), x != x', one atom per output (exhaustive by construction). Otherwise
    pass ``atoms=`` explicitly."""
    name = getattr(randomizer, "name", None)
    if decompositions.has_decomposition(randomizer):
        cand = decompositions.neighbour_candidates(randomizer)
        atoms = []
        for x0, x1 in cand.pairs:
            atoms.append(decompositions.blanket_atoms(randomizer, x0, x1))
            atoms.append(decompositions.blanket_atoms(randomizer, x1, x0))
        return PairSet(atoms, cand.exhaustive, cand.argument)
    try:
        pmf = randomizer.output_pmf()
    except (ParameterError, NotImplementedError, AttributeError) as err:
        raise ParameterError(
            "randomizer", name if name is not None else randomizer,
            f"cannot enumerate its outputs ({err}); pass atoms= explicitly",
        ) from None
    d, size = pmf.shape
    if d * (d - 1) * size > MAX_PAIR_OUTPUTS:
        raise ParameterError(
            "randomizer", name,
            f"{d} inputs x {size} outputs is too many pairs to enumerate; pass atoms=",
        )
    m = pmf.min(axis=0)
    keep = m > 0
    ratio = pmf[:, keep] / m[keep]
    atoms = [RatioAtoms(ratio[x], ratio[y], m[keep])
             for x in range(d) for y in range(d) if x != y]
    return PairSet(atoms, True, "every ordered pair of inputs enumerated")


def _pair_set(randomizer, atoms) -> PairSet:
    if atoms is None:
        return randomizer_blanket_atoms(randomizer)
    return PairSet(list(atoms), True, "caller-supplied atoms (assumed to cover the worst pair)")


@lru_cache(maxsize=128)
def _cached_pairs(randomizer) -> tuple[PairAtoms, PairSet]:
    """The stacked blanket atoms of a (frozen, hashable) randomizer: per-randomizer quantities,
    computed once (issue 18)."""
    pair_set = randomizer_blanket_atoms(randomizer)
    return PairAtoms.stack(pair_set.atoms), pair_set


def _pairs_of(randomizer, atoms) -> tuple[PairAtoms, PairSet]:
    if atoms is None:
        try:
            hash(randomizer)
        except TypeError:
            pass
        else:
            return _cached_pairs(randomizer)
    pair_set = _pair_set(randomizer, atoms)
    return PairAtoms.stack(pair_set.atoms), pair_set


#: results of the per-randomizer bounds by (method, randomizer, n, delta, tol): a bound is a
#: pure function of these (frozen randomizers), and calibration, pipelines and the CLI ask the
#: same points again (issue 18: closed forms at library speed when warm)
_RESULTS: OrderedDict = OrderedDict()
RESULTS_MAX = 4096


def _remembered(key, compute) -> BoundResult:
    start = time.perf_counter()
    try:
        hit = _RESULTS.get(key)
    except TypeError:                  # an unhashable randomizer: no cache
        return compute()
    if hit is not None:
        _RESULTS.move_to_end(key)
        return replace(hit, seconds=time.perf_counter() - start)
    result = compute()
    _RESULTS[key] = result
    if len(_RESULTS) > RESULTS_MAX:
        _RESULTS.popitem(last=False)
    return result


def _per_randomizer_result(method, concentration, randomizer, n, delta, atoms, tol, reference):
    check_epsilon0(randomizer.epsilon0, maximum=EPSILON0_MAX)
    n = check_n(n)
    delta = check_delta(delta)
    if atoms is None:
        return _remembered((method, randomizer, n, delta, tol), lambda: _compute_result(
            method, concentration, randomizer, n, delta, atoms, tol, reference))
    return _compute_result(method, concentration, randomizer, n, delta, atoms, tol, reference)


def atoms_parv_slopes(epsilon: float, pairs: PairAtoms, params: PARVBounds) -> tuple:
    """Derivatives in eps of :func:`atoms_parv_bounds`' mean_gap, upper, width and second
    moment (arrays over pairs; the rounding slacks are left out: only the Newton steps of the
    inversion use them). With x = e^eps the values are gamma (a_j - x b_j)."""
    x = math.exp(epsilon)
    gamma = pairs.gamma
    values = gamma[:, None] * (pairs.a - x * pairs.b)
    prob = pairs.weight / pairs.weight.sum(axis=1, keepdims=True)
    present = pairs.weight > 0
    rows = np.arange(values.shape[0])
    top = np.argmax(np.where(present, values, -np.inf), axis=1)
    bottom = np.argmin(np.where(present, values, np.inf), axis=1)
    b_top, b_bottom = pairs.b[rows, top], pairs.b[rows, bottom]
    return (gamma * x * np.sum(prob * pairs.b, axis=1), -gamma * x * b_top,
            gamma * x * (b_bottom - b_top),
            -2.0 * gamma * x * np.sum(prob * pairs.b * values, axis=1))


def atoms_log(concentration_log, n: int, epsilon: float, pairs: PairAtoms) -> tuple[float,
                                                                                     float]:
    """ln delta and its slope for the maximum over the pairs of ``pairs``
    (concentration_log.hoeffding_log or bennett_log per pair): the largest pair's value, and its
    slope (the maximum's one-sided slope)."""
    params = atoms_parv_bounds(epsilon, pairs)
    slopes = atoms_parv_slopes(epsilon, pairs, params)
    fields = (params.gamma, params.mean_gap, params.upper, params.width, params.second_moment)
    best = (-math.inf, 0.0)
    for i in range(params.gamma.size):
        pair = concentration_log(n, tuple(float(f[i]) for f in fields),
                                 tuple(float(s[i]) for s in slopes))
        if pair[0] > best[0]:
            best = pair
    return best


def _trivial_epsilon(pairs, randomizer) -> float:
    """The eps from which delta = 0 (the largest privacy loss on the blanket support); a
    ParameterError where it is infinite."""
    upper = pairs.trivial_epsilon()
    if not np.isfinite(upper):
        raise ParameterError("randomizer", getattr(randomizer, "name", randomizer),
                             "is not pure LDP on the blanket support")
    return upper


def _question(delta_fn):
    """BoundSpec.delta_at of the bound whose delta(eps) is ``delta_fn`` (no refinement: the
    threshold is not needed), after the regime checks of :func:`_compute_result`."""
    def delta_at(randomizer, n: int, epsilon: float, threshold: float) -> float:
        check_epsilon0(randomizer.epsilon0, maximum=EPSILON0_MAX)
        _trivial_epsilon(_pairs_of(randomizer, None)[0], randomizer)
        return delta_fn(epsilon, randomizer, check_n(n))
    return delta_at


def _compute_result(method, concentration, randomizer, n, delta, atoms, tol, reference):
    start = time.perf_counter()
    log_form = _LOG_FORMS[concentration]
    if atoms is None and _is_krr(randomizer):
        # k-RR: every ordered pair has the same PARV, in closed form (004 Lemma 5.7); the
        # inversion needs no atoms
        epsilon0, k = float(randomizer.epsilon0), int(randomizer.domain_size)
        upper = epsilon0

        def log_delta(eps: float) -> tuple[float, float]:
            return log_form(n, *krr_parv_scalar(eps, epsilon0, k))

        note = (f"gamma = {krr_blanket_gamma(epsilon0, k):.6g}, k-RR: every ordered pair alike "
                "(004 Lemma 5.7, in closed form)")
        exhaustive = True
    else:
        pairs, pair_set = _pairs_of(randomizer, atoms)
        upper = _trivial_epsilon(pairs, randomizer)

        def log_delta(eps: float) -> tuple[float, float]:
            return atoms_log(log_form, n, eps, pairs)

        note = (f"gamma = {float(pairs.gamma.min()):.6g}, {pairs.a.shape[0]} ordered pair(s); "
                f"pairs: {pair_set.argument}")
        exhaustive = pair_set.exhaustive
    eps, err = invert_log_delta(log_delta, delta, upper, tol)
    status = BoundStatus.PROVEN
    if not exhaustive:
        status = BoundStatus.APPROXIMATE
        note = "worst neighbour pair not proven; " + note
    return BoundResult(
        method=method, kind=BoundKind.UPPER, epsilon=eps, delta=delta, epsilon_error=err,
        status=status, reference=reference, seconds=time.perf_counter() - start, note=note,
    )


def _is_krr(randomizer) -> bool:
    return (getattr(randomizer, "name", None) == "krr"
            and isinstance(getattr(randomizer, "domain_size", None), int)
            and randomizer.domain_size >= 2)


def blanket_hoeffding(
    randomizer, n: int, delta: float, atoms: list[RatioAtoms] | None = None,
    tol: float = DEFAULT_TOL,
) -> BoundResult:
    """004 Lemmas 5.3, 5.5 with the randomizer's own gamma and exact PARV range (k-RR: Lemma
    5.7), maximised over the neighbour pairs of :func:`randomizer_blanket_atoms` (or over the
    caller's ``atoms``, one RatioAtoms per ordered pair); status approximate when those pairs
    are not provably the worst."""
    return _per_randomizer_result("blanket_hoeffding", hoeffding_delta, randomizer, n, delta,
                                  atoms, tol, f"{BBGN19}, Lemmas 5.3, 5.5, 5.7")


def blanket_bennett(
    randomizer, n: int, delta: float, atoms: list[RatioAtoms] | None = None,
    tol: float = DEFAULT_TOL,
) -> BoundResult:
    """004 Lemmas 5.3, 5.6 (corrected) with the randomizer's own gamma and exact PARV maximum and
    second moment (k-RR: Lemma 5.7), maximised over neighbour pairs as in
    :func:`blanket_hoeffding`. For 10-RR, n = 1000, delta = 1e-6 this is the "Blanket (Bennett)"
    row of 000 Table 4."""
    return _per_randomizer_result("blanket_bennett", bennett_delta, randomizer, n, delta,
                                  atoms, tol, f"{BBGN19}, Lemmas 5.3, 5.6 (corrected), 5.7")


def blanket_bennett_randomizer_delta(epsilon: float, randomizer, n: int,
                                     atoms: list[RatioAtoms] | None = None) -> float:
    """delta(eps) of :func:`blanket_bennett`."""
    return _randomizer_delta(bennett_log, epsilon, randomizer, n, atoms)


def blanket_hoeffding_randomizer_delta(epsilon: float, randomizer, n: int,
                                       atoms: list[RatioAtoms] | None = None) -> float:
    """delta(eps) of :func:`blanket_hoeffding`."""
    return _randomizer_delta(hoeffding_log, epsilon, randomizer, n, atoms)


def _randomizer_delta(log_form, epsilon, randomizer, n, atoms) -> float:
    epsilon = check_epsilon(epsilon)
    n = check_n(n)
    if atoms is None and _is_krr(randomizer):
        if epsilon >= randomizer.epsilon0:
            return 0.0
        return math.exp(log_form(n, *krr_parv_scalar(epsilon, float(randomizer.epsilon0),
                                                     int(randomizer.domain_size)))[0])
    pairs = _pairs_of(randomizer, atoms)[0]
    if epsilon >= pairs.trivial_epsilon():
        return 0.0
    return math.exp(atoms_log(log_form, n, epsilon, pairs)[0])


#: the logarithmic form (with slope) of each concentration bound
_LOG_FORMS = {hoeffding_delta: hoeffding_log, bennett_delta: bennett_log}


SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "blanket_hoeffding", BoundKind.UPPER,
        "004 Lemmas 5.3, 5.5 with the randomizer's blanket (k-RR: Lemma 5.7)",
        BoundStatus.PROVEN, "discrete outputs with an enumerable output space (or k-RR)",
        discrete_output, blanket_hoeffding, scope="specific",
        delta_at=_question(blanket_hoeffding_randomizer_delta)),
    BoundSpec(
        "blanket_bennett", BoundKind.UPPER,
        "004 Lemmas 5.3, 5.6 (corrected) with the randomizer's blanket (k-RR: Lemma 5.7)",
        BoundStatus.PROVEN, "discrete outputs with an enumerable output space (or k-RR)",
        discrete_output, blanket_bennett, scope="specific",
        delta_at=_question(blanket_bennett_randomizer_delta)),
)
