"""Issue 19 foundation: models, clipping, gradient randomizers, data and shuffled SGD."""

import math
import sys

import numpy as np
import pytest
from scipy import integrate, stats

from shufflesim.protocols.learning import (
    MLP,
    PCA,
    DuchiL2,
    GaussianGradient,
    SoftmaxRegression,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    clip_rows,
    clipped_client_means,
    gaussian_delta,
    mean_abs_coordinate,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.learning import LearningConfig, load_table, prepare, split_indices, train
from shufflesim.simulator.learning.data import Dataset


# ------------------------------------------------------------------ models
def _finite_difference(model, theta, x, y, h=1e-6):
    """Central differences of every example's loss, one parameter at a time (the oracle)."""
    out = np.empty((x.shape[0], theta.shape[0]))
    for j in range(theta.shape[0]):
        e = np.zeros_like(theta)
        e[j] = h
        out[:, j] = (model.per_example_losses(theta + e, x, y)
                     - model.per_example_losses(theta - e, x, y)) / (2 * h)
    return out


@pytest.mark.parametrize("model", [SoftmaxRegression(5, 3), MLP(5, 3, hidden=4)])
def test_per_example_gradients_match_finite_differences(model):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 5))
    y = rng.integers(0, 3, size=7)
    theta = rng.normal(scale=0.7, size=model.n_parameters)
    grads = model.per_example_gradients(theta, x, y)
    assert grads.shape == (7, model.n_parameters)
    np.testing.assert_allclose(grads, _finite_difference(model, theta, x, y), atol=1e-7)
    # the mean of per-example gradients is the gradient of the mean loss
    e = np.zeros_like(theta)
    e[3] = 1e-6
    fd = (model.loss(theta + e, x, y) - model.loss(theta - e, x, y)) / 2e-6
    assert grads.mean(axis=0)[3] == pytest.approx(fd, abs=1e-7)


def test_mlp_init_is_seeded_and_softmax_starts_at_zero():
    mlp = MLP(4, 3, hidden=5)
    a = mlp.init(np.random.default_rng(1))
    np.testing.assert_array_equal(a, mlp.init(np.random.default_rng(1)))
    assert a.shape == (mlp.n_parameters,) == (4 * 5 + 5 + 5 * 3 + 3,)
    assert not np.any(SoftmaxRegression(4, 3).init(np.random.default_rng(1)))


# ------------------------------------------------------------------ clipping
def test_clipping_bounds_norms_and_keeps_short_rows_and_directions():
    rng = np.random.default_rng(2)
    g = rng.normal(size=(50, 3, 20)) * rng.exponential(size=(50, 3, 1))
    c = clip_rows(g, 1.5)
    norms = np.linalg.norm(g, axis=-1)
    assert np.all(np.linalg.norm(c, axis=-1) <= 1.5 * (1 + 1e-12))
    short = norms <= 1.5
    np.testing.assert_array_equal(c[short], g[short])
    cos = np.sum(c * g, axis=-1) / (np.linalg.norm(c, axis=-1) * norms)
    np.testing.assert_allclose(cos, 1.0)
    means = clipped_client_means(g, 1.5)
    assert means.shape == (50, 20)
    assert np.all(np.linalg.norm(means, axis=-1) <= 1.5 * (1 + 1e-12))
    np.testing.assert_array_equal(clipped_client_means(g, None), g.mean(axis=1))


# ------------------------------------------------------------------ analytic Gaussian
GRID = [(eps, delta, sens) for eps in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0)
        for delta in (1e-3, 1e-5, 1e-10) for sens in (1.0, 4.0)]


def test_analytic_sigma_is_the_smallest_sigma_meeting_the_exact_condition():
    eps, delta, sens = (np.array(v) for v in zip(*GRID, strict=True))
    sigma = analytic_gaussian_sigma(eps, delta, sens)
    assert np.all(gaussian_delta(sigma, eps, sens) <= delta)
    assert np.all(gaussian_delta(sigma * (1 - 1e-6), eps, sens) > delta)
    # analytic never needs more noise than the classical calibration where that is valid
    small = eps < 1
    assert np.all(sigma[small] < classical_gaussian_sigma(eps, delta, sens)[small])
    # sigma scales linearly with the sensitivity
    np.testing.assert_allclose(analytic_gaussian_sigma(eps, delta, 3 * sens), 3 * sigma,
                               rtol=1e-9)


