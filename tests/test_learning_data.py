"""MNIST-format data from local files (issue 33): IDX folders (gzipped or not), Keras .npz,
environment variables, the PCA's two paths, and every error as one line naming the key."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from shufflesim.protocols.learning.pca import PCA
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.learning import files
from shufflesim.simulator.learning.data import load_dataset, prepare

N_TRAIN, N_TEST = 40, 12


def _arrays(seed=0, n_train=N_TRAIN, n_test=N_TEST):
    rng = np.random.default_rng(seed)
    return {
        "x_train": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "y_train": (np.arange(n_train) % 10).astype(np.uint8),
        "x_test": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "y_test": (np.arange(n_test) % 10).astype(np.uint8),
    }


def write_idx_folder(folder, arrays, gz=True):
    folder.mkdir(parents=True, exist_ok=True)
    for key, name in files.IDX_FILES.items():
        files.write_idx(folder / (name + (".gz" if gz else "")), arrays[key])
    return folder


def _error(call, *args) -> str:
    with pytest.raises(UserError) as info:
        call(*args)
    message = str(info.value)
    assert "\n" not in message and message.startswith("learning.data = ")
    return message


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("gz", [True, False])
def test_idx_round_trip(tmp_path, gz):
    array = np.arange(2 * 3 * 5, dtype=np.uint8).reshape(2, 3, 5)
    path = tmp_path / ("a.idx" + (".gz" if gz else ""))
    files.write_idx(path, array)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == gz
    back = files.read_idx(path)
    assert back.dtype == np.uint8 and back.shape == (2, 3, 5)
    np.testing.assert_array_equal(back, array)
    assert files.read_idx(path).tobytes() == array.tobytes()


@pytest.mark.parametrize("gz", [True, False])
def test_idx_folder_loads_with_its_own_split(tmp_path, gz):
    arrays = _arrays()
    write_idx_folder(tmp_path / "mnist", arrays, gz)
    data = load_dataset(str(tmp_path / "mnist"))
    assert data.x.shape == (N_TRAIN + N_TEST, 784) and data.x.dtype == np.float32
    assert data.n_train == N_TRAIN and data.n_classes == 10 and data.name == "mnist"
    np.testing.assert_array_equal(data.x[:N_TRAIN] * 255,
                                  arrays["x_train"].reshape(N_TRAIN, -1).astype(np.float32))
    np.testing.assert_array_equal(data.y, np.concatenate([arrays["y_train"], arrays["y_test"]]))
    assert 0.0 <= data.x.min() and data.x.max() <= 1.0


def test_one_idx_file_names_its_folder(tmp_path):
    write_idx_folder(tmp_path / "fashion", _arrays(6))
    data = load_dataset(str(tmp_path / "fashion" / "t10k-images-idx3-ubyte.gz"))
    assert data.name == "fashion" and data.n_train == N_TRAIN


@pytest.mark.parametrize("layout", ["raw", "MNIST/raw", "FashionMNIST/raw"])
def test_torchvision_layouts_are_found(tmp_path, layout):
    write_idx_folder(tmp_path / "root" / layout, _arrays(1), gz=False)
    assert load_dataset(str(tmp_path / "root")).n_train == N_TRAIN


def test_keras_npz_matches_the_idx_folder(tmp_path):
    arrays = _arrays(2)
    np.savez(tmp_path / "mnist.npz", **arrays)
    flat = {k: (v.reshape(v.shape[0], -1) if k.startswith("x") else v) for k, v in arrays.items()}
    np.savez_compressed(tmp_path / "flat.npz", **flat)  # (n, 784) images are accepted too
    write_idx_folder(tmp_path / "idx", arrays)
    a = load_dataset(str(tmp_path / "mnist.npz"))
    b = load_dataset(str(tmp_path / "flat.npz"))
    c = load_dataset(str(tmp_path / "idx"))
    for other in (b, c):
        np.testing.assert_array_equal(a.x, other.x)
        np.testing.assert_array_equal(a.y, other.y)
    assert a.name == "mnist.npz" and a.n_train == N_TRAIN


def test_environment_variables_are_expanded(tmp_path, monkeypatch):
    np.savez(tmp_path / "fashion.npz", **_arrays(3))
    monkeypatch.setenv("SHUFFLESIM_TEST_DATA", str(tmp_path))
    assert load_dataset("$SHUFFLESIM_TEST_DATA/fashion.npz").name == "fashion.npz"
    assert load_dataset("${SHUFFLESIM_TEST_DATA}/fashion.npz").n_train == N_TRAIN
    monkeypatch.delenv("SHUFFLESIM_TEST_DATA")
    message = _error(load_dataset, "$SHUFFLESIM_TEST_DATA/fashion.npz")
    assert "SHUFFLESIM_TEST_DATA is not set" in message and "mnist.npz" in message


def test_prepare_keeps_the_own_split_and_fits_pca_on_training_rows(tmp_path):
    np.savez(tmp_path / "m.npz", **_arrays(4, n_train=200, n_test=30))
    data = load_dataset(str(tmp_path / "m.npz"))
    split = prepare(data, np.random.default_rng(0), test_fraction=0.5, pca_components=8)
    assert split.x_train.shape == (200, 8) and split.x_test.shape == (30, 8)
    np.testing.assert_array_equal(split.y_test, data.y[200:])
    np.testing.assert_allclose(split.pca.mean, data.x[:200].mean(axis=0), rtol=1e-5, atol=1e-6)
    again = prepare(data, np.random.default_rng(99), pca_components=8)
    np.testing.assert_array_equal(split.x_train, again.x_train)  # no seed in a fixed split


def test_pca_scatter_path_matches_the_svd_path():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 12)) @ rng.normal(size=(12, 12))  # tall: the scatter path
    tall = PCA.fit(x, 5)
    centred = x - x.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    np.testing.assert_allclose(tall.explained_variance, s[:5] ** 2 / 399, rtol=1e-9)
    np.testing.assert_allclose(np.abs(tall.components @ vt[:5].T), np.eye(5), atol=1e-8)
    wide = PCA.fit(x[:30], 5)  # 30 < 4 x 12: the SVD path
    assert wide.components.shape == (5, 12)
    np.testing.assert_allclose(wide.components @ wide.components.T, np.eye(5), atol=1e-10)


# ------------------------------------------------------------------ every error
def test_a_missing_path_says_where_to_get_and_put_the_data(tmp_path):
    message = _error(load_dataset, str(tmp_path / "nowhere"))
    assert "no such file or folder" in message
    for name in files.IDX_FILES.values():
        assert name in message
    assert "mnist.npz" in message and "MNIST/raw" in message and "not downloaded" in message


def test_a_folder_without_idx_files(tmp_path):
    (tmp_path / "empty").mkdir()
    message = _error(load_dataset, str(tmp_path / "empty"))
    assert "no train-images-idx3-ubyte[.gz]" in message and "copy the four IDX files" in message


def test_a_folder_with_some_idx_files(tmp_path):
    folder = write_idx_folder(tmp_path / "part", _arrays())
    (folder / "t10k-labels-idx1-ubyte.gz").unlink()
    message = _error(load_dataset, str(folder))
    assert "but not t10k-labels-idx1-ubyte[.gz]" in message


def _corrupt(tmp_path, name, data: bytes, gz=False):
    folder = write_idx_folder(tmp_path / "bad", _arrays(), gz=False)
    path = folder / files.IDX_FILES[name]
    if gz:
        path.unlink()
        path = folder / (files.IDX_FILES[name] + ".gz")
    path.write_bytes(data)
    return folder


@pytest.mark.parametrize("data, expected", [
    (b"\x01\x00\x08\x03" + b"\x00" * 12, "not an IDX file"),
    (b"\x00", "not an IDX file"),
    (b"\x00\x00\x0d\x03" + b"\x00" * 12, "IDX type byte 0x0d: needs 0x08"),
    (b"\x00\x00\x08\x03\x00\x00", "IDX header truncated"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x05\x01\x02", "IDX size 10 bytes, but its header (5,)"),
])
def test_bad_idx_files(tmp_path, data, expected):
    message = _error(load_dataset, str(_corrupt(tmp_path, "y_train", data)))
    assert expected in message and "train-labels-idx1-ubyte" in message


def test_a_broken_gzip_file(tmp_path):
    good = gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x01\x03")
    folder = _corrupt(tmp_path, "y_test", good[: len(good) // 2], gz=True)
    assert "cannot read" in _error(load_dataset, str(folder))


@pytest.mark.parametrize("change, expected", [
    ({"x_train": np.zeros((N_TRAIN, 28, 28), np.float32)}, "x_train has dtype float32"),
    ({"x_test": np.zeros((N_TEST, 27, 28), np.uint8)}, "x_test has shape (12, 27, 28)"),
    ({"x_train": np.zeros((N_TRAIN, 100), np.uint8)}, "x_train has shape (40, 100)"),
    ({"y_train": np.zeros(N_TRAIN, np.float64)}, "y_train has dtype float64"),
    ({"y_test": np.zeros(N_TEST - 1, np.uint8)}, "y_test has shape (11,): needs (12,)"),
    ({"y_train": np.full(N_TRAIN, 10, np.uint8)}, "y_train has label 10: labels must lie"),
    ({"y_test": np.full(N_TEST, -1, np.int8)}, "y_test has label -1"),
])
def test_bad_arrays_in_npz_and_idx(tmp_path, change, expected):
    arrays = {**_arrays(), **change}
    np.savez(tmp_path / "bad.npz", **arrays)
    assert expected in _error(load_dataset, str(tmp_path / "bad.npz"))
    if all(v.dtype == np.uint8 for v in arrays.values()):  # IDX holds unsigned bytes only
        folder = write_idx_folder(tmp_path / "idx", arrays)
        assert expected in _error(load_dataset, str(folder))


def test_npz_without_the_keras_arrays(tmp_path):
    np.savez(tmp_path / "other.npz", images=np.zeros(3), labels=np.zeros(3))
    message = _error(load_dataset, str(tmp_path / "other.npz"))
    assert "no array x_train, y_train, x_test, y_test (has images, labels)" in message


def test_a_file_that_is_not_an_npz(tmp_path):
    (tmp_path / "mnist.npz").write_text("not a zip")
    assert "cannot read as .npz" in _error(load_dataset, str(tmp_path / "mnist.npz"))


def test_an_npz_holding_pickles_is_refused(tmp_path):
    arrays = {**_arrays(), "y_test": np.array([object()] * N_TEST, dtype=object)}
    np.savez(tmp_path / "pickled.npz", **arrays)
    assert "cannot read as .npz" in _error(load_dataset, str(tmp_path / "pickled.npz"))


# ------------------------------------------------------------------ the MNIST scenario, shrunk
def _learnable(rng, n):
    """28 x 28 uint8 images whose class shows in a bright 7 x 7 block (position = label)."""
    y = (np.arange(n) % 10).astype(np.uint8)
    x = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
    for label in range(10):
        r, c = divmod(label, 4)
        x[y == label, 7 * r: 7 * r + 7, 7 * c: 7 * c + 7] += 150
    return x, y


def _shrunk_scenario(tmp_path, monkeypatch, name="fig4_mnist"):
    from pathlib import Path

    rng = np.random.default_rng(33)
    x_train, y_train = _learnable(rng, 200)
    x_test, y_test = _learnable(rng, 50)
    write_idx_folder(tmp_path / "mnist", {"x_train": x_train, "y_train": y_train,
                                          "x_test": x_test, "y_test": y_test})
    monkeypatch.setenv("SHUFFLESIM_MNIST", str(tmp_path / "mnist"))
    root = Path(__file__).resolve().parents[1]
    text = (root / "scenarios" / "learning" / f"{name}.toml").read_text()
    for old, new in (("examples_per_client = 600", "examples_per_client = 20"),
                     ("epochs = 50", "epochs = 3"), ("hidden = 100", "hidden = 8"),
                     ("pca_components = 60", "pca_components = 10"),
                     ("learning_rate = 0.05", "learning_rate = 0.5")):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / f"{name}_small.toml"
    path.write_text(text)
    return path


def test_the_mnist_scenario_shrunk_to_generated_idx_files(tmp_path, monkeypatch):
    from shufflesim.simulator.execution.executors import InlineExecutor
    from shufflesim.simulator.execution.runner import run_scenario
    from shufflesim.simulator.scenario.loader import load_scenario

    scenario = load_scenario(_shrunk_scenario(tmp_path, monkeypatch))
    assert len(scenario.points) == 8  # non-private and private x four budget distributions
    frame = run_scenario(scenario, executor=InlineExecutor())["learning"].to_pandas()
    assert len(frame) == 8 * 4 and set(frame.data) == {"mnist"}
    assert set(frame.n_clients) == {10} and set(frame.examples_per_client) == {20}
    assert set(frame.budget) == {"gspa-constant", "gspa-unif2", "gspa-unif3",
                                 "gspa-three-groups"}
    plain = frame[frame.randomizer == "none"]
    private = frame[(frame.randomizer == "gaussian") & (frame.epoch == 3)]
    assert len(plain) == 16 and plain.epsilon_local_max.isna().all()
    assert set(plain.accounting_note) == {"no randomizer: no privacy"}
    assert len(private) == 4 and (private.epsilon_local_max > 0).all()
    # one client per step: nothing to hide among within a step, and the reason is given
    assert private.epsilon_clone_steps.isna().all()
    assert private.accounting_note.str.contains("fmt21_pass").all()
    assert plain[plain.epoch == 3].test_accuracy.min() > 0.5  # learnable: the pipeline learns


def test_the_alg3_sibling_shrunk_clips_the_mean_and_says_what_holds(tmp_path, monkeypatch):
    """fig4_mnist_alg3.toml (003 Alg. 3 as printed: the client's mean clipped) shrunk to the
    same files: it runs, and every private row's accounting is at the sensitivity that holds."""
    from shufflesim.simulator.execution.executors import InlineExecutor
    from shufflesim.simulator.execution.runner import run_scenario
    from shufflesim.simulator.scenario.loader import load_scenario

    scenario = load_scenario(_shrunk_scenario(tmp_path, monkeypatch, "fig4_mnist_alg3"))
    sections = [point.settings.sections["learning"] for point in scenario.points]
    assert {s.clip_point for s in sections} == {"client-mean"} and len(sections) == 8
    frame = run_scenario(scenario, executor=InlineExecutor())["learning"].to_pandas()
    private = frame[(frame.randomizer == "gaussian") & (frame.epoch == 3)]
    assert len(private) == 4
    assert private.accounting_note.str.startswith(
        "unit sensitivity: clip_point = 'client-mean'").all()
    # the local bound at 2C, not 2C/m: far above the nominal budgets (at most 2 per report)
    assert (private.epsilon_local_max > 3 * 2.0).all()
    plain = frame[frame.randomizer == "none"]
    assert set(plain.accounting_note) == {"no randomizer: no privacy"}
    assert plain[plain.epoch == 3].test_accuracy.min() > 0.5


def test_the_mnist_scenario_without_its_variable_is_one_line(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from shufflesim.simulator.cli import main

    path = _shrunk_scenario(tmp_path, monkeypatch)
    monkeypatch.delenv("SHUFFLESIM_MNIST")
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "out"),
                                       "--workers", "1", "--quiet"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: learning.data = '$SHUFFLESIM_MNIST'")
    assert "SHUFFLESIM_MNIST is not set" in lines[0]


def test_a_scenario_naming_missing_mnist_files_says_where_to_get_them(tmp_path, monkeypatch):
    from shufflesim.simulator.scenario.loader import load_scenario

    path = _shrunk_scenario(tmp_path, monkeypatch)
    path.write_text(path.read_text().replace('data = "$SHUFFLESIM_MNIST"',
                                             'data = "elsewhere/mnist.npz"'))
    with pytest.raises(UserError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message and "learning.data = 'elsewhere/mnist.npz'" in message
    assert "no such file or folder" in message and "not downloaded" in message
    assert "train-images-idx3-ubyte" in message


def test_digits_read_from_the_file_equal_scikit_learns_loader(monkeypatch):
    """Issue 32: the digits are read from scikit-learn's file without importing it; the
    numbers equal ``sklearn.datasets.load_digits``'s, and without the file the loader is
    used."""
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    from shufflesim.simulator.learning import data

    assert data.digits_file() is not None
    read = data.load_digits_dataset()
    bunch = sklearn_datasets.load_digits()
    assert read.x.dtype == np.float64 and np.array_equal(read.x, bunch.data)
    assert np.array_equal(read.classes[read.y], bunch.target) and read.x.shape == (1797, 64)
    monkeypatch.setattr(data, "digits_file", lambda: None)
    loaded = data.load_digits_dataset()
    assert np.array_equal(loaded.x, read.x) and np.array_equal(loaded.y, read.y)
