"""MNIST-format data from local files (issue 33): no download, ever.

003 (Sec. "Dataset and implementation", Table 3) trains on MNIST: 60,000 training and 10,000
test images of 28 x 28 pixels, labels 0..9. The tool runs offline, so it reads the copies people
already have, in the formats they come in:

* a **folder** holding the four IDX files of the original distribution, gzipped or not:
  ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
  ``t10k-labels-idx1-ubyte`` (each possibly with ``.gz``). torchvision keeps them in
  ``<root>/MNIST/raw/`` (``<root>/FashionMNIST/raw/``), Keras' Fashion-MNIST in
  ``~/.keras/datasets/fashion-mnist/``; the folder itself, its ``raw/``, ``MNIST/raw/`` and
  ``FashionMNIST/raw/`` are searched.
* a **Keras-style** ``.npz`` (``~/.keras/datasets/mnist.npz``): arrays ``x_train``, ``y_train``,
  ``x_test``, ``y_test``.

Fashion-MNIST has the same file names, formats and shapes; anything of that layout works (the
loader checks shapes, dtypes and labels, not the pictures). Images are read as uint8 and scaled to
[0, 1] (float32); the data set keeps the distribution's own train/test split.

IDX format (LeCun et al., the MNIST distribution's page): a big-endian header of two zero bytes,
a type byte (0x08 = unsigned byte), the number of dimensions, then one 4-byte big-endian size per
dimension, then the values in row-major order.

Every problem is a :class:`UserError` of one line naming the scenario key and the value.
"""

from __future__ import annotations

import gzip
import os
import pathlib
import re
import zipfile

import numpy as np

from shufflesim.simulator.errors import UserError

#: The scenario key every message names.
KEY = "learning.data"
#: The four files of the MNIST (and Fashion-MNIST) distribution, without ``.gz``.
IDX_FILES = {
    "x_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "x_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}
NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")
#: Sub-folders searched for the IDX files (torchvision's layout, then a plain ``raw/``).
SUBFOLDERS = ("", "raw", "MNIST/raw", "FashionMNIST/raw")
IMAGE_SHAPE = (28, 28)
N_CLASSES = 10
UBYTE = 0x08
WHERE = ("MNIST is not downloaded at run time: copy the four IDX files "
         f"({', '.join(f + '[.gz]' for f in IDX_FILES.values())}; the MNIST distribution, or "
         "torchvision's <root>/MNIST/raw/; Fashion-MNIST: the same names) into one folder, or "
         "Keras' ~/.keras/datasets/mnist.npz, and set learning.data (or the environment "
         "variable it names) to that folder or .npz file")


def _fail(value, requirement: str) -> UserError:
    return UserError(f"{KEY} = {str(value)!r}: {requirement}")


# ------------------------------------------------------------------ environment variables
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand_variables(value: str, environ=None) -> str:
    """``$NAME`` / ``${NAME}`` replaced by the environment variable; an unset or empty one is an
    error that says what to put in it."""
    environ = os.environ if environ is None else environ

    def replace(match):
        name = match.group(1) or match.group(2)
        found = environ.get(name)
        if not found:
            raise _fail(value, f"the environment variable {name} is not set; {WHERE}")
        return found

    return _VARIABLE.sub(replace, value)


# ------------------------------------------------------------------ IDX
def _open(path: pathlib.Path):
    with open(path, "rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")


