"""The learned attack at the pipeline level (issue 29 item 4): DP-Sniper's classifier-based event
(Bichsel, Steffen, Bogunovic and Vechev, IEEE S&P 2021, Sec. IV-V; simulator/audit/
learned_attack.py) on the multiset each pipeline round releases, for clients whose reports
are vectors or points:

* a Gaussian gradient client (:func:`learned_pipeline`, beside the projection's rows of
  pipeline_vector.py): the learned attack reads the raw released vectors, so a leak off the
  inputs' difference, which the projection cannot see, is found. Its threshold is
  pair_upper.continuous_pair_epsilon of the scalar claim at the pair (x0, x1, others at x1):
  for the claimed isotropic Gaussian the report's likelihood ratio between g(x0) and g(x1)
  depends on the projection alone, and the part orthogonal to the inputs' difference is noise
  of one law in both worlds, so the shuffled vectors are a randomized post-processing of the
  shuffled projections (attach that noise to each) and have the same eps: the bound holds for
  every statistic of the raw vectors (the verdict ``implementation-learned``, its own test
  group in Holm's procedure);
* a continuous claim without output groups (planar_laplace; :func:`audit_pipeline_learned`):
  the learned attack is the level's attack, judged like the shuffle level's claim-lr rows
  (claim_lr.py) against the claim's smallest proven shuffled upper bound at (n, delta), which
  holds for every post-processing of the claimed shuffled output.

Both need every round to release its n messages as one batch (pipeline_batch.one_shuffle: no
dropout, no timeout, no size trigger below n), so that a trial is one multiset of n reports
(the features are symmetric: they read the multiset). The rounds are drawn as the pipeline
level draws them (pipeline_batch.draw_rounds: the client's code once per block) and released by
the audit's uniform shuffler; a user's shuffler is checked on a sample of rounds
(pipeline_level.run_shuffler_sample) and its verdicts say so.
"""

from __future__ import annotations

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.simulator.audit import pair_upper
from shufflesim.simulator.audit.claim_lr import lr_triple
from shufflesim.simulator.audit.learned_attack import learned_audit, learned_verdict
from shufflesim.simulator.audit.message_shuffler import MAX_SHUFFLER_CALLS
from shufflesim.simulator.audit.pipeline_batch import (
    audit_shuffle_release,
    draw_rounds,
    one_shuffle,
    rounds_per_block,
)
from shufflesim.simulator.audit.pipeline_level import run_shuffler_sample
from shufflesim.simulator.audit.pipeline_vector import VectorClient
from shufflesim.simulator.audit.sampling import child
from shufflesim.simulator.audit.shuffle_level import AuditOptions

#: Most trials per world the learned attack takes at the pipeline level (it is one more row
#: beside the projection's; fewer trials only cost it power).
LEARNED_TRIALS = 200_000
#: Spawn key of the learned attack's streams at the pipeline level.
LEARNED_PIPELINE_KEY = 0x1EA3


def _draw(client, values, config, n: int):
    """draw(world, trials, rng): the released reports of ``trials`` rounds, shaped (trials, n)
    + the report's shape."""
    def draw(world: int, trials: int, rng: np.random.Generator) -> np.ndarray:
        rounds = draw_rounds(client, values[world], config, trials, rng)
        reports = audit_shuffle_release(rounds, rng).reports
        return reports.reshape((trials, n) + reports.shape[1:])
    return draw


def learned_pipeline(vector: VectorClient, scalar, n: int, deltas, options, seed, config,
                     x0: float, x1: float, x2: float):
    """(the learned attack's AttackAudit, its verdicts per delta) on the pipeline's released
    vector messages (module docstring), or None when a round is not one batch of n."""
    if not one_shuffle(n, config):
        return None
    values = [np.concatenate(([x], np.full(n - 1, x2))) for x in (x0, x1)]
    trials = min(int(options.trials), LEARNED_TRIALS)
    learned_options = AuditOptions(trials, options.confidence, chunk=options.chunk,
                                   holdout_fraction=options.holdout_fraction,
                                   shortlist=options.shortlist)
    audit = learned_audit(_draw(vector, values, config, n), n, deltas, learned_options,
                          child(seed, LEARNED_PIPELINE_KEY), level="pipeline",
                          randomizer=getattr(scalar, "name", ""),
                          epsilon0=float(scalar.epsilon0),
                          pair=f"g(x0 = {x0:g}) vs g(x1 = {x1:g}), others g({x2:g})",
                          implementation=vector.source)
    usable = x2 == x1 and pair_upper.applies(scalar)
    verdicts = [learned_verdict(
        audit, d, pair_upper.continuous_pair_epsilon(scalar, x0, x1, n, d) if usable else None,
        "the claim's pair upper bound (pair_upper.py)", f"{scalar.name} gradient claim")
        for d in audit.deltas]
    return audit, verdicts


def audit_pipeline_learned(tested, n: int, deltas, options, seed: np.random.SeedSequence,
                           config, shuffler=None):
    """The pipeline level of a continuous claim without output groups (module docstring): an
    AttackAudit of the learned attack on the released reports, the pair (x0, x1, others at
    x1) the claim's first candidate pair (claim_lr.lr_triple)."""
    require(one_shuffle(n, config), "pipeline", "dropout, timeout or batch_size below n",
            f"{tested.declared.name} is audited at the pipeline level only when every round "
            "is released as one batch of n (its proven bounds are for one shuffle of n); "
            "use the shuffle level (level = shuffle)")
    x0, x1, x2 = lr_triple(tested.declared)
    values = [np.concatenate(([x], np.full(n - 1, x2))) for x in (x0, x1)]
    audit = learned_audit(_draw(tested, values, config, n), n, deltas, options,
                          child(seed, LEARNED_PIPELINE_KEY), level="pipeline",
                          randomizer=tested.name, epsilon0=float(tested.epsilon0),
                          pair=f"(x0, x1, x2) = ({x0}, {x1}, {x2})",
                          implementation=tested.implementation.source)
    if shuffler is not None:  # its checks on a sample of rounds of its own streams
        rounds = max(1, min(options.trials, MAX_SHUFFLER_CALLS // 2))
        shuffler.scope = (f"; called on {rounds} rounds per world (the learned attack's rows "
                          "ran the audit's own uniform shuffler)")
        run_shuffler_sample(shuffler, tested, values, config, rounds, rounds_per_block(n),
                            child(seed, LEARNED_PIPELINE_KEY, 1))
    return audit
