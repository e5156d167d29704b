"""The catalogue of amplification bounds: every published upper bound and every lower bound the
project implements, with its reference, validity regime and status.

A :class:`BoundSpec` says what a bound is (kind, reference, status, regime), which randomizers
it applies to and how to compute it: ``compute(randomizer, n, delta) -> BoundResult``. Generic
bounds use only ``randomizer.epsilon0`` (valid for every eps0-LDP randomizer); randomizer-specific
ones check the randomizer's type. Statuses (design.md Sec. 2): ``proven``, ``approximate``
(an asymptotic constant dropped) and ``relies-on-stronger-clone-reduction`` (000 Sec. 3.3); a
bound with more than one caveat lists the others in ``also`` (003's mu-GDP bound is both
approximate and reliant on the stronger-clone reduction).

Public API: :func:`bound_names`, :func:`get_bound`, :func:`applicable_bounds`, :func:`evaluate`
(timed; a bound outside its regime gives a record with the reason instead of a number, never
silently dropped), :func:`evaluate_many`, and :func:`catalogue_markdown` (docs/bounds.md).

The bounds live in their own modules (efmrtt, clones, blanket_closed, optimal, variation_ratio,
gdp). A module that is missing, or whose own dependencies are missing, does not break the
catalogue: its bounds are left out and listed by :func:`missing_modules`.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from protocols.errors import ParameterError


@dataclass(frozen=True)
class BoundSpec:
    """One registered bound.

    name: the method name (also ``BoundResult.method``); kind: upper or lower; reference: paper
    and theorem; status: the primary status, ``also``: further caveats; regime: where the bound
    is valid, in words (the compute function raises ParameterError outside it); scope: "generic"
    (any eps0-LDP randomizer) or "specific" (uses the randomizer's structure).
    """

    name: str
    kind: BoundKind
    reference: str
    status: BoundStatus
    regime: str
    applies_to: Callable[[object], bool]
    compute: Callable[[object, int, float], BoundResult]
    scope: str = "generic"
    also: tuple[BoundStatus, ...] = ()

    @property
    def statuses(self) -> tuple[BoundStatus, ...]:
        return (self.status, *self.also)

    @property
    def status_label(self) -> str:
        return ", ".join(s.value for s in self.statuses)


@dataclass(frozen=True)
class BoundEvaluation:
    """The outcome of one bound at one setting: a result, or the reason there is none."""

    spec: BoundSpec
    n: int
    delta: float
    result: BoundResult | None = None
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.result is not None

    @property
    def status_label(self) -> str:
        """The statuses that apply: the result's own status (a bound may downgrade itself, e.g.
        a maximum over a grid of candidate pairs) and the spec's further caveats."""
        primary = self.result.status if self.result is not None else self.spec.status
        rest = [s for s in self.spec.statuses if s is not primary]
        return ", ".join(s.value for s in (primary, *rest))

    def record(self) -> dict:
        """A flat JSON-ready record (keys: method, kind, epsilon, delta, epsilon_error, status,
        statuses, reference, seconds, note, error)."""
        r = self.result
        return {
            "method": self.spec.name,
            "kind": self.spec.kind.value,
            "epsilon": None if r is None else float(r.epsilon),
            "delta": float(self.delta),
            "epsilon_error": None if r is None else float(r.epsilon_error),
            "status": (r.status if r is not None else self.spec.status).value,
            "statuses": self.status_label.split(", "),
            "reference": r.reference if r is not None and r.reference else self.spec.reference,
            "seconds": float(self.seconds),
            "note": "" if r is None else r.note,
            "error": self.error,
        }


_REGISTRY: dict[str, BoundSpec] = {}
_MISSING: dict[str, str] = {}
_LOADED = False


def register(spec: BoundSpec) -> BoundSpec:
    if spec.name in _REGISTRY:
        raise RuntimeError(f"bound {spec.name!r} registered twice")
    _REGISTRY[spec.name] = spec
    return spec


# ------------------------------------------------------------------------------------------
# Applicability predicates
# ------------------------------------------------------------------------------------------
def any_ldp(randomizer) -> bool:
    """Generic bounds: every randomizer is eps0-LDP with eps0 = randomizer.epsilon0."""
    return getattr(randomizer, "epsilon0", None) is not None


def _named(*names: str) -> Callable[[object], bool]:
    def predicate(randomizer) -> bool:
        return getattr(randomizer, "name", None) in names
    predicate.__doc__ = f"randomizer is one of {names}"
    return predicate


def discrete_output(randomizer) -> bool:
    return getattr(randomizer, "output_kind", "discrete") == "discrete"


