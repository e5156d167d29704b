"""Tests of the bound catalogue: every bound of the bounds issue is registered with reference,
regime and status; evaluation reports regime limits instead of dropping them; docs/bounds.md
lists every bound."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical.metric import is_metric
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

#: The bounds the issues asked for (H5a, H4b, H5b); the registry may hold more. Each check below
#: runs over the registry itself (tests/test_bound_conformance.py checks every registered bound's
#: contracts), so this set is only a floor, not a copy of the catalogue.
REQUIRED = {
    # H5a: EFMRTT19, FMT21 (closed, numerical, k-RR), stronger clone, Balle et al.
    "efmrtt19", "fmt21_closed", "fmt21_numerical", "fmt21_krr_closed",
    "stronger_clone_numerical", "blanket_krr_thm31", "blanket_hoeffding_generic",
    "blanket_bennett_generic", "blanket_hoeffding", "blanket_bennett",
    # H4b: optimal blanket and exact lower
    "optimal-blanket", "exact-lower",
    # H5b: variation ratio (001) and mu-GDP (003)
    "variation-ratio", "variation-ratio-generic", "variation-ratio-thm4.7",
    "variation-ratio-thm4.8", "variation-ratio-lower", "gspa-gdp",
}
#: Facts about named bounds (their papers): which rest on the stronger-clone reduction, which
#: are lower bounds.
STRONGER_CLONE = {"stronger_clone_numerical", "variation-ratio", "variation-ratio-generic",
                  "variation-ratio-thm4.7", "variation-ratio-thm4.8", "gspa-gdp"}
LOWER = {"exact-lower", "variation-ratio-lower"}
HOMOGENEOUS = sorted(s.name for s in cat.all_bounds() if s.scope != "personalized")
#: Bounds per pair of metric-DP randomizers (001 Table 2): they apply to those alone.
METRIC_PAIR = {s.name for s in cat.all_bounds() if s.applies_to is is_metric}


def test_required_bounds_are_registered():
    assert REQUIRED <= set(cat.bound_names())
    assert set(HOMOGENEOUS) | {s.name for s in cat.all_bounds()
                               if s.scope == "personalized"} == set(cat.bound_names())


@pytest.mark.parametrize("name", cat.bound_names())
def test_spec_fields(name):
    spec = cat.get_bound(name)
    assert spec.name == name
    assert spec.reference and spec.regime
    assert isinstance(spec.kind, BoundKind) and isinstance(spec.status, BoundStatus)
    assert spec.scope in ("generic", "specific", "personalized")
    assert spec.status not in spec.also and len(set(spec.also)) == len(spec.also)
    if spec.kind is BoundKind.LOWER:
        assert spec.status is BoundStatus.PROVEN
    if name in LOWER:
        assert spec.kind is BoundKind.LOWER
    elif name in REQUIRED:
        assert spec.kind is BoundKind.UPPER
    if name in REQUIRED:
        assert spec.scope in ("generic", "specific")
        assert (BoundStatus.STRONGER_CLONE in spec.statuses) == (name in STRONGER_CLONE)
    if name == "gspa-gdp":
        assert spec.statuses == (BoundStatus.APPROXIMATE, BoundStatus.STRONGER_CLONE)
        assert spec.status_label == "approximate, relies-on-stronger-clone-reduction"
    elif name in REQUIRED and name not in STRONGER_CLONE:
        assert spec.statuses == (BoundStatus.PROVEN,)


def test_applicability():
    """Every bound of the bounds issue applies to k-RR, none for another family does (metric
    pairs, multi-message protocols, the shuffled Gaussian: tests/test_bound_conformance.py checks
    that each registered bound applies to some randomizer); generic ones apply to any eps0-LDP
    randomizer; the k-RR / discrete ones not to Laplace."""
    krr = make_randomizer("krr", epsilon0=1.0, domain_size=4)
    laplace = make_randomizer("laplace", epsilon0=1.0)
    names_krr = {s.name for s in cat.applicable_bounds(krr)}
    names_lap = {s.name for s in cat.applicable_bounds(laplace)}
    assert REQUIRED <= names_krr <= set(HOMOGENEOUS) - METRIC_PAIR
    other_families = {s.name for s in cat.all_bounds()
                      if s.name.startswith(("multi-message", "gaussian"))}
    assert other_families and not other_families & names_krr
    metric = make_randomizer("laplace_metric", epsilon0=1.0)
    assert METRIC_PAIR and METRIC_PAIR <= {s.name for s in cat.applicable_bounds(metric)}
    assert {s.name for s in cat.all_bounds() if s.scope == "generic"} <= names_lap
    assert {"fmt21_krr_closed", "blanket_krr_thm31", "variation-ratio-lower",
            "blanket_bennett"}.isdisjoint(names_lap)
    assert {"variation-ratio", "optimal-blanket", "exact-lower", "gspa-gdp"} <= names_lap


def test_evaluate_reports_regime_limits_and_timing():
    krr = make_randomizer("krr", epsilon0=3.0, domain_size=4)
    out = cat.evaluate("efmrtt19", krr, 5000, 1e-6)
    assert not out.ok and out.error.startswith("epsilon0 = 3.0")
    record = out.record()
    assert record["epsilon"] is None and record["status"] == "proven"
    done = cat.evaluate("variation-ratio", krr, 5000, 1e-6)
    assert done.ok and done.seconds > 0 and done.result.seconds == done.seconds
    assert done.result.method == "variation-ratio"
    skipped = cat.evaluate("blanket_krr_thm31", make_randomizer("brr", epsilon0=1.0), 100, 1e-6)
    assert not skipped.ok and "does not apply" in skipped.error
    with pytest.raises(ParameterError, match="^method = 'nope'"):
        cat.get_bound("nope")
    with pytest.raises(ParameterError, match="^method = 'nope'"):
        cat.evaluate_many(krr, 100, 1e-6, ["variation-ratio", "nope"])


CONFORMANCE = [
    ("krr", dict(domain_size=4)), ("brr", {}), ("rappor", dict(domain_size=3)), ("duchi", {}),
    pytest.param("laplace_binary", {}, marks=pytest.mark.slow),
    pytest.param("summation", dict(precision=3), marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name,params", CONFORMANCE)
def test_every_bound_returns_a_result_or_a_reason(name, params):
    """Every registered bound, on several randomizers: either a BoundResult of the right kind
    and method with a finite epsilon in [0, eps0 + tiny], or a ParameterError reason."""
    randomizer = make_randomizer(name, epsilon0=1.5, **params)
    for out in cat.evaluate_many(randomizer, 60, 1e-5, cat.bound_names()):
        if out.ok:
            result = out.result
            assert result.method == out.spec.name and result.kind is out.spec.kind
            assert math.isfinite(result.epsilon) and result.epsilon >= 0
            assert result.epsilon <= 1.5 * (1 + 1e-6) + 1e-9
            assert result.epsilon_error >= 0 and result.delta == 1e-5
        else:
            assert out.error


def test_upper_bounds_above_lower_bounds_for_krr():
    """Proven upper bounds >= the exact lower bound (000 Thm 14) >= Thm 5.1's lower bound."""
    krr = make_randomizer("krr", epsilon0=2.0, domain_size=5)
    outs = {o.spec.name: o for o in cat.evaluate_many(krr, 200, 1e-6) if o.ok}
    exact = outs["exact-lower"].result.epsilon
    assert outs["variation-ratio-lower"].result.epsilon <= exact
    for name, out in outs.items():
        if out.spec.kind is BoundKind.UPPER and out.result.status is BoundStatus.PROVEN:
            assert out.result.epsilon >= exact, name


def test_docs_list_every_bound():
    text = (Path(__file__).resolve().parents[1] / "docs" / "bounds.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    for spec in cat.all_bounds():
        matching = [row for row in rows if row.startswith(f"| `{spec.name}` |")]
        assert len(matching) == 1, spec.name
        assert f"| {spec.status_label} |" in matching[0]
        assert f"| {spec.kind.value} |" in matching[0]
    assert len(rows) == len(cat.bound_names())


def test_markdown_is_generated_from_the_catalogue():
    text = cat.catalogue_markdown()
    for name in cat.bound_names():
        assert f"`{name}`" in text
