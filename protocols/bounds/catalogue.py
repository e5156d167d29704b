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

Each bound is registered beside its function, in its own module, into
:data:`protocols.bounds.spec.BOUNDS`; protocols/plugins.py declares each built-in bound's
module (``BOUNDS``), and protocols/bounds/declared.py what is known of it before that module is
imported (issue 32). So the names (:func:`bound_names`), the facts of one bound
(:func:`bound_facts`) and the bounds that apply to a randomizer (:func:`applicable_facts`) cost
no bound module; :func:`get_bound` imports only the module of the bound asked for, and
:func:`applicable_bounds` only those of the bounds that apply. The entry points of third-party
plug-ins are read whenever every name is needed (a name, a duplicate and an unknown name are
reported as when every module is imported).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from shufflesim.protocols.bounds.declared import FACTS
from shufflesim.protocols.bounds.result import BoundResult
from shufflesim.protocols.bounds.spec import (
    BOUNDS,
    BoundEvaluation,
    BoundFacts,
    BoundSpec,
    single_message,
)
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.registry import declared_names

__all__ = ["BoundEvaluation", "BoundFacts", "BoundSpec", "all_bounds", "applicable_bounds",
           "applicable_facts", "bound_facts", "bound_names", "catalogue_markdown", "evaluate",
           "evaluate_many", "get_bound"]


# ------------------------------------------------------------------------------------------
# Public API
# ------------------------------------------------------------------------------------------
def _known() -> list[BoundSpec | BoundFacts]:
    """Every bound in the catalogue's order (the declared ones, then third-party and registered
    by a call): a BoundSpec once its module is imported, else its declared facts (a declared
    bound without facts is imported)."""
    if BOUNDS.complete:
        return BOUNDS.values()
    extra = BOUNDS.undeclared()  # reads the entry points first, as reading every module does
    known = [BOUNDS.registered(name) or FACTS.get(name) or BOUNDS.get(name)
             for name in declared_names(BOUNDS.declared)]
    return known + [BOUNDS.registered(name) for name in extra]


def bound_names() -> list[str]:
    """Names of every registered bound, sorted."""
    return sorted(item.name for item in _known())


def get_bound(name: str) -> BoundSpec:
    """The bound registered as ``name``; ParameterError on the field "method" otherwise."""
    return BOUNDS.get(name)


def bound_facts(name: str) -> BoundSpec | BoundFacts:
    """What is known of bound ``name`` without computing it (name, kind, statuses, reference,
    ``applies_to``): its declared facts until its module is imported, else its BoundSpec;
    ParameterError on the field "method" for an unknown name."""
    return BOUNDS.registered(name) or FACTS.get(name) or BOUNDS.get(name)


def all_bounds() -> list[BoundSpec]:
    return [get_bound(name) for name in bound_names()]


def applicable_facts(randomizer) -> list[BoundSpec | BoundFacts]:
    """The bounds that apply to ``randomizer``, sorted by name, as :func:`bound_facts`: no
    bound module is imported."""
    return sorted((item for item in _known() if item.applies_to(randomizer)),
                  key=lambda item: item.name)


def applicable_bounds(randomizer) -> list[BoundSpec]:
    """The registered bounds that apply to ``randomizer``, sorted by name (regime still checked
    at compute); only their modules are imported."""
    specs = [get_bound(item.name) for item in applicable_facts(randomizer)]
    return [spec for spec in specs if spec.applies_to(randomizer)]


