"""One resolved setting: the core sections (``[population]``, ``[randomizer]``,
``[estimator]``, ``[batch]``), their cross-checks, and every registered section present."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.estimators import estimator_names, make_estimator
from shufflesim.protocols.randomizers import (
    Categorical,
    Interval,
    Randomizer,
    make_randomizer,
    randomizer_names,
    randomizer_parameters,
)
from shufflesim.protocols.randomizers.registry import RANDOMIZERS
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.population.base import (
    CATEGORICAL,
    DataDistribution,
    budget_distribution_class,
    data_distribution_class,
)
from shufflesim.simulator.scenario.convert import (
    ParseContext,
    check_keys,
    closest,
    parse_dataclass,
    rekey,
    require_table,
)
from shufflesim.simulator.scenario.model import BatchOptions, BatchPath, Population, Settings
from shufflesim.simulator.scenario.sections import present_sections


def parse_settings(document: Mapping[str, Any], context: ParseContext) -> Settings:
    repetitions = document.get("repetitions", 1)
    if not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
        raise ScenarioError("repetitions", repetitions, "must be an integer >= 1")
    population = _parse_population(require_table(document, "population"), context)
    randomizer_name, params, randomizer = _parse_randomizer(
        require_table(document, "randomizer"), population
    )
    estimator_name, estimator = _parse_estimator(require_table(document, "estimator"), randomizer)
    batch_table = document.get("batch", {})
    if not isinstance(batch_table, Mapping):
        raise ScenarioError("batch", batch_table, "must be a table")
    batch = parse_dataclass(BatchOptions, batch_table, "batch", context)
    _check_batch(batch, population, randomizer)
    if estimator_name == "frequency" and not population.budget.is_constant:
        raise ScenarioError("estimator.name", estimator_name,
                            "is biased with per-user budgets (its support probabilities are "
                            "those of one eps0); use gspa_frequency or weighted_frequency")
    if getattr(estimator, "uses_budgets", False):
        # Personalized-budget estimators reduce (report, budget) pairs on the reports path.
        if batch.path is BatchPath.AGGREGATE:
            raise ScenarioError("batch.path", batch.path.value,
                                f"estimator {estimator_name} needs per-user reports and budgets "
                                "(the reports path)")
        if "pipeline" in document:
            raise ScenarioError("estimator.name", estimator_name,
                                "runs on the batch path only (not with [pipeline])")
    sections = {}
    for name, parser in present_sections(document):  # imports those sections' modules only
        table = document[name]
        if not isinstance(table, Mapping):
            raise ScenarioError(name, table, "must be a table")
        sections[name] = parser(table, context)
    return Settings(
        repetitions=repetitions,
        population=population,
        randomizer_name=randomizer_name,
        randomizer_params=params,
        randomizer=randomizer,
        estimator_name=estimator_name,
        estimator=estimator,
        batch=batch,
        sections=MappingProxyType(sections),
    )


def _parse_population(table: Mapping[str, Any], context: ParseContext) -> Population:
    check_keys(table, ("n", "data", "budget"), "population")
    n = table.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        raise ScenarioError("population.n", n, "must be an integer >= 2 (users shuffled "
                            "together; bounds and audits need at least two)")
    data_table = require_table(table, "data", "population")
    data = _parse_tagged(data_table, "population.data", data_distribution_class, context)
    try:
        data.check_sample_size(n)
    except ScenarioError as error:
        raise rekey(error, "population.data") from None
    budget_table = require_table(table, "budget", "population")
    budget = _parse_tagged(budget_table, "population.budget", budget_distribution_class, context)
    return Population(n=n, data=data, budget=budget)


def _parse_tagged(table, prefix: str, lookup, context: ParseContext):
    """A ``{ distribution = "<name>", ...params }`` table."""
    tag = table.get("distribution")
    if tag is None:
        raise ScenarioError(f"{prefix}.distribution", None, "is required")
    try:
        cls = lookup(tag)
    except ScenarioError as error:
        raise rekey(error, prefix) from None
    return parse_dataclass(cls, table, prefix, context, exclude=("distribution",))


def _parse_randomizer(table: Mapping[str, Any], population: Population):
    name = table.get("name")
    if name is None:
        raise ScenarioError("randomizer.name", None, "is required")
    if not isinstance(name, str) or name not in RANDOMIZERS:  # a known name: its module only
        close = closest(str(name), randomizer_names())
        hint = f"did you mean {close!r}? " if close else ""
        raise ScenarioError(
            "randomizer.name", name, f"unknown randomizer; {hint}choose one of {randomizer_names()}"
        )
    allowed = [p for p in randomizer_parameters(name) if p != "epsilon0"]
    params = {k: v for k, v in table.items() if k != "name"}
    if "epsilon0" in params:
        raise ScenarioError(
            "randomizer.epsilon0", params["epsilon0"],
            "the local budget comes from population.budget (e.g. epsilon0 there)",
        )
    check_keys(params, ["name"] + allowed, "randomizer")
    data = population.data
    if "domain_size" in allowed and "domain_size" not in params:
        if data.kind != CATEGORICAL:
            raise _numeric_data_for_categorical(data, name)
        params["domain_size"] = data.domain_size
    try:
        randomizer = make_randomizer(
            name, epsilon0=population.budget.reference_epsilon, **params
        )
    except (ParameterError, ScenarioError) as error:
        if getattr(error, "field", None) == "epsilon0":
            raise rekey(error, "population.budget") from None
        raise rekey(error, "randomizer") from None
    except (TypeError, ValueError) as error:  # e.g. a wrong type reaching numpy
        raise ScenarioError("randomizer", dict(table), f"invalid parameters: {error}") from None
    _check_data_fits(data, randomizer, name)
    if not population.budget.is_constant and not randomizer.supports_personalized:
        raise ScenarioError(
            "population.budget.distribution", population.budget.name,
            f"per-user budgets need a randomizer that supports them; {name} does not",
        )
    return name, tuple(sorted(params.items())), randomizer


def _numeric_data_for_categorical(data: DataDistribution, name: str) -> ScenarioError:
    return ScenarioError(
        "population.data.distribution", data.name,
        f"numeric data cannot feed the categorical randomizer {name} "
        "(give the data a domain_size or choose a numeric randomizer)",
    )


def _check_data_fits(data: DataDistribution, randomizer: Randomizer, name: str) -> None:
    """The data must lie in the randomizer's input domain."""
    domain = randomizer.input_domain
    if isinstance(domain, Categorical):
        if data.kind != CATEGORICAL:
            raise _numeric_data_for_categorical(data, name)
        if data.domain_size > domain.size:
            raise ScenarioError(
                "population.data.domain_size", data.domain_size,
                f"exceeds the input domain size {domain.size} of randomizer {name}",
            )
    elif isinstance(domain, Interval):
        low, high = data.support()
        if low < domain.low or high > domain.high:
            raise ScenarioError(
                "population.data", f"values in [{low}, {high}]",
                f"must lie in the input interval [{domain.low}, {domain.high}] of randomizer "
                f"{name}",
            )


