"""Models for shuffled DP-SGD (issue 19): softmax regression and a one-hidden-layer ReLU MLP.

Both work on a flat parameter vector ``theta`` (so that clipping and the gradient randomizers
see one vector per example, as in 002 Sec. 5.2 and 003 Algorithm 3) and give per-example
gradients vectorized over the batch: ``per_example_gradients(theta, x, y)`` has shape
``(batch, n_parameters)``; there is no loop over examples.

Loss: the cross-entropy of the softmax of the logits (003 Sec. "Experiments": "a feed-forward
neural network with ReLU activation units and a softmax output layer ... cross-entropy loss").
With ``p = softmax(z)`` and one-hot ``Y``, d loss / d z = p - Y, and back-propagation gives

    softmax regression  z = x W + b:          dW = x (p - Y)^T,  db = p - Y
    MLP  a = x W1 + b1, h = relu(a), z = h W2 + b2:
                        dW2 = h (p - Y)^T,  db2 = p - Y,
                        d1 = ((p - Y) W2^T) * 1[a > 0],  dW1 = x d1^T,  db1 = d1
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import require, require_int_at_least, require_positive_finite
from shufflesim.protocols.learning.clipping import CLIP_POINTS, clip_rows, clipped_client_means


def log_softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise log softmax, stable for large logits."""
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _one_hot(y: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros((y.shape[0], k))
    out[np.arange(y.shape[0]), y] = 1.0
    return out


def _clip_scale(norms2: np.ndarray, clip: float | None) -> np.ndarray:
    """1 / max(1, ||g|| / C) from squared norms (ones without clipping), as clip_rows does."""
    if clip is None:
        return np.ones_like(norms2)
    require_positive_finite("clip", float(clip))
    return 1.0 / np.maximum(1.0, np.sqrt(norms2) / clip)


class Model:
    """Interface: ``n_parameters``, ``init``, ``logits``, ``loss``, ``per_example_gradients``."""

    n_features: int
    n_classes: int

    @property
    def n_parameters(self) -> int:
        raise NotImplementedError

    def init(self, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def logits(self, theta: np.ndarray, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def per_example_gradients(self, theta, x, y) -> np.ndarray:
        raise NotImplementedError

    def clipped_means(self, theta, x, y, n_clients: int, clip: float | None) -> np.ndarray:
        """``(n_clients, n_parameters)``: each client's mean of its per-example gradients, each
        clipped to L2 norm ``clip`` first (None: no clipping); ``x`` holds the clients' examples
        one client after the other. Equal to ``clipped_client_means`` of the per-example
        gradients; the models below compute it without materializing them."""
        grads = self.per_example_gradients(theta, x, y)
        return clipped_client_means(grads.reshape(n_clients, -1, grads.shape[1]), clip)

    def client_gradients(self, theta, x, y, n_clients: int, clip: float | None,
                         clip_point: str = "example") -> np.ndarray:
        """``(n_clients, n_parameters)``: what each client randomizes. ``clip_point =
        "example"``: :meth:`clipped_means` (each example clipped, then averaged);
        ``"client-mean"``: the mean of the raw gradients clipped to ``clip`` (003 Algorithm 3
        line 12 as printed; equal to ``clip_client_means`` of the per-example gradients)."""
        require(clip_point in CLIP_POINTS, "clip_point", clip_point,
                f"must be one of {list(CLIP_POINTS)}")
        if clip_point == "client-mean":
            means = self.clipped_means(theta, x, y, n_clients, None)
            return means if clip is None else clip_rows(means, clip)
        return self.clipped_means(theta, x, y, n_clients, clip)

    def per_example_losses(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Cross-entropy of each example, shape ``(batch,)``."""
        lsm = log_softmax(self.logits(theta, x))
        return -lsm[np.arange(x.shape[0]), np.asarray(y)]

    def loss(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
        """Mean cross-entropy over the examples."""
        return float(self.per_example_losses(theta, x, y).mean())

    def predict(self, theta: np.ndarray, x: np.ndarray) -> np.ndarray:
        return self.logits(theta, x).argmax(axis=-1)

    def accuracy(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
        return float((self.predict(theta, x) == np.asarray(y)).mean())


@dataclass(frozen=True)
class SoftmaxRegression(Model):
    """Multinomial logistic regression: ``theta = [W (n_features x n_classes), b (n_classes)]``.

    Initialized at zero (the loss is convex; zero is the usual start and matches scikit-learn's
    LogisticRegression)."""

    n_features: int
    n_classes: int

    def __post_init__(self):
        require_int_at_least("n_features", self.n_features, 1)
        require_int_at_least("n_classes", self.n_classes, 2)

    @property
    def n_parameters(self) -> int:
        return (self.n_features + 1) * self.n_classes

    def _unpack(self, theta):
        d, k = self.n_features, self.n_classes
        return theta[: d * k].reshape(d, k), theta[d * k:]

    def init(self, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(self.n_parameters)

    def logits(self, theta, x):
        w, b = self._unpack(theta)
        return x @ w + b

    def per_example_gradients(self, theta, x, y):
        x = np.asarray(x, dtype=float)
        p = np.exp(log_softmax(self.logits(theta, x)))
        delta = p - _one_hot(np.asarray(y), self.n_classes)  # (B, K)
        dw = (x[:, :, None] * delta[:, None, :]).reshape(x.shape[0], -1)
        return np.concatenate([dw, delta], axis=1)

    def clipped_means(self, theta, x, y, n_clients, clip):
        """Per-example norms from the factors: ||x delta^T||^2 + ||delta||^2 =
        (||x||^2 + 1) ||delta||^2; then one weighted product per client."""
        x = np.asarray(x, dtype=float)
        delta = np.exp(log_softmax(self.logits(theta, x))) - _one_hot(np.asarray(y),
                                                                       self.n_classes)
        scale = _clip_scale(((x * x).sum(axis=1) + 1.0) * (delta * delta).sum(axis=1), clip)
        xs = x.reshape(n_clients, -1, x.shape[1])
        ds = (delta * scale[:, None]).reshape(n_clients, -1, delta.shape[1])
        m = xs.shape[1]
        dw = np.matmul(xs.transpose(0, 2, 1), ds).reshape(n_clients, -1) / m
        return np.concatenate([dw, ds.mean(axis=1)], axis=1)


@dataclass(frozen=True)
class MLP(Model):
    """One hidden ReLU layer: ``theta = [W1 (d x h), b1 (h), W2 (h x k), b2 (k)]``.

    Initialization: He et al. (2015) normal weights for W1 (std sqrt(2/d)), Glorot-scale normal
    for W2 (std sqrt(1/h)), zero biases, drawn from the given generator."""

    n_features: int
    n_classes: int
    hidden: int = 64

    def __post_init__(self):
        require_int_at_least("n_features", self.n_features, 1)
        require_int_at_least("n_classes", self.n_classes, 2)
        require_int_at_least("hidden", self.hidden, 1)

    @property
    def n_parameters(self) -> int:
        d, h, k = self.n_features, self.hidden, self.n_classes
        return d * h + h + h * k + k

    def _unpack(self, theta):
        d, h, k = self.n_features, self.hidden, self.n_classes
        i = 0
        w1 = theta[i: i + d * h].reshape(d, h)
        i += d * h
        b1 = theta[i: i + h]
        i += h
        w2 = theta[i: i + h * k].reshape(h, k)
        i += h * k
        return w1, b1, w2, theta[i: i + k]

    def init(self, rng: np.random.Generator) -> np.ndarray:
        d, h, k = self.n_features, self.hidden, self.n_classes
        w1 = rng.normal(0.0, np.sqrt(2.0 / d), size=d * h)
        w2 = rng.normal(0.0, np.sqrt(1.0 / h), size=h * k)
        return np.concatenate([w1, np.zeros(h), w2, np.zeros(k)])

    def _forward(self, theta, x):
        w1, b1, w2, b2 = self._unpack(theta)
        a = x @ w1 + b1
        hid = np.maximum(a, 0.0)
        return a, hid, hid @ w2 + b2

    def logits(self, theta, x):
        return self._forward(theta, x)[2]

    def per_example_gradients(self, theta, x, y):
        x = np.asarray(x, dtype=float)
        w1, b1, w2, b2 = self._unpack(theta)
        a, hid, z = self._forward(theta, x)
        d2 = np.exp(log_softmax(z)) - _one_hot(np.asarray(y), self.n_classes)  # (B, K)
        d1 = (d2 @ w2.T) * (a > 0)  # (B, H)
        n = x.shape[0]
        dw1 = (x[:, :, None] * d1[:, None, :]).reshape(n, -1)
        dw2 = (hid[:, :, None] * d2[:, None, :]).reshape(n, -1)
        return np.concatenate([dw1, d1, dw2, d2], axis=1)

    def clipped_means(self, theta, x, y, n_clients, clip):
        """Per-example squared norms from the factors, (||x||^2 + 1) ||d1||^2 +
        (||h||^2 + 1) ||d2||^2, then weighted products per client: for MNIST's clients of 600
        examples and 100 hidden units, no (600, 7,110) array of per-example gradients."""
        x = np.asarray(x, dtype=float)
        w1, b1, w2, b2 = self._unpack(theta)
        a, hid, z = self._forward(theta, x)
        d2 = np.exp(log_softmax(z)) - _one_hot(np.asarray(y), self.n_classes)
        d1 = (d2 @ w2.T) * (a > 0)
        norms2 = (((x * x).sum(axis=1) + 1.0) * (d1 * d1).sum(axis=1)
                  + ((hid * hid).sum(axis=1) + 1.0) * (d2 * d2).sum(axis=1))
        scale = _clip_scale(norms2, clip)[:, None]
        c = n_clients
        xs, hs = x.reshape(c, -1, x.shape[1]), hid.reshape(c, -1, hid.shape[1])
        d1s = (d1 * scale).reshape(c, -1, d1.shape[1])
        d2s = (d2 * scale).reshape(c, -1, d2.shape[1])
        m = xs.shape[1]
        dw1 = np.matmul(xs.transpose(0, 2, 1), d1s).reshape(c, -1) / m
        dw2 = np.matmul(hs.transpose(0, 2, 1), d2s).reshape(c, -1) / m
        return np.concatenate([dw1, d1s.mean(axis=1), dw2, d2s.mean(axis=1)], axis=1)


MODELS = {"softmax": SoftmaxRegression, "mlp": MLP}


def make_model(name: str, n_features: int, n_classes: int, hidden: int = 64) -> Model:
    """``"softmax"`` (softmax regression) or ``"mlp"`` (one hidden ReLU layer of ``hidden``)."""
    require(name in MODELS, "model", name, f"must be one of {sorted(MODELS)}")
    if name == "mlp":
        return MLP(n_features, n_classes, hidden)
    return SoftmaxRegression(n_features, n_classes)
