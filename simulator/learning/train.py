"""Shuffled DP-SGD (issue 19): 002 Sec. 5.2 (Prop. 5.3 / Thm 3.8) and 003 Algorithm 3.

Clients hold examples (``examples_per_client`` each, default 1 as in 002). Every epoch the
clients are permuted and cut into consecutive blocks of ``clients_per_step``: each step takes a
set of clients chosen *without replacement* (each client reports once per epoch; 003 Algorithm 3
uses one client per step, ``clients_per_step = 1``). In a step, every chosen client

1. computes the per-example gradients of its examples at the current parameters,
2. clips each to L2 norm ``clip`` and averages them (per-example clipping, see
   :mod:`shufflesim.protocols.learning.clipping`; ``clip_point = "client-mean"`` averages first
   and clips the mean, 003 Algorithm 3 line 12 as printed),
3. randomizes the mean with its own budget: ``"gaussian"`` ((eps0, delta0), analytic
   calibration), ``"duchi"`` (pure eps0, Duchi et al. L2 ball) or ``"none"``;

the shuffler permutes the reports (a no-op for the average, kept so the pipeline is explicit:
the analyzer sees only the multiset), and the server steps with their average:

    theta <- theta - lr_t (mean of reports + l2 theta).

``l2`` is a data-independent ridge term applied by the server (post-processing, no privacy
cost); ``l2 = 1 / (C_sk n_train)`` is scikit-learn LogisticRegression's objective with C = C_sk.

All randomness comes from one ``numpy.random.SeedSequence``: ``spawn(3)`` gives the split, the
initialization and the training streams, so a seed gives the same rows on any machine and any
worker count (a run is sequential; a sweep's units will each get their own spawned sequence).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shufflesim.protocols.learning.clipping import CLIP_POINTS
from shufflesim.protocols.learning.models import Model, log_softmax, make_model
from shufflesim.protocols.learning.randomizers import RANDOMIZERS, DuchiL2, GaussianGradient
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.learning.data import (
    Dataset,
    Split,
    load_dataset,
    prepare,
    single_threaded_blas,
)

SCHEDULES = ("constant", "inverse_sqrt", "cosine")


@dataclass(frozen=True)
class LearningOptions:
    """The training options of the ``[learning]`` section, declared once (docs/learning.md
    describes every key): the section (simulator/learning/section.py, ``LearningSection``) adds
    its own keys to them, and one training run (:class:`LearningConfig`) widens a few."""

    data: str = "digits"
    label_column: str = "label"
    test_fraction: float = 0.25
    pca_components: int = 60
    model: str = "softmax"
    hidden: int = 64
    randomizer: str = "gaussian"
    delta0: float = 1e-5
    clip: float = 1.0
    clip_point: str = "example"
    calibration: str = "analytic"
    privacy_unit: str = "client"
    examples_per_client: int = 1
    clients_per_step: int = 1
    epochs: int = 10
    learning_rate: float = 0.05
    schedule: str = "constant"
    l2: float = 0.0


@dataclass(frozen=True)
class LearningConfig(LearningOptions):
    """Options of one training run: the section's options, with ``epsilon0`` and ``delta0`` a
    scalar or one value per client (length ``n_clients``, in the order of the clients;
    personalized budgets of 003), ``pca_components`` None for no PCA and ``clip`` None
    without a randomizer."""

    pca_components: int | None = 60
    delta0: float | tuple = 1e-5
    clip: float | None = 1.0
    epsilon0: float | tuple = 1.0

    def __post_init__(self):
        def bad(key, requirement):
            raise UserError(f"learning.{key} = {getattr(self, key)!r}: {requirement}")

        if self.randomizer not in RANDOMIZERS:
            bad("randomizer", f"must be one of {list(RANDOMIZERS)}")
        if self.schedule not in SCHEDULES:
            bad("schedule", f"must be one of {list(SCHEDULES)}")
        if self.clip_point not in CLIP_POINTS:
            bad("clip_point", f"must be one of {list(CLIP_POINTS)}")
        if self.model not in ("softmax", "mlp"):
            bad("model", "must be 'softmax' or 'mlp'")
        for key in ("examples_per_client", "clients_per_step", "epochs", "hidden"):
            value = getattr(self, key)
            if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
                bad(key, "must be an integer >= 1")
        if not self.learning_rate > 0:
            bad("learning_rate", "must be > 0")
        if not self.l2 >= 0:
            bad("l2", "must be >= 0")
        if self.randomizer != "none" and (self.clip is None or not self.clip > 0):
            bad("clip", f"must be > 0 with randomizer = {self.randomizer!r}")
        if self.privacy_unit == "example" and self.randomizer == "duchi":
            bad("privacy_unit", "'example' needs randomizer = 'gaussian' (or 'none')")


@dataclass
class TrainingResult:
    """Per-epoch rows (epoch 0 = the initial model) and the final parameters."""

    rows: list[dict] = field(default_factory=list)
    theta: np.ndarray | None = None
    n_clients: int = 0
    steps_per_epoch: int = 0
    sigma: np.ndarray | None = None


def learning_rate(config: LearningConfig, step: int, total_steps: int) -> float:
    """``constant``: lr; ``inverse_sqrt``: lr / sqrt(1 + step); ``cosine``:
    lr (1 + cos(pi step / total)) / 2."""
    lr = config.learning_rate
    if config.schedule == "inverse_sqrt":
        return lr / np.sqrt(1.0 + step)
    if config.schedule == "cosine":
        return lr * 0.5 * (1.0 + np.cos(np.pi * step / total_steps))
    return lr


def _per_client(name: str, value, n_clients: int) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return np.full(n_clients, float(arr))
    if arr.shape != (n_clients,):
        raise UserError(f"learning.{name}: {arr.shape[0] if arr.ndim == 1 else arr.shape} "
                        f"values, needs 1 or n_clients = {n_clients}")
    return arr


def _loss_and_accuracy(model: Model, theta, x, y) -> tuple[float, float]:
    """Mean cross-entropy and accuracy from one forward pass."""
    z = model.logits(theta, x)
    loss = -log_softmax(z)[np.arange(x.shape[0]), y].mean()
    return float(loss), float((z.argmax(axis=-1) == y).mean())


def _evaluate(model: Model, theta, split: Split, epoch: int, step: int) -> dict:
    train_loss, train_accuracy = _loss_and_accuracy(model, theta, split.x_train, split.y_train)
    test_loss, test_accuracy = _loss_and_accuracy(model, theta, split.x_test, split.y_test)
    return {"epoch": epoch, "step": step, "train_loss": train_loss,
            "train_accuracy": train_accuracy, "test_loss": test_loss,
            "test_accuracy": test_accuracy}


def train(config: LearningConfig, seed: int | np.random.SeedSequence,
          dataset: Dataset | None = None) -> TrainingResult:
    """Run shuffled SGD; ``dataset`` overrides ``config.data`` (already loaded data)."""
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    split_seq, init_seq, train_seq = seq.spawn(3)
    if dataset is None:
        dataset = load_dataset(config.data, config.label_column)
    split = prepare(dataset, np.random.default_rng(split_seq), test_fraction=config.test_fraction,
                    pca_components=config.pca_components)
    return train_on_split(config, split, init_seq, train_seq)


def train_on_split(config: LearningConfig, split: Split, init_seq, train_seq) -> TrainingResult:
    """The SGD loop on prepared features (see the module docstring), on one BLAS thread: its
    matrices are small (one client's examples), and a multi-threaded BLAS on a busy machine
    made a step 4-15 times slower (issue 33)."""
    with single_threaded_blas():
        return _train_on_split(config, split, init_seq, train_seq)


def _train_on_split(config: LearningConfig, split: Split, init_seq, train_seq) -> TrainingResult:
    m = config.examples_per_client
    n_clients = split.x_train.shape[0] // m
    if n_clients < config.clients_per_step:
        raise UserError(f"learning.clients_per_step = {config.clients_per_step}: more than the "
                        f"{n_clients} clients")
    model = make_model(config.model, split.x_train.shape[1], split.n_classes, config.hidden)
    theta = model.init(np.random.default_rng(init_seq))
    rng = np.random.default_rng(train_seq)
    # Clients: a random partition of the training examples into blocks of m (leftovers unused).
    holding = rng.permutation(split.x_train.shape[0])[: n_clients * m].reshape(n_clients, m)
    eps = _per_client("epsilon0", config.epsilon0, n_clients)
    delta = _per_client("delta0", config.delta0, n_clients)

    sigma = None
    if config.randomizer == "gaussian":
        gaussian = GaussianGradient(config.clip, config.calibration, m, config.privacy_unit,
                                    config.clip_point)
        sigma = gaussian.sigma(eps, delta)  # once per run: budgets are fixed per client
    elif config.randomizer == "duchi":
        duchi = DuchiL2(config.clip)
    clip = None if config.randomizer == "none" and config.clip is None else config.clip

    k = config.clients_per_step
    steps_per_epoch = n_clients // k  # every epoch: each client at most once
    total = steps_per_epoch * config.epochs
    result = TrainingResult(n_clients=n_clients, steps_per_epoch=steps_per_epoch, sigma=sigma)
    result.rows.append(_evaluate(model, theta, split, 0, 0))
    step = 0
    for epoch in range(1, config.epochs + 1):
        order = rng.permutation(n_clients)[: steps_per_epoch * k].reshape(steps_per_epoch, k)
        for chosen in order:  # sequential by nature: each step uses the previous parameters
            idx = holding[chosen].ravel()
            g = model.client_gradients(theta, split.x_train[idx], split.y_train[idx], k, clip,
                                       config.clip_point)
            if config.randomizer == "gaussian":
                reports = g + sigma[chosen][:, None] * rng.standard_normal(g.shape)
            elif config.randomizer == "duchi":
                reports = duchi.randomize(g, rng, eps[chosen])
            else:
                reports = g
            reports = reports[rng.permutation(k)]  # the shuffler
            update = reports.mean(axis=0) + config.l2 * theta
            theta = theta - learning_rate(config, step, total) * update
            step += 1
        result.rows.append(_evaluate(model, theta, split, epoch, step))
    result.theta = theta
    return result