# ------------------------------------------------------------------------------------------
# Registration of every module's bounds
# ------------------------------------------------------------------------------------------
def _generic(function: Callable[[float, int, float], BoundResult]):
    """Adapt f(epsilon0, n, delta) to compute(randomizer, n, delta)."""
    def compute(randomizer, n: int, delta: float) -> BoundResult:
        return function(float(randomizer.epsilon0), n, delta)
    return compute


def _register_efmrtt(m) -> None:
    register(BoundSpec(
        "efmrtt19", BoundKind.UPPER, "Erlingsson et al. SODA 2019 (cited in 001 Sec. 2, 004 "
        "Thm 5.1): eps = 12 eps0 sqrt(log(1/delta)/n)", BoundStatus.PROVEN,
        "eps0 <= 1/2, n >= 1000, delta <= 0.01", any_ldp, _generic(m.efmrtt19_epsilon)))


def _register_clones(m) -> None:
    register(BoundSpec(
        "fmt21_closed", BoundKind.UPPER, "002 (Feldman, McMillan, Talwar 2021) Thm 3.1",
        BoundStatus.PROVEN, "eps0 <= log(n / (16 log(2/delta)))", any_ldp,
        _generic(m.fmt21_closed_form)))
    register(BoundSpec(
        "fmt21_numerical", BoundKind.UPPER, "002 Thm 3.2 (clone reduction, numerical)",
        BoundStatus.PROVEN, "0 < eps0 <= 700, n >= 1", any_ldp, _generic(m.fmt21_numerical)))
    register(BoundSpec(
        "fmt21_krr_closed", BoundKind.UPPER, "002 Thm 4.1 (k-RR specific)", BoundStatus.PROVEN,
        "k-RR; Thm 4.1's conditions on n and delta", _named("krr"), m.fmt21_krr_closed_form,
        scope="specific"))
    register(BoundSpec(
        "stronger_clone_numerical", BoundKind.UPPER,
        "Feldman, McMillan, Talwar SODA 2023 stronger clone (as restated in 000 Sec. 3.3)",
        BoundStatus.STRONGER_CLONE, "0 < eps0 <= 700, n >= 1", any_ldp,
        _generic(m.stronger_clone_numerical)))


def _register_blanket_closed(m) -> None:
    register(BoundSpec(
        "blanket_krr_thm31", BoundKind.UPPER, "004 (Balle et al.) Thm 3.1, shuffled k-RR",
        BoundStatus.PROVEN, "k-RR; resulting eps <= 1", _named("krr"), m.blanket_krr_theorem31,
        scope="specific"))
    register(BoundSpec(
        "blanket_hoeffding_generic", BoundKind.UPPER, "004 Thm 5.3 (Hoeffding, generic)",
        BoundStatus.PROVEN, "0 < eps0 <= 150", any_ldp, _generic(m.blanket_hoeffding_generic)))
    register(BoundSpec(
        "blanket_bennett_generic", BoundKind.UPPER,
        "004 Sec. 5.3 (Bennett, generic; corrected Lemma 5.6)", BoundStatus.PROVEN,
        "0 < eps0 <= 150", any_ldp, _generic(m.blanket_bennett_generic)))
    register(BoundSpec(
        "blanket_hoeffding", BoundKind.UPPER,
        "004 Lemmas 5.3, 5.5 with the randomizer's blanket (k-RR: Lemma 5.7)",
        BoundStatus.PROVEN, "discrete outputs with an enumerable output space (or k-RR)",
        discrete_output, m.blanket_hoeffding, scope="specific"))
    register(BoundSpec(
        "blanket_bennett", BoundKind.UPPER,
        "004 Lemmas 5.3, 5.6 (corrected) with the randomizer's blanket (k-RR: Lemma 5.7)",
        BoundStatus.PROVEN, "discrete outputs with an enumerable output space (or k-RR)",
        discrete_output, m.blanket_bennett, scope="specific"))


def _register_optimal(m) -> None:
    register(BoundSpec(
        "optimal-blanket", BoundKind.UPPER, m.REFERENCE_UPPER + " (optimal decomposition)",
        BoundStatus.PROVEN,
        "every registered randomizer, eps0 <= 150 (continuous: 50); proven when the candidate "
        "neighbour pairs are exhaustive (the result states otherwise)", any_ldp,
        m.optimal_blanket_epsilon,
        scope="specific"))
    register(BoundSpec(
        "exact-lower", BoundKind.LOWER, m.REFERENCE_LOWER + " (exact for one neighbour pair)",
        BoundStatus.PROVEN, "every registered randomizer, eps0 <= 150 (continuous: 50)", any_ldp,
        m.exact_lower_epsilon,
        scope="specific"))


