"""Gradient (vector) clients at the pipeline level (issue 29 item 4): the clients send whole
vector reports, the shuffler sees and permutes whole vector messages, and the attacks project
each *released* message onto the inputs' difference.

The claim and the reduction are those of the shuffle level (simulator/audit/gradient.py,
:class:`GradientClaim`: Gaussian noise of the analytic sigma, Balle and Wang, ICML 2018, Thm 8,
at L2 sensitivity Delta = 2 clip / m). A scalar input x in [0, 1] is sent as the clipped
gradient g(x) = g_lo + x (g_hi - g_lo); the client's report y (a vector of ``dim`` numbers)
travels through the pipeline as it is, and the auditor maps each released message to

    s = e . (y - g_lo) / Delta,   e = (g_hi - g_lo) / |g_hi - g_lo|,

which under the claim is the registered scalar ``gaussian(eps0, delta0)`` report of x on
[0, 1]. The map is fixed before any trial and is applied to every released message alike, so
it is a post-processing of the released sequence that commutes with any permutation: the
released sequence of projections has exactly the law of the scalar pipeline's release, and the
scalar pipeline audit's rows (binned.py's cut points, the histogram and order attacks, the
claim's own eps at the audited pair) keep their confidence. An empirical lower bound above the
scalar claim's eps convicts the gradient client, since post-processing cannot raise a
mechanism's privacy loss. The user's shuffler, by contrast, sees the raw vectors: a shuffler
that drops, alters or orders vector messages is judged on the vectors themselves
(message_shuffler.py).

:class:`ProjectedGradientClient` is the scalar client (the projection of the user's reports)
that the audit's machinery loads; its ``vector_client`` is what the pipeline level sends
instead (pipeline_level.py reads it through :func:`vector_client`). The learned attack on the
same released vectors: pipeline_learned.py.
"""

from __future__ import annotations

import numpy as np

from shufflesim.simulator.audit.loading import FIELD, seed_global_state
from shufflesim.simulator.usercode import UserCodeError, contained, numeric_array


def client_reports(client, source: str, gradients: np.ndarray, rng) -> np.ndarray:
    """The gradient client's reports of ``gradients`` (reports, dim), as floats; whatever it
    raises, prints or returns of another shape or kind is answered in one line (UserCodeError
    naming FIELD and ``source``)."""
    with contained(FIELD, source, client):
        reports = client(gradients, rng)
    reports = numeric_array(reports, FIELD, source)
    if reports.shape != gradients.shape:
        raise UserCodeError(FIELD, source, f"returned shape {reports.shape} for gradients "
                            f"of shape {gradients.shape}: a gradient client returns one "
                            "report of the gradient's shape per gradient")
    return reports.astype(float)


class VectorClient:
    """The user's gradient client seen as a pipeline client: scalar inputs in, the raw vector
    reports out (shape ``values.shape + (dim,)``), checked to be finite numbers of the
    gradient's shape; :meth:`project` is the fixed map to the scalar report (module
    docstring)."""

    multi_message = False
    messages_per_client = 1

    def __init__(self, function, g_lo: np.ndarray, g_hi: np.ndarray, sensitivity: float,
                 source: str) -> None:
        self.function = function
        self.g_lo = np.asarray(g_lo, dtype=float)
        self.step = np.asarray(g_hi, dtype=float) - self.g_lo
        self.unit = self.step / np.linalg.norm(self.step)
        self.sensitivity = float(sensitivity)
        self.source = source
        self.name = source

    @property
    def message_size(self) -> int:
        """Numbers per message (the gradient's coordinates)."""
        return int(self.g_lo.size)

    def randomize(self, values, rng, epsilon=None) -> np.ndarray:
        """The reports of one block of clients, with Python's and numpy's global generators
        seeded from ``rng`` first, as every implementation call is (loading.py)."""
        seed_global_state(rng)
        return self.reports(values, rng)

    def reports(self, values, rng) -> np.ndarray:
        """The user's raw vector reports of the scalar inputs ``values`` (checked)."""
        x = np.asarray(values, dtype=float)
        gradients = self.g_lo + x.reshape(-1, 1) * self.step
        reports = client_reports(self.function, self.source, gradients, rng)
        if not np.isfinite(reports).all():
            raise UserCodeError(FIELD, self.source, "returned a report that is not finite")
        return reports.reshape(x.shape + self.g_lo.shape)

    def project(self, reports) -> np.ndarray:
        """s = e . (y - g_lo) / Delta for reports of shape (..., dim)."""
        reports = np.asarray(reports, dtype=float)
        return (reports - self.g_lo) @ self.unit / self.sensitivity


class ProjectedGradientClient:
    """The scalar client x -> project(client(g(x))) of a gradient claim (module docstring),
    with the raw vector client beside it (``vector_client``) for the pipeline level."""

    def __init__(self, client, claim, source: str | None = None) -> None:
        g_lo, g_hi = claim.inputs()
        source = source or getattr(client, "__name__", repr(client))
        self.vector_client = VectorClient(client, g_lo, g_hi, claim.sensitivity, source)
        self.__name__ = f"{source} (vector reports, projected onto the inputs' difference)"
        self.__module__ = getattr(client, "__module__", "?")
        self.__qualname__ = getattr(client, "__qualname__", source)

    def __call__(self, values, rng):  # through loading.Implementation.call (seeded there)
        vectors = self.vector_client.reports(values, rng)
        return self.vector_client.project(vectors)


class ProjectedBins:
    """A binned scalar claim (binned.BinnedClaim) read through the projection: the released
    vector messages are projected, then binned at the claim's cut points."""

    def __init__(self, binned, vector: VectorClient) -> None:
        self.binned = binned
        self.vector = vector

    def __getattr__(self, attr: str):
        binned = self.__dict__.get("binned")
        if binned is None or attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(binned, attr)

    def output_index(self, reports) -> np.ndarray:
        return self.binned.output_index(self.vector.project(reports))


def vector_client(client) -> VectorClient | None:
    """The vector client behind an implementation under test whose function is a
    :class:`ProjectedGradientClient`, else None."""
    implementation = getattr(client, "implementation", None)
    function = getattr(implementation, "function", None)
    return getattr(function, "vector_client", None)