@pytest.mark.parametrize("eps, sigma, sens", [(1.0, 3.0, 1.0), (0.3, 1.0, 2.0), (4.0, 0.5, 1.0)])
def test_gaussian_delta_is_the_hockey_stick_divergence(eps, sigma, sens):
    """Independent oracle: delta(eps) = int (p(x) - e^eps q(x))_+ dx for p = N(Delta, s^2),
    q = N(0, s^2) (Balle-Wang Thm 8 is its closed form)."""
    p = stats.norm(sens, sigma).pdf
    q = stats.norm(0.0, sigma).pdf
    # p >= e^eps q  iff  x >= sens/2 + eps sigma^2 / sens
    x0 = sens / 2 + eps * sigma**2 / sens
    value, _ = integrate.quad(lambda x: p(x) - math.exp(eps) * q(x), x0, np.inf,
                              epsabs=1e-14, epsrel=1e-10)
    assert gaussian_delta(sigma, eps, sens) == pytest.approx(value, rel=1e-7)


def test_analytic_sigma_against_dp_accounting_and_the_known_value():
    """Google's PLD accountant (an independent implementation) gives delta = 1e-5 at our sigma
    for eps = 1, Delta = 1; sigma = 3.7306 there (Balle-Wang's analytic calibration)."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    sigma = float(analytic_gaussian_sigma(1.0, 1e-5, 1.0))
    assert sigma == pytest.approx(3.7306316, rel=1e-6)
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_accounting.GaussianDpEvent(sigma))
    assert accountant.get_delta(1.0) == pytest.approx(1e-5, rel=1e-4)


def test_gaussian_randomizer_per_client_budgets_unbiased_and_normal():
    rng = np.random.default_rng(3)
    mech = GaussianGradient(clip=2.0)
    eps = np.array([0.5, 2.0, 0.5, 8.0])
    sig = mech.sigma(eps, 1e-5)
    assert sig[0] == sig[2] == pytest.approx(float(analytic_gaussian_sigma(0.5, 1e-5, 4.0)))
    assert sig[0] > sig[1] > sig[3]
    g = clip_rows(rng.normal(size=(4, 6)), 2.0)
    reps = np.stack([mech.randomize(g, rng, eps, 1e-5) for _ in range(2000)])
    z = (reps - g) / sig[:, None]
    assert stats.kstest(z.ravel(), "norm").pvalue > 1e-3
    assert np.all(np.abs(z.mean(axis=0)) < 5 / math.sqrt(2000))
    # example-level unit: 003's sensitivity 2C/m
    assert GaussianGradient(2.0, examples_per_client=4, privacy_unit="example").sensitivity == 1.0
    assert float(GaussianGradient(2.0, "classical", 4, "example").sigma(0.5, 1e-5)) == \
        pytest.approx(1.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5)


# ------------------------------------------------------------------ Duchi et al. L2 ball
def test_duchi_scale_matches_the_papers_gamma_form():
    for d in (2, 3, 10, 610):
        paper = math.sqrt(math.pi) * d * math.exp(math.lgamma((d - 1) / 2 + 1)
                                                  - math.lgamma(d / 2 + 1)) / 2
        assert 1 / mean_abs_coordinate(d) == pytest.approx(paper, rel=1e-12)
    # E|z_1| by Monte Carlo in d = 5
    z = np.random.default_rng(4).normal(size=(200000, 5))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    assert np.abs(z[:, 0]).mean() == pytest.approx(mean_abs_coordinate(5), abs=4e-3)


@pytest.mark.parametrize("norm", [0.0, 0.4, 1.0])
def test_duchi_is_unbiased(norm):
    rng = np.random.default_rng(5)
    mech = DuchiL2(clip=1.0)
    d, n = 5, 200000
    v = np.array([0.3, -0.5, 0.1, 0.7, 0.2])
    v = v / np.linalg.norm(v) * norm
    eps = np.where(np.arange(n) % 2 == 0, 0.5, 3.0)  # per-client budgets
    y = mech.randomize(np.tile(v, (n, 1)), rng, eps)
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), mech.scale(eps, d))  # ||y|| = B
    se = y.std(axis=0) / math.sqrt(n)
    assert np.all(np.abs(y.mean(axis=0) - v) < 5 * se)


def test_duchi_declared_epsilon_by_brute_force():
    """Every output's density ratio over all pairs of inputs is <= e^eps, with equality for
    opposite boundary inputs (d = 3: boundary, interior and zero inputs, many outputs)."""
    rng = np.random.default_rng(6)
    mech, eps, d = DuchiL2(clip=2.0), 1.3, 3
    inputs = rng.normal(size=(40, d))
    inputs *= (2.0 * rng.random((40, 1)) ** (1 / d)) / np.linalg.norm(inputs, axis=1,
                                                                      keepdims=True)
    inputs = np.concatenate([inputs, 2 * np.eye(d), -2 * np.eye(d), np.zeros((1, d))])
    outputs = mech.randomize(np.zeros((500, d)), rng, eps)
    dens = mech.density(outputs[:, None, :], inputs[None, :, :], eps)  # (outputs, inputs)
    assert np.all(dens > 0)
    ratio = dens.max(axis=1) / dens.min(axis=1)
    assert np.all(ratio <= math.exp(eps) * (1 + 1e-12))
    assert ratio.max() == pytest.approx(math.exp(eps), rel=1e-12)
    # the density integrates to 1 over the sphere (Monte Carlo over uniform outputs)
    uniform = rng.normal(size=(100000, d))
    assert mech.density(uniform, inputs[0], eps).mean() == pytest.approx(1.0, abs=0.01)


def test_duchi_samples_fit_the_declared_distribution():
    rng = np.random.default_rng(7)
    mech, eps, d, n = DuchiL2(clip=1.0), 0.8, 6, 40000
    v = np.zeros(d)
    v[:2] = [0.3, 0.4]  # norm 0.5
    y = mech.randomize(np.tile(v, (n, 1)), rng, eps)
    z = y / mech.scale(eps, d)
    u = v / np.linalg.norm(v)
    t = z @ u
    assert stats.kstest(t, lambda s: mech.projection_cdf(s, v, eps, d)).pvalue > 1e-3
    # within its hemisphere, z is uniform: the part orthogonal to u is rotation invariant
    w = np.zeros(d)
    w[2] = 1.0
    assert stats.kstest(z @ w, lambda s: mech.projection_cdf(s, w * 1e-9, 1e-12, d)).pvalue \
        > 1e-3
    with pytest.raises(ValueError, match="clip"):
        mech.randomize(np.full((1, d), 1.0), rng, eps)


# ------------------------------------------------------------------ data
def test_split_is_stratified_disjoint_and_seeded():
    y = np.repeat(np.arange(4), [40, 20, 10, 30])
    tr, te = split_indices(y, 0.25, np.random.default_rng(8))
    assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == y.size
    np.testing.assert_array_equal(np.bincount(y[te]), [10, 5, 2, 8])
    tr2, te2 = split_indices(y, 0.25, np.random.default_rng(8))
    np.testing.assert_array_equal(te, te2)


def test_pca_fitted_on_training_split():
    rng = np.random.default_rng(9)
    x = rng.normal(size=(200, 8)) @ rng.normal(size=(8, 8))
    ds = Dataset(x, np.arange(200) % 2, np.array([0, 1]), "toy")
    split = prepare(ds, rng, test_fraction=0.25, pca_components=3)
    pca = split.pca
    np.testing.assert_allclose(pca.components @ pca.components.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(split.x_train.mean(axis=0), 0, atol=1e-12)
    assert split.x_train.shape == (150, 3) and split.x_test.shape == (50, 3)
    # variances are the top eigenvalues of the training covariance
    cov = np.cov(split.x_train * split.scale, rowvar=False)
    np.testing.assert_allclose(np.diag(cov), pca.explained_variance, rtol=1e-10)
    assert np.all(np.diff(pca.explained_variance) <= 0)
    assert PCA.fit(x, 3).components.shape == (3, 8)


def test_user_tables(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(10)
    frame = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    frame["label"] = np.where(frame["a"] > 0, "yes", "no")
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet")
    for name in ("d.csv", "d.parquet"):
        ds = load_table(tmp_path / name)
        assert ds.x.shape == (60, 3) and list(ds.classes) == ["no", "yes"]
    with pytest.raises(UserError, match="label_column = 'target'"):
        load_table(tmp_path / "d.csv", "target")
    with pytest.raises(UserError, match="no such file"):
        load_table(tmp_path / "missing.csv")
    config = LearningConfig(data=str(tmp_path / "d.csv"), pca_components=None,
                            randomizer="none", clip=None, epochs=30, clients_per_step=5,
                            learning_rate=1.0)
    assert train(config, 0).rows[-1]["test_accuracy"] >= 0.8


def test_digits_without_scikit_learn_names_the_extra(monkeypatch):
    # scikit-learn missing: neither its file (found without importing it) nor its module
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(UserError, match=r"pip install 'shufflesim\[learn\]'"):
        train(LearningConfig(), 0)


# ------------------------------------------------------------------ training
def _digits():
    pytest.importorskip("sklearn")
    from shufflesim.simulator.learning import load_digits_dataset

    return load_digits_dataset()


def test_non_private_training_matches_scikit_learn():
    """Same split, same objective (mean cross-entropy + ||w||^2 / (2 C n), C = 1): SGD's test
    accuracy is within 1% of LogisticRegression's."""
    from sklearn.linear_model import LogisticRegression

    ds = _digits()
    seed = 1
    split = prepare(ds, np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[0]))
    n_train = split.x_train.shape[0]
    reference = LogisticRegression(C=1.0, max_iter=5000).fit(split.x_train, split.y_train)
    sk = reference.score(split.x_test, split.y_test)
    config = LearningConfig(randomizer="none", clip=None, clients_per_step=16, epochs=40,
                            learning_rate=2.0, schedule="cosine", l2=1.0 / n_train)
    ours = train(config, seed, ds).rows[-1]["test_accuracy"]
    assert sk > 0.9
    assert ours >= sk - 0.01, (ours, sk)