def _register_variation_ratio(m) -> None:
    stronger = BoundStatus.STRONGER_CLONE
    register(BoundSpec(
        "variation-ratio", BoundKind.UPPER,
        m.REFERENCE_NUMERICAL + " with the randomizer's (p, beta, q) (Tables 1, 5)", stronger,
        "any eps0 > 0, n >= 2; randomizers without a table row use the generic row",
        any_ldp, m.numerical_bound, scope="specific"))
    register(BoundSpec(
        "variation-ratio-generic", BoundKind.UPPER,
        m.REFERENCE_NUMERICAL + " with the generic row p = q = e^eps0, beta = tanh(eps0/2)",
        stronger, "any eps0 > 0, n >= 2", any_ldp,
        lambda r, n, delta: m.numerical_bound(r, n, delta, generic=True)))
    register(BoundSpec(
        "variation-ratio-thm4.7", BoundKind.UPPER, m.REFERENCE_THM47 + " (analytic)", stronger,
        "(p+1) alpha/2 >= (1-alpha-alpha p) r/(1-2r) and Omega beyond the turning point of F "
        "(large enough n)", any_ldp, m.analytic_bound, scope="specific"))
    register(BoundSpec(
        "variation-ratio-thm4.8", BoundKind.UPPER, m.REFERENCE_THM48 + " (asymptotic)", stronger,
        "n >= 8 log(2/delta) / r, r = p beta / ((p - 1) q)", any_ldp, m.asymptotic_bound,
        scope="specific"))
    register(BoundSpec(
        "variation-ratio-lower", BoundKind.LOWER, m.REFERENCE_LOWER, BoundStatus.PROVEN,
        "finite output domain", discrete_output, m.lower_bound, scope="specific"))


def _register_gdp(m) -> None:
    register(BoundSpec(
        m.METHOD, BoundKind.UPPER, m.REFERENCE, m.STATUSES[0],
        "any eps0 > 0, n >= 2; asymptotic in n (Berry-Esseen term dropped)", any_ldp,
        m.gdp_bound, also=m.STATUSES[1:]))


def _register_heterogeneous(m) -> None:
    """Personalized budgets: these bounds apply to ``heterogeneous.PersonalizedUsers``
    (a randomizer and a BudgetProfile), never to a plain randomizer."""
    for spec in m.PERSONALIZED_SPECS:
        register(BoundSpec(spec.name, spec.kind, spec.reference, spec.status, spec.regime,
                           spec.applies_to, spec.compute, scope="personalized", also=spec.also))


_MODULES = (
    ("protocols.bounds.efmrtt", _register_efmrtt),
    ("protocols.bounds.clones", _register_clones),
    ("protocols.bounds.blanket_closed", _register_blanket_closed),
    ("protocols.bounds.optimal", _register_optimal),
    ("protocols.bounds.variation_ratio", _register_variation_ratio),
    ("protocols.bounds.gdp", _register_gdp),
    ("protocols.bounds.heterogeneous", _register_heterogeneous),
)


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module_name, registrar in _MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            # Only a missing project module (or a name missing from a project package, as in
            # "from protocols.bounds import engine") is tolerated; anything else is a real error.
            if not (error.name or "").startswith("protocols"):
                raise
            _MISSING[module_name] = str(error)
            continue
        registrar(module)


# ------------------------------------------------------------------------------------------
# Public API
# ------------------------------------------------------------------------------------------
def bound_names() -> list[str]:
    """Names of every registered bound, sorted."""
    _load()
    return sorted(_REGISTRY)


def missing_modules() -> dict[str, str]:
    """Bound modules that could not be imported (their bounds are not registered)."""
    _load()
    return dict(_MISSING)


def get_bound(name: str) -> BoundSpec:
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ParameterError("method", name,
                             f"unknown bound; choose one of {bound_names()}") from None


def all_bounds() -> list[BoundSpec]:
    return [get_bound(name) for name in bound_names()]


def applicable_bounds(randomizer) -> list[BoundSpec]:
    """The registered bounds that apply to ``randomizer`` (regime still checked at compute)."""
    return [spec for spec in all_bounds() if spec.applies_to(randomizer)]


