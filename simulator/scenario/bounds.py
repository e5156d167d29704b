"""The scenario section ``[bounds]`` and the ``bounds`` table of a run.

Keys: ``delta`` (a number or an array of central deltas, each in (0, 1)), ``methods`` (an
array of bound names from protocols.bounds.catalogue or composed methods of
protocols.accounting.compose; default: every bound that applies) and ``rounds`` (an integer
>= 1 or an array of them: the number T of identical rounds of the deployment; default 1).
Every sweep point with the section gets one row per (delta, rounds, bound):

* constant budget: the catalogue's bounds for the scenario's randomizer with n users
  (``catalogue.evaluate_many``);
* per-user budgets: the personalized bounds (scope ``personalized`` in the catalogue, from
  protocols.bounds.personalized.bounds) on ``PersonalizedUsers(randomizer, profile)``, with the
  profile of :func:`simulator.population.budgets.budget_profile` (exact group sizes, or the quantile
  multiset of a continuous distribution). The homogeneous bounds assume one eps0 and do not
  apply there.

Rounds (issue 16). With T = 1 the rows are the single-round bounds above. With T > 1 each
catalogue bound that composes (``composition_support``: optimal-blanket, exact-lower,
fmt21_numerical as fmt21-clone) is reported, under its catalogue name, as its composed value
over T identical rounds of n users (``compose_rounds([Round(randomizer, n, T)], delta, ...)``),
and every other one with the reason in ``error``. The composed-only methods (basic, advanced,
rdp-blanket, rdp-clone; fmt21-clone when named) are added when named in ``methods``, or by
default whenever ``rounds`` is given in the section (also at T = 1, so a rounds sweep has
every line from T = 1); a scenario without ``rounds`` gets exactly the single-round rows.
Per-user budgets: nothing composes (the personalized bounds give (eps, delta) values, not
privacy loss distributions); with T > 1 every row says so in ``error``. Every row has
``naive_epsilon``: T x the single-round optimal-blanket eps at delta
(protocols.accounting.baselines.naive_epsilon), the number a user would write down without a
composition theorem; it is *not* a guarantee at delta (its delta is T x delta), only a
reference line.

A bound that does not apply, or whose regime excludes the setting, gives a row with an empty
``epsilon`` and the reason in ``error`` (never silently dropped). An (eps0, delta0)-LDP
randomizer (``randomizer.delta0``, e.g. ``gaussian``) reaches the bounds with its delta0: 002
Thm 3.8 (``fmt21_approx_dp``) uses it, and every bound that needs pure eps0-LDP has a row
saying so. ``delta0`` is not a key of this section (it would be a second home for the
randomizer's parameter; the section refuses it with that remedy). Rows carry no timings, so a
re-run writes the same rows. Results are cached per (randomizer, budget multiset, delta, bound)
within a process: sweep points that differ only in, e.g., the estimator share them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import pyarrow as pa

from shufflesim.protocols.accounting import baselines as accounting_baselines
from shufflesim.protocols.accounting import compose as accounting
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.personalized.bounds import PERSONALIZED_SPECS, PersonalizedUsers
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.registry import closest
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.population.budgets import budget_profile
from shufflesim.simulator.results.records import Record
from shufflesim.simulator.results.tables import TABLE_SCHEMAS, register_table_schema
from shufflesim.simulator.scenario.convert import ParseContext, parse_dataclass
from shufflesim.simulator.scenario.model import Scenario
from shufflesim.simulator.scenario.producers import register_table_producer
from shufflesim.simulator.scenario.sections import register_section

SECTION = "bounds"
TABLE = "bounds"
HOMOGENEOUS = "shuffled randomizer (one eps0)"

@dataclass(frozen=True)
class BoundRow(Record):
    """One row of the ``bounds`` table (docs/results.md): its columns, in order."""

    point: Annotated[int, pa.int32()]
    overrides: str
    randomizer: str
    n: int
    epsilon0: float
    budget: str
    delta: float
    rounds: int
    method: str
    kind: str
    mechanism: str
    epsilon: float | None
    epsilon_error: float | None
    naive_epsilon: float | None
    status: str
    statuses: str
    reference: str
    note: str
    error: str


BOUNDS_SCHEMA = BoundRow.schema()
#: The columns a catalogue evaluation's record (BoundEvaluation.record) fills as they are.
_EVALUATION_COLUMNS = ("method", "kind", "epsilon", "epsilon_error", "status", "reference",
                       "note", "error")


@dataclass(frozen=True)
class BoundsSection:
    """The parsed ``[bounds]`` section."""

    delta: tuple[float, ...]
    methods: tuple[str, ...] | None = None
    #: None: not given (T = 1, single-round rows only); else the rounds T of each row group.
    rounds: tuple[int, ...] | None = None

    @property
    def round_counts(self) -> tuple[int, ...]:
        return (1,) if self.rounds is None else self.rounds

    def __post_init__(self) -> None:
        if len(self.delta) == 0:
            raise ScenarioError("delta", self.delta, "needs at least one value")
        for i, d in enumerate(self.delta):
            if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 < d < 1:
                raise ScenarioError(f"delta[{i}]", d, "must lie in the open interval (0, 1)")
        if self.rounds is not None:
            if len(self.rounds) == 0:
                raise ScenarioError("rounds", list(self.rounds), "needs at least one value")
            for i, t in enumerate(self.rounds):
                check_rounds(t, f"rounds[{i}]")
        if self.methods is not None:
            names = catalogue.bound_names() + [m for m in accounting.composed_method_names()
                                               if m not in catalogue.bound_names()]
            for i, name in enumerate(self.methods):
                if name not in names:
                    close = closest(name, names)
                    hint = f"did you mean {close!r}? " if close else ""
                    raise ScenarioError(f"methods[{i}]", name,
                                        f"unknown bound; {hint}choose one of {names}")


#: Most rounds of one row (a deployment of a million rounds is beyond any use here).
MAX_ROUNDS = 1_000_000


def check_rounds(value, key: str) -> None:
    """A number of rounds: an integer in [1, MAX_ROUNDS] (ScenarioError keyed ``key``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(key, value, "must be an integer >= 1 (the number of rounds)")
    if not 1 <= value <= MAX_ROUNDS:
        raise ScenarioError(key, value, f"must be an integer in [1, {MAX_ROUNDS}]")


def parse_section(table: Mapping[str, Any], context: ParseContext) -> BoundsSection:
    """Parse ``[bounds]`` (errors keyed ``bounds.<key>``)."""
    table = dict(table)
    if "delta0" in table:  # one home: the randomizer's own parameter (its noise depends on it)
        raise ScenarioError(f"{SECTION}.delta0", table["delta0"],
                            "delta0 is a parameter of the (eps0, delta0)-LDP randomizer: set "
                            "randomizer.delta0 (e.g. [randomizer] name = \"gaussian\", "
                            "delta0 = 1e-12); the bounds read it from there")
    if isinstance(table.get("delta"), (int, float)) and not isinstance(table["delta"], bool):
        table["delta"] = [table["delta"]]
    if "rounds" in table and not isinstance(table["rounds"], (list, tuple)):
        try:
            check_rounds(table["rounds"], "rounds")
        except ScenarioError as error:
            raise ScenarioError(f"{SECTION}.rounds", table["rounds"], error.requirement) from None
        table["rounds"] = [table["rounds"]]
    return parse_dataclass(BoundsSection, table, SECTION, context)


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------
_CACHE: dict[tuple, dict] = {}


def _profile_label(profile) -> str:
    values, counts = profile.budget_counts()
    if values.size == 1:
        return f"constant {values[0]:g}"
    if values.size <= 6:
        return ", ".join(f"{c} x {v:g}" for v, c in zip(values, counts, strict=True))
    return f"{values.size} distinct budgets in [{values[0]:g}, {values[-1]:g}]"


def _records(settings, delta: float, methods) -> list[dict]:
    """The single-round rows of one (setting, delta): catalogue bounds only (cached)."""
    n = settings.population.n
    budget = settings.population.budget
    profile = budget_profile(budget, n)
    if budget.is_constant:
        subject, mechanisms = settings.randomizer, {}
    else:
        subject = PersonalizedUsers(settings.randomizer, profile)
        mechanisms = {spec.name: spec.mechanism for spec in PERSONALIZED_SPECS}
    key = (settings.randomizer_name, settings.randomizer_params, float(settings.epsilon0),
           profile.epsilons.tobytes(), profile.counts.tobytes(), profile.deltas.tobytes(),
           float(delta), methods)
    if key not in _CACHE:
        evaluations = catalogue.evaluate_many(subject, n, float(delta),
                                              None if methods is None else list(methods))
        rows = []
        for ev in evaluations:
            record = ev.record()
            rows.append({
                **{column: record[column] for column in _EVALUATION_COLUMNS},
                "budget": _profile_label(profile),
                "mechanism": mechanisms.get(record["method"], HOMOGENEOUS),
                "statuses": ", ".join(record["statuses"]),
            })
        _CACHE[key] = rows
    return _CACHE[key]


#: Composed methods that are not catalogue bounds, added by default when ``rounds`` is given
#: (fmt21-clone only when named: it is the composed fmt21_numerical row).
DEFAULT_COMPOSED_ONLY = ("basic", "advanced", "rdp-blanket", "rdp-clone")
_PERSONALIZED_MECHANISMS = {spec.name: spec.mechanism for spec in PERSONALIZED_SPECS}


def _catalogue_names(settings, methods) -> list[str]:
    """The catalogue bounds of the rows: the named ones, or every applicable one."""
    if methods is not None:
        names = set(catalogue.bound_names())
        return list(dict.fromkeys(m for m in methods if m in names))
    subject = settings.randomizer
    if not settings.population.budget.is_constant:
        profile = budget_profile(settings.population.budget, settings.population.n)
        subject = PersonalizedUsers(settings.randomizer, profile)
    return [spec.name for spec in catalogue.applicable_bounds(subject)]


def _composed_only(methods, explicit_rounds: bool) -> list[str]:
    catalogue_names = set(catalogue.bound_names())
    if methods is not None:
        return list(dict.fromkeys(m for m in methods if m not in catalogue_names))
    return list(DEFAULT_COMPOSED_ONLY) if explicit_rounds else []


def _composed(settings, method: str, delta: float, rounds: int):
    """compose_rounds over ``rounds`` identical rounds (cached): a ComposedResult or the
    reason (str) it has no value."""
    key = ("composed", settings.randomizer_name, settings.randomizer_params,
           float(settings.epsilon0), settings.population.n, float(delta), int(rounds), method)
    if key not in _CACHE:
        try:
            _CACHE[key] = accounting.compose_rounds(
                [accounting.Round(settings.randomizer, settings.population.n, int(rounds))],
                float(delta), method)
        except ParameterError as error:
            _CACHE[key] = str(error)
    return _CACHE[key]


def _naive(settings, delta: float, rounds: int) -> float | None:
    """T x the single-round optimal-blanket eps at delta (not a guarantee at delta)."""
    if not settings.population.budget.is_constant:
        return None
    key = ("naive", settings.randomizer_name, settings.randomizer_params,
           float(settings.epsilon0), settings.population.n, float(delta))
    if key not in _CACHE:
        try:
            _CACHE[key] = accounting_baselines.naive_epsilon(
                [accounting.Round(settings.randomizer, settings.population.n, 1)], float(delta))
        except ParameterError:
            _CACHE[key] = None
    one = _CACHE[key]
    return None if one is None else float(one) * int(rounds)


def _composed_row(settings, name: str, method: str | None, why: str, delta: float,
                  rounds: int, budget: str) -> dict:
    """A row of a composed value: ``name`` (a catalogue bound or a composed method) through
    ``method``; without a method, the reason ``why`` in ``error``."""
    row = {"budget": budget, "method": name, "mechanism": HOMOGENEOUS, "epsilon": None,
           "epsilon_error": None, "note": "", "error": ""}
    if method is None:
        spec = catalogue.get_bound(name)
        return {**row, "kind": spec.kind.value, "status": spec.status.value,
                "statuses": spec.status_label, "reference": spec.reference,
                "mechanism": _PERSONALIZED_MECHANISMS.get(name, HOMOGENEOUS),
                "error": f"does not compose over {rounds} rounds: {why}"}
    spec = accounting.get_composed_method(method)
    row.update(kind=spec.kind.value, status=spec.status.value, statuses=spec.status.value,
               reference=spec.reference)
    result = _composed(settings, method, delta, rounds)
    if isinstance(result, str):
        row["error"] = f"composed over {rounds} rounds as {method}: {result}"
        return row
    via = f"composed over {rounds} rounds" + (f" as {method}" if method != name else "")
    row.update(epsilon=float(result.epsilon), reference=result.reference or spec.reference,
               note=f"{via}; {result.note}" if result.note else via)
    return row


def _round_records(settings, delta: float, rounds: int, section) -> list[dict]:
    """The rows of one (setting, delta, rounds); see the module docstring."""
    methods = section.methods
    explicit = section.rounds is not None
    constant = settings.population.budget.is_constant
    label = _profile_label(budget_profile(settings.population.budget, settings.population.n))
    composed_only = _composed_only(methods, explicit)
    if rounds == 1:
        names = _catalogue_names(settings, methods)
        rows = list(_records(settings, delta, tuple(names) if methods is not None else None)) \
            if names or methods is None else []
        extra = [_composed_row(settings, m, m, "", delta, 1, label) for m in composed_only] \
            if constant else []
    else:
        rows = []
        for name in _catalogue_names(settings, methods):
            if not constant:
                rows.append(_composed_row(
                    settings, name, None, "per-user budgets: the personalized bounds give an "
                    "(eps, delta) value, not a privacy loss distribution", delta, rounds, label))
                continue
            method, why = accounting.composition_support(name)
            rows.append(_composed_row(settings, name, method, why, delta, rounds, label))
        extra = [_composed_row(settings, m, m, "", delta, rounds, label) for m in composed_only] \
            if constant else []
    if not constant and composed_only:
        extra = [{**_composed_row(settings, m, m, "", delta, rounds, label), "epsilon": None,
                  "note": "", "error": "per-user budgets: composition over rounds needs one "
                  "eps0 (a constant budget)"} for m in composed_only]
    naive = _naive(settings, delta, rounds)
    return [{**row, "rounds": int(rounds), "naive_epsilon": naive} for row in rows + extra]


def produce(scenario: Scenario, progress=None) -> dict[str, pa.Table]:
    """The ``bounds`` table of a run (empty dict when no point has a ``[bounds]`` section)."""
    rows: list[dict] = []
    for point, section in scenario.points_with(SECTION):
        settings = point.settings
        for delta in section.delta:
            for rounds in section.round_counts:
                for record in _round_records(settings, delta, rounds, section):
                    rows.append(BoundRow(
                        point=point.index, overrides=point.overrides_json(),
                        randomizer=settings.randomizer_name, n=settings.population.n,
                        epsilon0=float(settings.epsilon0), delta=float(delta), **record))
    if not rows:
        return {}
    # inf (no certified eps) stays inf; NaN -> null (Record.table)
    return {TABLE: BoundRow.table(rows)}


register_section(SECTION, parse_section)
if TABLE_SCHEMAS.registered(TABLE) is None:  # reads no other table module (issue 32)
    register_table_schema(TABLE, BOUNDS_SCHEMA)
register_table_producer(TABLE, produce, per_point=True)