def test_seeded_runs_are_reproducible_and_private_runs_learn():
    ds = _digits()
    eps = np.where(np.arange(1347) % 3 == 0, 0.5, 4.0)  # personalized budgets
    base = dict(clients_per_step=64, epochs=3, learning_rate=0.5, clip=1.0)
    for config in (LearningConfig(randomizer="gaussian", epsilon0=tuple(eps), **base),
                   LearningConfig(randomizer="duchi", epsilon0=4.0, **base),
                   LearningConfig(model="mlp", hidden=16, randomizer="gaussian", **base)):
        a, b = train(config, 11, ds), train(config, 11, ds)
        assert a.rows == b.rows
        np.testing.assert_array_equal(a.theta, b.theta)
        assert train(config, 12, ds).rows != a.rows
        assert len(a.rows) == 4 and a.steps_per_epoch == a.n_clients // 64
    gauss = train(LearningConfig(randomizer="gaussian", epsilon0=8.0, clients_per_step=32,
                                 epochs=5, learning_rate=0.5, clip=1.0), 3, ds)
    # eps0 = 8 on 610 coordinates: noisy, yet far above chance (0.1)
    assert gauss.rows[-1]["test_accuracy"] > 0.5


def test_bad_options_are_one_line_user_errors():
    with pytest.raises(UserError, match="learning.randomizer = 'laplace'"):
        LearningConfig(randomizer="laplace")
    with pytest.raises(UserError, match="learning.clip = None"):
        LearningConfig(randomizer="duchi", clip=None)
    with pytest.raises(UserError, match="learning.epochs = 0"):
        LearningConfig(epochs=0)


