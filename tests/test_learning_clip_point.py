"""The clipping point of shuffled DP-SGD (issue 33): per example (the default) or the client's
mean gradient (003 Algorithm 3 line 12 as printed), and what each guarantees."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.learning import (
    MLP,
    GaussianGradient,
    SoftmaxRegression,
    analytic_gaussian_sigma,
    clip_client_means,
)
from shufflesim.protocols.learning.accounting import RunPrivacy, account, gaussian_local_epsilon
from shufflesim.simulator.cli import main
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.learning import LearningConfig, prepare, train
from shufflesim.simulator.learning.data import Dataset


def _problem(model, m=7, clients=3, seed=11):
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=2.0, size=(clients * m, model.n_features))
    y = rng.integers(0, model.n_classes, size=clients * m)
    theta = model.init(rng) + rng.normal(scale=0.5, size=model.n_parameters)
    return theta, x, y


@pytest.mark.parametrize("model", [SoftmaxRegression(6, 4), MLP(6, 4, hidden=5)])
@pytest.mark.parametrize("clip", [None, "between", 1e6])
def test_client_mean_clipping_matches_the_definition(model, clip):
    """g~ = g / max(1, ||g|| / C) with g the client's mean of its raw per-example gradients,
    written out here from the per-example gradients (003 Alg. 3 line 12)."""
    theta, x, y = _problem(model)
    per_example = model.per_example_gradients(theta, x, y).reshape(3, 7, -1)
    means = per_example.sum(axis=1) / 7
    norms = np.sqrt((means**2).sum(axis=1))
    if clip == "between":  # some clients clipped, some not
        clip = float(np.sort(norms)[1])
    expected = means if clip is None else means / np.maximum(1.0, norms / clip)[:, None]
    got = model.client_gradients(theta, x, y, 3, clip, "client-mean")
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(clip_client_means(per_example, clip), expected, rtol=1e-12,
                               atol=1e-13)
    if clip is not None:
        assert np.linalg.norm(got, axis=1).max() <= clip * (1 + 1e-12)
    # per example is the default, and differs once some example exceeds the clip
    default = model.client_gradients(theta, x, y, 3, clip)
    np.testing.assert_allclose(default, model.clipped_means(theta, x, y, 3, clip), rtol=1e-15)
    if clip is not None and clip < 1e6:
        assert not np.allclose(default, got)


def test_one_example_moves_a_clipped_mean_by_far_more_than_2c_over_m():
    """Why client-mean clipping has no example-level sensitivity 2C/m: replacing one example
    by one with a large gradient moves the clipped mean by up to 2C; clipped per example, by at
    most 2C/m."""
    model, m, clip = SoftmaxRegression(2, 2), 50, 1.0
    theta = np.zeros(model.n_parameters)
    x = np.tile([[0.01, 0.0]], (m, 1))
    y = np.zeros(m, dtype=int)
    x2, y2 = x.copy(), y.copy()
    x2[0], y2[0] = [-1e4, 0.0], 1  # one replaced example, a gradient of norm ~1e4
    moves = {}
    for point in ("client-mean", "example"):
        a = model.client_gradients(theta, x, y, 1, clip, point)[0]
        b = model.client_gradients(theta, x2, y2, 1, clip, point)[0]
        moves[point] = float(np.linalg.norm(a - b))
    assert moves["example"] <= 2 * clip / m * (1 + 1e-12)
    assert moves["client-mean"] > 0.9 * clip > 10 * (2 * clip / m)


def test_the_randomizer_states_the_sensitivity_that_holds():
    c, m = 2.0, 600
    assert GaussianGradient(c, "analytic", m, "example").unit_sensitivity == 2 * c / m
    mean = GaussianGradient(c, "analytic", m, "example", "client-mean")
    assert mean.sensitivity == 2 * c / m  # 003's calibration (line 7) is unchanged...
    assert mean.unit_sensitivity == 2 * c  # ...but one example is bounded by 2C only
    np.testing.assert_array_equal(
        mean.sigma([0.5, 2.0], 1e-5),
        GaussianGradient(c, "analytic", m, "example").sigma([0.5, 2.0], 1e-5))
    for point in ("example", "client-mean"):
        assert GaussianGradient(c, "analytic", m, "client", point).unit_sensitivity == 2 * c
    with pytest.raises(ParameterError, match="clip_point"):
        GaussianGradient(c, "analytic", m, "example", "batch")


def test_accounting_at_the_sensitivity_that_holds():
    """Client-mean clipping with example-level noise: every bound at 2C (the local one too),
    with a note; per-example clipping keeps 2C/m for the local bound and has no such note."""
    m, clip, delta0, delta = 600, 2.0, 1e-5, 1e-4
    eps = np.full(100, 0.5)
    sigma = analytic_gaussian_sigma(eps, delta0, 2 * clip / m)
    example = RunPrivacy("gaussian", eps, 100, 1, delta, delta0, sigma, 2 * clip / m,
                         client_sensitivity=2 * clip)
    mean = RunPrivacy("gaussian", eps, 100, 1, delta, delta0, sigma, 2 * clip / m,
                      client_sensitivity=2 * clip, unit_sensitivity=2 * clip)
    (v_example, n_example), (v_mean, n_mean) = account(example, 3), account(mean, 3)
    assert "client-mean" not in n_example
    assert n_mean.startswith("unit sensitivity: clip_point = 'client-mean'")
    assert "every bound at 4" in n_mean and "\n" not in n_mean
    expected = gaussian_local_epsilon(2 * clip, sigma, [3], delta)
    assert v_mean["local_max"] == pytest.approx(float(expected.max()), rel=1e-12)
    assert v_example["local_max"] == pytest.approx(
        float(gaussian_local_epsilon(2 * clip / m, sigma, [3], delta).max()), rel=1e-12)
    # about m times the nominal budget per report: far above the example-level value
    assert v_mean["local_max"] > 100 * v_example["local_max"]
    for name in ("user_median", "user_max"):
        assert v_mean[name] >= v_example[name]
    # the shuffle bounds were at the client level already: unchanged
    for name in ("fmt21_pass", "clone_epochs", "clone_steps"):
        assert v_mean[name] == v_example[name]
    # a client-level unit is unaffected by where the clip applies
    client = RunPrivacy("gaussian", eps, 100, 1, delta, delta0, sigma, 2 * clip,
                        client_sensitivity=2 * clip, unit_sensitivity=2 * clip)
    assert "client-mean" not in account(client, 3)[1]


def _tiny_dataset():
    rng = np.random.default_rng(5)
    y = np.arange(240) % 3
    x = rng.normal(size=(240, 4)) + 3.0 * np.eye(3, 4)[y]
    return Dataset(x, y, np.arange(3), "tiny")


def test_training_uses_the_clip_point():
    """Wiring: with a clip no mean reaches, client-mean clipping is plain SGD (identical rows);
    with a clip that bites, the two points train differently."""
    ds = _tiny_dataset()
    base = dict(pca_components=None, model="softmax", randomizer="none", examples_per_client=20,
                epochs=2, learning_rate=0.5)
    plain = train(LearningConfig(**base, clip=None), 3, ds).rows
    loose = train(LearningConfig(**base, clip=1e6, clip_point="client-mean"), 3, ds).rows
    assert loose == plain
    tight = {point: train(LearningConfig(**base, clip=0.05, clip_point=point), 3, ds).rows
             for point in ("example", "client-mean")}
    assert tight["example"][-1] != tight["client-mean"][-1]
    private = train(LearningConfig(**{**base, "randomizer": "gaussian"}, clip=1.0,
                                   clip_point="client-mean", privacy_unit="example",
                                   epsilon0=2.0), 3, ds)
    assert len(private.rows) == 3 and np.all(private.sigma > 0)
    assert prepare(ds, np.random.default_rng(0), pca_components=None).x_train.shape[1] == 4


def test_a_bad_clip_point_is_one_line():
    with pytest.raises(UserError, match=r"^learning.clip_point = 'batch': must be one of"):
        LearningConfig(clip_point="batch")


SCENARIO = """
name = "bad_clip_point"
seed = 1
[population]
n = 100
data = { distribution = "categorical", weights = [0.5, 0.5] }
budget = { distribution = "preset", preset = "gspa-constant" }
[randomizer]
name = "brr"
[estimator]
name = "gspa_frequency"
[learning]
clip_point = "CLIP"
"""


@pytest.mark.parametrize("value", ['"batch"', "3"])
def test_the_cli_refuses_a_bad_clip_point_in_one_line(tmp_path, value):
    path = tmp_path / "bad.toml"
    path.write_text(SCENARIO.replace('"CLIP"', value))
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "out"),
                                       "--workers", "1", "--quiet"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: learning.clip_point")
    assert not (tmp_path / "out").exists()