def evaluate(name: str, randomizer, n: int, delta: float) -> BoundEvaluation:
    """Compute bound ``name`` for ``randomizer`` with n users at ``delta``.

    A bound that does not apply to the randomizer, that needs a pure eps0-LDP randomizer while
    the randomizer has delta0 > 0 (``BoundSpec.accepts_delta0``), or whose regime excludes
    (eps0, n, delta), gives an evaluation with ``error`` set to the reason (ParameterError's
    message) and no result. The wall time goes into ``seconds`` and into the result's ``seconds``.
    """
    spec = get_bound(name)
    started = time.perf_counter()
    if not spec.applies_to(randomizer):
        reason = spec.regime if single_message(randomizer) else (
            "a multi-message randomizer (several messages per user); this single-message "
            "bound does not cover it: see the "
            "multi-message-* bounds")
        return BoundEvaluation(spec, n, delta, error=(
            f"does not apply to randomizer {getattr(randomizer, 'name', randomizer)!r} "
            f"({reason})"))
    refusal = spec.delta0_refusal(randomizer)
    if refusal is not None:
        return BoundEvaluation(spec, n, delta, error=refusal)
    try:
        result = spec.compute(randomizer, n, delta)
    except ParameterError as error:
        return BoundEvaluation(spec, n, delta, error=str(error),
                               seconds=time.perf_counter() - started)
    except MemoryError as error:  # one bound's arrays beyond memory: the others still run
        detail = f" ({error})" if str(error) else ""
        return BoundEvaluation(spec, n, delta, error=f"n = {n}: this bound's computation "
                               f"does not fit in memory{detail}",
                               seconds=time.perf_counter() - started)
    seconds = time.perf_counter() - started
    result = _with_seconds(result, seconds)
    return BoundEvaluation(spec, n, delta, result=result, seconds=seconds)


def _with_seconds(result: BoundResult, seconds: float) -> BoundResult:
    return dataclasses.replace(result, seconds=seconds)


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
- **Tightness (issue 31).** docs/tightness.md tabulates best proven upper / best proven lower
  for every single-message randomizer (tests/benchmarks/tightness_table.py). For binary RR and
  Duchi's 1-D mechanism (whose shuffled curve is binary RR's), `brr-exact` (the exact curve over
  every dataset) is within 1 % of `brr-exact-lower` where `optimal-blanket` was up to 50 %
  above: the blanket decomposition, not the numerics, was the loose side. For `laplace`,
  `optimal-blanket` maximises over a grid of pairs (approximate), so the best proven upper bound
  is 004 Lemma 5.8's `blanket_bennett_laplace` (every pair in [0, 1]); (0, 1) is proven the
  worst pair only among the centered pairs (docs/tightness.md). `laplace_binary` has a proven
  lower bound (`exact-lower`). Elsewhere the table sets the blanket decomposition against the
  best 000 Thm 14 triple: the small-n truth (every dataset pair) shows the blanket side loose
  for every categorical randomizer it reaches, and a search over mixed dataset pairs
  (protocols/bounds/numerical/pair_search.py) did not move the lower side at the points run;
  each ratio above 1.01 carries its code there.
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
                           "yes" if spec.accepts_delta0 else "no", spec.reference, spec.regime])
    parts = [
        "# Bound catalogue",
        "",
        "Generated from `shufflesim.protocols.bounds.catalogue` "
        "(`python -m shufflesim.protocols.bounds.catalogue > docs/bounds.md`); "
        "tests/test_catalogue.py checks that it lists every registered bound.",
        "",
        "Statuses: `proven`; `approximate` (an asymptotic constant is dropped); "
        "`relies-on-stronger-clone-reduction` (000 Sec. 3.3 shows that the stronger-clone "
        "reduction of Feldman et al., SODA 2023, uses a wrong post-processing; 001 and 003 "
        "inherit it). A bound with several caveats lists all of them. Scope `generic`: uses "
        "only eps0 (valid for every eps0-LDP randomizer); `specific`: uses the randomizer's "
        "output distribution or type; `personalized`: users with per-user budgets (evaluated "
        "on `protocols.bounds.personalized.bounds.PersonalizedUsers`: a randomizer and the budget "
        "multiset). Outside its regime a bound reports the reason instead of a number. Column "
        "`delta0 > 0`: whether the bound holds for (eps0, delta0)-LDP randomizers with "
        "delta0 > 0 (e.g. `gaussian`); where it says no, the bound refuses such a randomizer "
        "with the reason (it needs a pure eps0-LDP randomizer).",
        "",
        table.markdown(["name", "kind", "scope", "status", "delta0 > 0", "reference",
                        "regime"]),
        "",
        NOTES,
    ]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(catalogue_markdown(), end="")