def read_idx(path: str | pathlib.Path) -> np.ndarray:
    """One IDX file of unsigned bytes (gzipped or not) as a uint8 array of its shape."""
    path = pathlib.Path(path)
    try:
        with _open(path) as handle:
            raw = handle.read()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise _fail(path, f"cannot read ({exc})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise _fail(path, "not an IDX file (its first two bytes must be zero)")
    if raw[2] != UBYTE:
        raise _fail(path, f"IDX type byte 0x{raw[2]:02x}: needs 0x08 (unsigned bytes)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if ndim < 1 or len(raw) < header:
        raise _fail(path, f"IDX header truncated ({len(raw)} bytes for {ndim} dimensions)")
    shape = tuple(int(v) for v in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape, dtype=np.int64))
    if len(raw) != expected:
        raise _fail(path, f"IDX size {len(raw)} bytes, but its header {shape} needs {expected}")
    return np.frombuffer(raw, np.uint8, offset=header).reshape(shape)


def write_idx(path: str | pathlib.Path, array: np.ndarray, compress: bool | None = None) -> None:
    """Write a uint8 array as an IDX file (gzipped when ``compress`` or the name ends in .gz);
    used by the tests to make small MNIST-shaped files."""
    path = pathlib.Path(path)
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, UBYTE, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    compress = path.suffix == ".gz" if compress is None else compress
    opener = gzip.open if compress else open
    with opener(path, "wb") as handle:
        handle.write(header + array.tobytes())


def find_idx_folder(folder: pathlib.Path) -> dict[str, pathlib.Path] | None:
    """The four IDX files in ``folder`` or one of :data:`SUBFOLDERS` (None when no sub-folder
    has the training images)."""
    for sub in SUBFOLDERS:
        base = folder / sub
        found = {}
        for key, name in IDX_FILES.items():
            for candidate in (base / name, base / (name + ".gz")):
                if candidate.is_file():
                    found[key] = candidate
                    break
        if "x_train" in found:
            missing = [IDX_FILES[k] for k in IDX_FILES if k not in found]
            if missing:
                raise _fail(folder, f"has {IDX_FILES['x_train']} in {base} but not "
                                    f"{', '.join(m + '[.gz]' for m in missing)}; {WHERE}")
            return found
    return None


# ------------------------------------------------------------------ checks
def check_arrays(arrays: dict[str, np.ndarray], source) -> tuple[np.ndarray, np.ndarray, int]:
    """Check the four arrays (shapes, dtypes, label range) and return (x, y, n_train): x float32
    in [0, 1] of shape (n_train + n_test, 784), y int64, training rows first."""
    images, labels = {}, {}
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.dtype != np.uint8:
            raise _fail(source, f"x_{split} has dtype {x.dtype}: needs uint8 pixels (0..255)")
        if x.ndim == 2 and x.shape[1] == IMAGE_SHAPE[0] * IMAGE_SHAPE[1]:
            x = x.reshape(x.shape[0], *IMAGE_SHAPE)
        if x.ndim != 3 or x.shape[1:] != IMAGE_SHAPE or x.shape[0] < 1:
            raise _fail(source, f"x_{split} has shape {x.shape}: needs (n, 28, 28) or (n, 784)")
        if not np.issubdtype(y.dtype, np.integer):
            raise _fail(source, f"y_{split} has dtype {y.dtype}: needs integer labels")
        if y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise _fail(source, f"y_{split} has shape {y.shape}: needs ({x.shape[0]},), one "
                                f"label per image of x_{split}")
        outside = (y < 0) | (y >= N_CLASSES)
        if outside.any():
            raise _fail(source, f"y_{split} has label {int(y[outside][0])}: labels must lie in "
                                f"0..{N_CLASSES - 1}")
        images[split], labels[split] = x, y
    n_train = images["train"].shape[0]
    x = np.concatenate([images["train"], images["test"]]).reshape(-1, IMAGE_SHAPE[0]
                                                                   * IMAGE_SHAPE[1])
    x = x.astype(np.float32) / np.float32(255.0)
    y = np.concatenate([labels["train"], labels["test"]]).astype(np.int64)
    return x, y, n_train


def load_idx_folder(folder: str | pathlib.Path) -> tuple[np.ndarray, np.ndarray, int]:
    """The four IDX files of ``folder`` (see :func:`find_idx_folder`), checked."""
    folder = pathlib.Path(folder)
    files = find_idx_folder(folder)
    if files is None:
        raise _fail(folder, f"no {IDX_FILES['x_train']}[.gz] in this folder, its raw/, "
                            f"MNIST/raw/ or FashionMNIST/raw/; {WHERE}")
    return check_arrays({key: read_idx(path) for key, path in files.items()}, folder)


def load_npz(path: str | pathlib.Path) -> tuple[np.ndarray, np.ndarray, int]:
    """A Keras-style ``mnist.npz`` (x_train, y_train, x_test, y_test), checked; no pickles."""
    path = pathlib.Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [k for k in NPZ_KEYS if k not in archive.files]
            if missing:
                raise _fail(path, f"no array {', '.join(missing)} (has "
                                  f"{', '.join(archive.files) or 'none'}); needs Keras' "
                                  f"{', '.join(NPZ_KEYS)}")
            arrays = {k: archive[k] for k in NPZ_KEYS}
    except UserError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise _fail(path, f"cannot read as .npz ({exc})") from None
    return check_arrays(arrays, path)


def missing_path_error(path: pathlib.Path) -> UserError:
    """The message for a path that does not exist: where to get the data, where to put it."""
    return _fail(path, f"no such file or folder; {WHERE}")