def _parse_estimator(table: Mapping[str, Any], randomizer: Randomizer):
    check_keys(table, ("name",), "estimator")
    name = table.get("name")
    if name is None:
        raise ScenarioError("estimator.name", None, "is required")
    if not isinstance(name, str):
        raise ScenarioError("estimator.name", name, "must be a string")
    if name not in estimator_names():
        close = closest(name, estimator_names())
        hint = f"did you mean {close!r}? " if close else ""
        raise ScenarioError(
            "estimator.name", name, f"unknown estimator; {hint}choose one of {estimator_names()}"
        )
    try:
        estimator = make_estimator(name, randomizer)
    except (ParameterError, ScenarioError) as error:
        raise rekey(error, "estimator") from None
    return name, estimator


def _check_batch(batch: BatchOptions, population: Population, randomizer: Randomizer) -> None:
    if batch.path is BatchPath.AGGREGATE:
        if not randomizer.has_aggregate_sampler:
            raise ScenarioError(
                "batch.path", batch.path.value,
                f"randomizer {randomizer.name} has no sufficient-statistic sampler",
            )
        if population.data.kind != CATEGORICAL:
            raise ScenarioError("batch.path", batch.path.value, "needs categorical data")
        if not population.budget.is_constant:
            raise ScenarioError("batch.path", batch.path.value, "needs a constant budget")


