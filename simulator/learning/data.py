"""Data for the learning workload (issue 19): no network at run time.

* ``"digits"``: scikit-learn's bundled 8x8 handwritten digits (1797 examples, 64 features,
  10 classes), shipped inside the scikit-learn wheel; needs the optional extra
  ``pip install 'shufflesim[learn]'``.
* a path to a user's ``.csv`` or ``.parquet`` file: a label column (default ``label``) and
  numeric feature columns (every other column).
* a path to MNIST or Fashion-MNIST on disk (issue 33, simulator.learning.files): a folder with
  the four IDX files (gzipped or not) or a Keras-style ``.npz``; they keep their own 60,000 /
  10,000 train/test split.

A path may name environment variables (``$NAME`` or ``${NAME}``). :func:`prepare` splits by seed
(stratified; or the data set's own split), fits the PCA input layer of 003 on the training split
only, and scales the features by one training-split constant.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import pathlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from shufflesim.protocols.learning.pca import PCA
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.learning import files

LEARN_EXTRA = "pip install 'shufflesim[learn]'"


@dataclass(frozen=True)
class Dataset:
    """Features ``x`` (n, d) float, labels ``y`` (n,) in 0..n_classes-1, the original labels;
    ``n_train``: the data set's own split (rows ``:n_train`` train, the rest test), or None."""

    x: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    name: str
    n_train: int | None = None

    @property
    def n_classes(self) -> int:
        return int(self.classes.shape[0])


@dataclass(frozen=True)
class Split:
    """Train/test features after the input layer, and what was fitted on the training split."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    pca: PCA | None
    scale: float


@contextlib.contextmanager
def single_threaded_blas():
    """One BLAS thread inside (threadpoolctl, when installed; otherwise a no-op). The PCA's
    matrix products are small enough that a multi-threaded BLAS on a busy machine spends more
    time waiting for its threads than computing (issue 32: 3.5 s against 0.01-0.03 s)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


#: scikit-learn's file of the digits data set (inside its package): 1797 rows of 64 pixel
#: values and the label, comma-separated, gzipped.
DIGITS_FILE = ("datasets", "data", "digits.csv.gz")


def digits_file() -> pathlib.Path | None:
    """The digits file of the installed scikit-learn, found without importing it (importing
    ``sklearn.datasets`` costs about 0.2 s of CPU, a tenth of a one-repetition learning run:
    issue 32); None when scikit-learn is missing or lays its files out otherwise."""
    try:
        spec = importlib.util.find_spec("sklearn")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = pathlib.Path(folder).joinpath(*DIGITS_FILE)
        if path.is_file():
            return path
    return None


def load_digits_dataset() -> Dataset:
    """scikit-learn's digits: read from its file as ``sklearn.datasets.load_digits`` reads it
    (the same numbers: tests/test_learning_data.py compares them), or through that function
    when the file is not where expected."""
    path = digits_file()
    if path is not None:
        with gzip.open(path, "rt") as text:
            table = np.loadtxt(text, delimiter=",")
        return _labelled(table[:, :-1], table[:, -1].astype(int), "digits")
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise UserError(f"data = 'digits' needs scikit-learn: {LEARN_EXTRA}") from None
    bunch = load_digits()
    return _labelled(np.asarray(bunch.data, float), np.asarray(bunch.target), "digits")


def _labelled(x: np.ndarray, labels: np.ndarray, name: str) -> Dataset:
    classes, y = np.unique(labels, return_inverse=True)
    if classes.shape[0] < 2:
        raise UserError(f"data = {name!r}: the label column has {classes.shape[0]} class; "
                        "needs at least 2")
    return Dataset(x, y.astype(np.int64), classes, name)