@pytest.mark.slow
def test_mlp_non_private_reaches_high_accuracy():
    ds = _digits()
    config = LearningConfig(model="mlp", hidden=64, randomizer="none", clip=None,
                            clients_per_step=16, epochs=40, learning_rate=0.5,
                            schedule="cosine")
    assert train(config, 1, ds).rows[-1]["test_accuracy"] >= 0.96


@pytest.mark.parametrize("model", [SoftmaxRegression(6, 4), MLP(6, 4, hidden=5)])
@pytest.mark.parametrize("clip", [None, 0.3, 50.0])
def test_clipped_means_from_factors_equal_clipping_the_per_example_gradients(model, clip):
    """The models' factored per-client clipped means (issue 33) against the definition."""
    rng = np.random.default_rng(11)
    x = rng.normal(scale=2.0, size=(3 * 7, 6))
    y = rng.integers(0, 4, size=3 * 7)
    theta = model.init(rng) + rng.normal(scale=0.5, size=model.n_parameters)
    expected = clipped_client_means(
        model.per_example_gradients(theta, x, y).reshape(3, 7, -1), clip)
    got = model.clipped_means(theta, x, y, 3, clip)
    assert got.shape == (3, model.n_parameters)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)
    if clip is not None:
        assert np.linalg.norm(got, axis=1).max() <= clip * (1 + 1e-12)