def evaluate(name: str, randomizer, n: int, delta: float) -> BoundEvaluation:
    """Compute bound ``name`` for ``randomizer`` with n users at ``delta``.

    A bound that does not apply to the randomizer, or whose regime excludes (eps0, n, delta),
    gives an evaluation with ``error`` set to the reason (ParameterError's message) and no
    result. The wall time goes into ``seconds`` and into the result's ``seconds``.
    """
    spec = get_bound(name)
    started = time.perf_counter()
    if not spec.applies_to(randomizer):
        return BoundEvaluation(spec, n, delta, error=(
            f"does not apply to randomizer {getattr(randomizer, 'name', randomizer)!r} "
            f"({spec.regime})"))
    try:
        result = spec.compute(randomizer, n, delta)
    except ParameterError as error:
        return BoundEvaluation(spec, n, delta, error=str(error),
                               seconds=time.perf_counter() - started)
    seconds = time.perf_counter() - started
    result = _with_seconds(result, seconds)
    return BoundEvaluation(spec, n, delta, result=result, seconds=seconds)


def _with_seconds(result: BoundResult, seconds: float) -> BoundResult:
    from dataclasses import replace
    return replace(result, seconds=seconds)


def evaluate_many(randomizer, n: int, delta: float,
                  names: list[str] | None = None) -> list[BoundEvaluation]:
    """Evaluate the named bounds (default: every applicable one), in catalogue order."""
    if names is None:
        chosen = [spec.name for spec in applicable_bounds(randomizer)]
    else:
        chosen = []
        for name in names:
            get_bound(name)  # unknown names are an error, not a skip
            if name not in chosen:
                chosen.append(name)
    return [evaluate(name, randomizer, n, delta) for name in chosen]


# ------------------------------------------------------------------------------------------
# Documentation
# ------------------------------------------------------------------------------------------
@dataclass
class _Table:
    rows: list[list[str]] = field(default_factory=list)

    def markdown(self, header: list[str]) -> str:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |"
                  for row in self.rows]
        return "\n".join(lines)


NOTES = """## Notes

- **Two statuses at once.** 003's mu-GDP bound (`gspa-gdp`) drops a Berry-Esseen term
  (approximate) *and* rests on the stronger-clone decomposition (003 Thm 1, flagged by 000
  Sec. 3.3). `BoundResult.status` holds one value, so results carry `approximate` and say the
  rest in their note; the catalogue (`BoundSpec.also`, this table, the CLI's status column and
  the JSON `statuses` list) shows both.
- **Where the stronger-clone bounds fail.** 001's variation-ratio bound can fall below a
  *proven* lower bound: for 4-RR at eps0 = 4, n = 100, delta = 1e-6, 001 Thm 5.1 with every
  other user at x0 gives eps >= 3.9998 (nobody else moves away from x0 with probability
  ~0.005), while `variation-ratio` reports 3.687. With the other users at a third value the
  Thm 5.1 pair is exactly 001's reduction pair (so the two agree, as 001 Sec. 5 says), which is
  why the flaw only shows for other neighbouring datasets. tests/test_soundness_grid.py
  collects such points in a CSV file.
- **Caps.** Every shuffled eps0-LDP mechanism is eps0-DP, so the variation-ratio and GDP bounds
  are capped at eps0 (the note says so when the cap is active).
- **Conservative numbers.** Numerical bounds return the conservative end of their own
  numerical error (`epsilon_error` is the width of the final bracket); eps(delta) is inverted
  with the engine's `epsilon_of_delta`. Calibration (`shufflesim calibrate`) returns only
  certified values.
"""


def catalogue_markdown() -> str:
    """The catalogue as Markdown (the body of docs/bounds.md)."""
    table = _Table()
    for spec in all_bounds():
        table.rows.append([f"`{spec.name}`", spec.kind.value, spec.scope, spec.status_label,
                           spec.reference, spec.regime])
    parts = [
        "# Bound catalogue",
        "",
        "Generated from `protocols.bounds.catalogue` (`python -m protocols.bounds.catalogue > "
        "docs/bounds.md`); tests/test_catalogue.py checks that it lists every registered bound.",
        "",
        "Statuses: `proven`; `approximate` (an asymptotic constant is dropped); "
        "`relies-on-stronger-clone-reduction` (000 Sec. 3.3 shows that the stronger-clone "
        "reduction of Feldman et al., SODA 2023, uses a wrong post-processing; 001 and 003 "
        "inherit it). A bound with several caveats lists all of them. Scope `generic`: uses "
        "only eps0 (valid for every eps0-LDP randomizer); `specific`: uses the randomizer's "
        "output distribution or type; `personalized`: users with per-user budgets (evaluated "
        "on `protocols.bounds.heterogeneous.PersonalizedUsers`: a randomizer and the budget "
        "multiset). Outside its regime a bound reports the reason instead of a number.",
        "",
        table.markdown(["name", "kind", "scope", "status", "reference", "regime"]),
        "",
        NOTES,
    ]
    missing = missing_modules()
    if missing:
        parts += ["", "Not registered (module missing): " + ", ".join(sorted(missing)) + "."]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(catalogue_markdown(), end="")
