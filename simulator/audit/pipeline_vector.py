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
instead (pipeline_level.py reads it through :func:`vector_client`).

**The learned attack** (learned_attack.py, DP-Sniper style: Bichsel et al., IEEE S&P 2021)
also runs on the raw released vectors (:func:`learned_pipeline`), so a leak off the inputs'
difference, which the projection cannot see, is found. It needs every round to release the n
messages as one batch (``one_shuffle``: no dropout, no timeout, no size trigger below n), so
that a trial is one multiset of n vectors; its features are symmetric, so it reads the
multiset. Its threshold is pair_upper.continuous_pair_epsilon of the scalar claim at the pair
(x0, x1, others at x1): for the claimed isotropic Gaussian the report's likelihood ratio
between g(x0) and g(x1) depends on the projection alone, and the part orthogonal to e is
noise of one law in both worlds, so the shuffled vectors are a randomized post-processing of
the shuffled projections (attach that noise to each) and have the same eps: the bound holds
for every statistic of the raw vectors (the verdict ``implementation-learned``, its own test
group in Holm's procedure).
"""

from __future__ import annotations

import numpy as np

from shufflesim.simulator.audit import pair_upper
from shufflesim.simulator.audit.learned_attack import learned_audit, learned_verdict
from shufflesim.simulator.audit.loading import FIELD, seed_global_state
from shufflesim.simulator.audit.pipeline_batch import audit_shuffle_release, draw_rounds
from shufflesim.simulator.audit.sampling import child
from shufflesim.simulator.audit.shuffle_level import AuditOptions
from shufflesim.simulator.usercode import UserCodeError, contained, numeric_array

#: Most trials per world the learned attack takes at the pipeline level (it is one more row
#: beside the projection's; fewer trials only cost it power).
LEARNED_TRIALS = 200_000
#: Spawn key of the learned attack's streams at the pipeline level.
LEARNED_PIPELINE_KEY = 0x1EA3


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
        with contained(FIELD, self.source, self.function):
            reports = self.function(gradients, rng)
        reports = numeric_array(reports, FIELD, self.source)
        if reports.shape != gradients.shape:
            raise UserCodeError(FIELD, self.source, f"returned shape {reports.shape} for "
                                f"gradients of shape {gradients.shape}: a gradient client "
                                "returns one report of the gradient's shape per gradient")
        if not np.isfinite(reports).all():
            raise UserCodeError(FIELD, self.source, "returned a report that is not finite")
        return reports.astype(float).reshape(x.shape + self.g_lo.shape)

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


def learned_pipeline(vector: VectorClient, scalar, n: int, deltas, options, seed, config,
                     x0: float, x1: float, x2: float):
    """(the learned attack's AttackAudit, its verdicts per delta) on the pipeline's released
    vector messages (module docstring), or None when a round is not one batch of n."""
    if not (config.dropout == 0 and config.timeout is None and config.min_batch <= n
            and (config.batch_size is None or config.batch_size >= n)):
        return None
    values = [np.concatenate(([x], np.full(n - 1, x2))) for x in (x0, x1)]
    dim = vector.message_size

    def draw(world: int, trials: int, rng: np.random.Generator) -> np.ndarray:
        rounds = draw_rounds(vector, values[world], config, trials, rng)
        release = audit_shuffle_release(rounds, rng)
        return release.reports.reshape(trials, n, dim)

    trials = min(int(options.trials), LEARNED_TRIALS)
    learned_options = AuditOptions(trials, options.confidence, chunk=options.chunk,
                                   holdout_fraction=options.holdout_fraction,
                                   shortlist=options.shortlist)
    audit = learned_audit(draw, n, deltas, learned_options, child(seed, LEARNED_PIPELINE_KEY),
                          level="pipeline", randomizer=getattr(scalar, "name", ""),
                          epsilon0=float(scalar.epsilon0),
                          pair=f"g(x0 = {x0:g}) vs g(x1 = {x1:g}), others g({x2:g})",
                          implementation=vector.source)
    usable = x2 == x1 and pair_upper.applies(scalar)
    verdicts = [learned_verdict(
        audit, d, pair_upper.continuous_pair_epsilon(scalar, x0, x1, n, d) if usable else None,
        "the claim's pair upper bound (pair_upper.py)", f"{scalar.name} gradient claim")
        for d in audit.deltas]
    return audit, verdicts