def load_table(path: str | pathlib.Path, label_column: str = "label") -> Dataset:
    """A user's CSV or Parquet file: ``label_column`` and numeric feature columns."""
    path = pathlib.Path(path)
    if path.is_dir():
        raise UserError(f"data = {str(path)!r}: is a directory, not a CSV or Parquet file")
    if not path.is_file():
        raise UserError(f"data = {str(path)!r}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            frame = pd.read_csv(path)
        elif suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:
            raise UserError(f"data = {str(path)!r}: must be a .csv or .parquet file")
    except UserError:
        raise
    except Exception as exc:  # unreadable file: one line naming it
        raise UserError(f"data = {str(path)!r}: cannot read ({exc})") from None
    if label_column not in frame.columns:
        raise UserError(f"label_column = {label_column!r}: not a column of {str(path)!r} "
                        f"(columns: {', '.join(map(str, frame.columns))})")
    features = frame.drop(columns=[label_column])
    if features.shape[1] == 0:
        raise UserError(f"data = {str(path)!r}: no feature columns beside {label_column!r}")
    bad = [str(c) for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if bad:
        raise UserError(f"data = {str(path)!r}: feature columns must be numeric: {bad}")
    x = features.to_numpy(dtype=float)
    if not np.all(np.isfinite(x)):
        raise UserError(f"data = {str(path)!r}: feature columns contain NaN or infinite values")
    labels = frame[label_column].to_numpy()
    if pd.isna(labels).any():
        raise UserError(f"label_column = {label_column!r}: has missing values")
    return _labelled(x, labels, path.name)


def load_mnist_format(path: str | pathlib.Path) -> Dataset:
    """MNIST or Fashion-MNIST from a folder of IDX files or a Keras-style ``.npz``
    (simulator.learning.files), with its own train/test split."""
    path = pathlib.Path(path)
    if path.is_file() and path.name.removesuffix(".gz") in files.IDX_FILES.values():
        path = path.parent  # one of the four IDX files names its folder
    if path.is_dir():
        x, y, n_train = files.load_idx_folder(path)
    elif path.is_file():
        x, y, n_train = files.load_npz(path)
    else:
        raise files.missing_path_error(path)
    # the ten digit classes (or garments) whether or not every one occurs in a small file
    return Dataset(x, y, np.arange(files.N_CLASSES), path.name, n_train)


def load_dataset(data: str, label_column: str = "label") -> Dataset:
    """``"digits"``, a CSV/Parquet file, a folder of MNIST IDX files or a Keras ``.npz``."""
    if data == "digits":
        return load_digits_dataset()
    path = pathlib.Path(files.expand_variables(data)).expanduser()
    if path.suffix.lower() in (".csv", ".parquet", ".pq"):
        return load_table(path, label_column)
    return load_mnist_format(path)


def split_indices(y: np.ndarray, test_fraction: float, rng: np.random.Generator):
    """Stratified random split: within every class, a ``test_fraction`` share (rounded) goes to
    the test set. Returns sorted train and test indices."""
    if not 0 < test_fraction < 1:
        raise UserError(f"test_fraction = {test_fraction!r}: must be in (0, 1)")
    order = rng.permutation(y.shape[0])
    ys = y[order]
    # rank of every example inside its class, in the permuted order (vectorized)
    by_class = np.argsort(ys, kind="stable")
    counts = np.bincount(ys)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty_like(ys)
    rank[by_class] = np.arange(ys.shape[0]) - np.repeat(starts, counts)
    n_test = np.rint(counts * test_fraction).astype(int)
    is_test = rank < n_test[ys]
    return np.sort(order[~is_test]), np.sort(order[is_test])


def prepare(dataset: Dataset, rng: np.random.Generator, *, test_fraction: float = 0.25,
            pca_components: int | None = 60, scale: bool = True) -> Split:
    """Split, PCA input layer fitted on the training split (003: 60 components; ``None`` or a
    number >= the feature count keeps the raw features, centred), then divide every feature by
    one constant: the root mean squared L2 norm of the training rows (so rows have norm ~1
    and the clip bound C has the same meaning for any data set). A data set with its own split
    (``n_train``: MNIST's 60,000 / 10,000) keeps it and ignores ``test_fraction``."""
    if dataset.n_train is not None:
        train = np.arange(dataset.n_train)
        test = np.arange(dataset.n_train, dataset.y.shape[0])
    else:
        train, test = split_indices(dataset.y, test_fraction, rng)
    x_train, x_test = dataset.x[train], dataset.x[test]
    pca = None
    if pca_components is not None and pca_components < x_train.shape[1]:
        if pca_components > x_train.shape[0]:
            raise UserError(f"pca_components = {pca_components}: more than the "
                            f"{x_train.shape[0]} training examples")
        with single_threaded_blas():
            pca = PCA.fit(x_train, pca_components)
        x_train, x_test = pca.transform(x_train), pca.transform(x_test)
    else:
        mean = x_train.mean(axis=0)
        x_train, x_test = x_train - mean, x_test - mean
    factor = 1.0
    if scale:
        rms = float(np.sqrt(np.mean(np.sum(x_train**2, axis=1))))
        factor = rms if rms > 0 else 1.0
    return Split(x_train / factor, dataset.y[train], x_test / factor, dataset.y[test],
                 dataset.n_classes, pca, factor)
