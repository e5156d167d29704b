"""The scenario section ``[learning]`` and the ``learning`` table of a run (issue 19).

Keys: the fields of :class:`LearningSection` (all optional). The clients' budgets come from the
scenario's ``population.budget`` (any registered distribution or 003 Table 2 preset, e.g.
``{ distribution = "preset", preset = "gspa-unif2" }``): one draw per client and repetition.
The core sections (``[population]``, ``[randomizer]``, ``[estimator]``) are still required by
every scenario and run their own (small) frequency simulation; only ``population.budget`` is
read here.

Every sweep point with the section is one unit of work (a per-point table producer, resumable
and spread over workers); repetition r of point p draws all its randomness (split, budgets,
initialization, client order, noise) from ``SeedSequence(seed, spawn_key=(p, LEARNING_KEY, r))``,
so the rows are the same whatever the executor and the number of workers. Rows: one per
(point, repetition, epoch), epoch 0 being the initial model, with the privacy accounting of
the run after that many epochs (protocols.learning.accounting; docs/learning.md).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pyarrow as pa

from shufflesim.protocols.learning.accounting import BOUND_COLUMNS, RunPrivacy, account_epochs
from shufflesim.protocols.learning.randomizers import GaussianGradient
from shufflesim.simulator.errors import ScenarioError, UserError
from shufflesim.simulator.learning.data import Dataset, Split, load_dataset, prepare
from shufflesim.simulator.learning.files import WHERE, expand_variables
from shufflesim.simulator.learning.train import LearningConfig, LearningOptions, train_on_split
from shufflesim.simulator.results.records import EXPAND, Record
from shufflesim.simulator.results.tables import TABLE_SCHEMAS, register_table_schema
from shufflesim.simulator.scenario.convert import ParseContext, parse_dataclass
from shufflesim.simulator.scenario.model import Scenario
from shufflesim.simulator.scenario.producers import register_table_producer
from shufflesim.simulator.scenario.sections import register_section

SECTION = "learning"
TABLE = "learning"
#: The second element of every learning unit's spawn key ("lrn").
LEARNING_KEY = 0x6C726E


@dataclass(frozen=True)
class LearningSection(LearningOptions):
    """The parsed ``[learning]`` section (docs/learning.md describes every key).

    ``clients_per_step``: clients sampled *without replacement* per step (002 Sec. 5.2; each
    client once per epoch). ``examples_per_client``: examples each client holds (003 Alg. 3's
    m). ``clip_point``: ``example`` (clip every example, then the client averages: the
    default) or ``client-mean`` (average, then clip the mean: 003 Alg. 3 line 12 as printed;
    with ``privacy_unit = "example"`` one example is then bounded by 2 clip, not 2 clip / m, and
    the accounting says so; protocols.learning.clipping).
    ``privacy_unit``: ``client`` (sensitivity 2 clip) or ``example`` (2 clip / m, 003's
    sigma; Gaussian only). ``pca_components = 0`` keeps the raw features. ``scale_features``:
    divide the features by the training rows' root-mean-square norm (false: keep the scale of
    the input, e.g. MNIST pixels in [0, 1] through the PCA, as 003). ``delta``: the
    central delta of every bound of the accounting. ``clip_nonprivate``: with
    ``randomizer = "none"``, clip per example at ``clip`` (true, the default) or train plain
    SGD without clipping (false: the non-private baseline of 003 Fig. 4 and of Abadi et al.
    2016, Sec. 5.2)."""

    scale_features: bool = True
    clip_nonprivate: bool = True
    repetitions: int = 1
    delta: float = 1e-4

    def __post_init__(self):
        if not isinstance(self.repetitions, int) or self.repetitions < 1:
            raise ScenarioError("repetitions", self.repetitions, "must be an integer >= 1")
        if self.pca_components < 0:
            raise ScenarioError("pca_components", self.pca_components,
                                "must be >= 0 (0: no PCA)")
        if not 0 < self.delta < 1:
            raise ScenarioError("delta", self.delta, "must lie in (0, 1)")
        if self.randomizer == "gaussian" and not 0 < self.delta0 < 1:
            raise ScenarioError("delta0", self.delta0, "must lie in (0, 1)")
        self.config(1.0)  # the training options' own checks
        if self.randomizer == "gaussian":  # its checks (calibration, privacy_unit) before the run
            GaussianGradient(self.clip, self.calibration, self.examples_per_client,
                             self.privacy_unit, self.clip_point)

    def config(self, epsilon0) -> LearningConfig:
        options = {f.name: getattr(self, f.name) for f in fields(LearningOptions)}
        if self.randomizer == "none" and not self.clip_nonprivate:
            options["clip"] = None  # plain SGD: the non-private baseline
        return LearningConfig(**{**options, "pca_components": self.pca_components or None,
                                 "epsilon0": epsilon0})


@dataclass(frozen=True)
class LearningRow(Record):
    """One row of the ``learning`` table (docs/results.md): one epoch of one repetition; the
    ``epsilon_<bound>`` columns, one per bound the accounting computes (protocols'
    ``BOUND_COLUMNS``), are generated (:meth:`extra_columns`) and held in ``epsilon``."""

    point: Annotated[int, pa.int32()]
    overrides: str
    repetition: Annotated[int, pa.int32()]
    epoch: Annotated[int, pa.int32()]
    step: int
    data: str
    model: str
    randomizer: str
    budget: str
    n_clients: int
    clients_per_step: int
    examples_per_client: int
    epsilon0_min: float | None
    epsilon0_mean: float | None
    epsilon0_max: float | None
    delta0: float
    delta: float
    train_loss: float
    train_accuracy: float
    test_loss: float
    test_accuracy: float
    epsilon: Mapping[str, float | None] = field(metadata=EXPAND)
    accounting_note: str = ""

    @classmethod
    def extra_columns(cls) -> tuple[pa.Field, ...]:
        return tuple(pa.field(f"epsilon_{name}", pa.float64(), nullable=True)
                     for name in BOUND_COLUMNS)


LEARNING_SCHEMA = LearningRow.schema()


def parse_section(table: Mapping[str, Any], context: ParseContext) -> LearningSection:
    """Parse ``[learning]`` (errors keyed ``learning.<key>``); a data path is resolved against
    the scenario's directory, except one that names an environment variable (``$NAME``): that
    is expanded when the data is loaded, relative to the working directory (issue 33)."""
    section = parse_dataclass(LearningSection, table, SECTION, context)
    if section.data != "digits" and "$" not in section.data:
        path = Path(section.data).expanduser()
        if not path.is_absolute():
            path = context.base_dir / path
        if not path.exists():  # refused before the run, not when its unit starts
            where = ("" if path.suffix.lower() in (".csv", ".parquet", ".pq")
                     else f"; {WHERE}")  # MNIST-format data: where to get it, where to put it
            raise ScenarioError(f"{SECTION}.data", section.data,
                                f"no such file or folder ({path}){where}")
        section = _replace(section, data=str(path))
    return section


def _replace(section: LearningSection, **changes) -> LearningSection:
    values = {name: getattr(section, name) for name in LearningSection.__dataclass_fields__}
    values.update(changes)
    return LearningSection(**values)


def budget_label(budget) -> str:
    """A short name of a budget distribution: the preset's name, or the distribution's name
    with its parameters."""
    preset = getattr(budget, "preset", None)
    if preset is not None:
        return str(preset)
    fields = getattr(budget, "__dataclass_fields__", {})
    params = ", ".join(f"{k}={getattr(budget, k)!r}" for k in fields if not k.startswith("_"))
    return f"{budget.name}({params})"


@functools.lru_cache(maxsize=8)
def _dataset(data: str, label_column: str) -> Dataset:
    return load_dataset(data, label_column)


@functools.lru_cache(maxsize=4)
def _fixed_split(data: str, label_column: str, pca_components: int, scale: bool) -> Split:
    """A data set with its own train/test split (MNIST) needs no seed: prepared once."""
    return prepare(_dataset(data, label_column), np.random.default_rng(0),
                   pca_components=pca_components or None, scale=scale)


def run_repetition(section: LearningSection, budget, seed: np.random.SeedSequence
                   ) -> tuple[list[dict], dict]:
    """Train once and account for it: (rows per epoch, run facts)."""
    split_seq, budget_seq, init_seq, train_seq = seed.spawn(4)
    data = expand_variables(section.data)  # the cache keys on the path, not on "$NAME"
    dataset = _dataset(data, section.label_column)
    if dataset.n_train is not None:  # the data set's own split: the same PCA every time
        split = _fixed_split(data, section.label_column, section.pca_components,
                             section.scale_features)
    else:
        split = prepare(dataset, np.random.default_rng(split_seq),
                        test_fraction=section.test_fraction,
                        pca_components=section.pca_components or None,
                        scale=section.scale_features)
    n_clients = split.x_train.shape[0] // section.examples_per_client
    if n_clients < 1:
        raise UserError(f"learning.examples_per_client = {section.examples_per_client}: more "
                        f"than the {split.x_train.shape[0]} training examples")
    eps = np.asarray(budget.sample_budgets(n_clients, np.random.default_rng(budget_seq)),
                     dtype=float).reshape(n_clients)
    config = section.config(tuple(eps.tolist()))
    result = train_on_split(config, split, init_seq, train_seq)
    privacy = None
    if section.randomizer != "none":
        sensitivity = sigma = unit_sensitivity = None
        if section.randomizer == "gaussian":
            gaussian = GaussianGradient(section.clip, section.calibration,
                                        section.examples_per_client, section.privacy_unit,
                                        section.clip_point)
            sensitivity, sigma = gaussian.sensitivity, result.sigma
            unit_sensitivity = gaussian.unit_sensitivity
        privacy = RunPrivacy(section.randomizer, eps, n_clients, section.clients_per_step,
                             section.delta, section.delta0 if sigma is not None else 0.0,
                             sigma, sensitivity or 0.0, client_sensitivity=2.0 * section.clip,
                             unit_sensitivity=unit_sensitivity or 0.0)
    rows = []
    if privacy is None:
        accounts = [(dict.fromkeys(BOUND_COLUMNS), "no randomizer: no privacy")] * len(result.rows)
    else:
        accounts = account_epochs(privacy, [int(row["epoch"]) for row in result.rows])
    for row, (bounds, note) in zip(result.rows, accounts, strict=True):
        rows.append({**row, **{f"epsilon_{k}": v for k, v in bounds.items()},
                     "accounting_note": note})
    private = section.randomizer != "none"
    facts = {"n_clients": n_clients, "data": dataset.name,
             "epsilon0_min": float(eps.min()) if private else None,
             "epsilon0_mean": float(eps.mean()) if private else None,
             "epsilon0_max": float(eps.max()) if private else None}
    return rows, facts


def _keyed(function, *args):
    """``function(*args)``; a UserError naming a bare ``[learning]`` key (the data and
    training code are shared with the API, which has no section) is re-raised naming
    ``learning.<key>``, as the scenario file spells it."""
    try:
        return function(*args)
    except UserError as error:
        text = str(error)
        key = text.split(" ", 1)[0]
        if key in LearningSection.__dataclass_fields__ and text[len(key):].startswith(" = "):
            raise UserError(f"{SECTION}.{text}") from None
        raise


def produce(scenario: Scenario, progress=None) -> dict[str, pa.Table]:
    """The ``learning`` table of a run (empty dict when no point has a ``[learning]``)."""
    records: list[dict] = []
    for point in scenario.points:
        section = point.settings.sections.get(SECTION)
        if section is None:
            continue
        budget = point.settings.population.budget
        for rep in range(section.repetitions):
            seed = np.random.SeedSequence(entropy=scenario.seed,
                                          spawn_key=(point.index, LEARNING_KEY, rep))
            rows, facts = _keyed(run_repetition, section, budget, seed)
            context = {
                "point": point.index, "overrides": point.overrides_json(), "repetition": rep,
                "data": Path(section.data).name, "model": section.model,
                "randomizer": section.randomizer, "budget": budget_label(budget),
                "clients_per_step": section.clients_per_step,
                "examples_per_client": section.examples_per_client,
                "delta0": section.delta0 if section.randomizer == "gaussian" else 0.0,
                "delta": section.delta, **facts,
            }
            records += [{**context, **row} for row in rows]
            if progress is not None:
                progress(rep + 1, section.repetitions)
    if not records:
        return {}
    return {TABLE: LearningRow.from_columns(
        {name: [r.get(name) for r in records] for name in LearningRow.columns()})}


register_section(SECTION, parse_section)
if TABLE_SCHEMAS.registered(TABLE) is None:  # reads no other table module (issue 32)
    register_table_schema(TABLE, LEARNING_SCHEMA)
register_table_producer(TABLE, produce, per_point=True)
