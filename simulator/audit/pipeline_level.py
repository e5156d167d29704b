"""Pipeline-level audit: the shuffle-level attacks, and an order-aware one, on outputs of the whole
pipeline (clients -> shuffler -> analyzer; docs/architecture.md, "The auditor", level 3).

A trial is one collection round of the pipeline (simulator/pipeline/: clients send, the
shuffler batches and permutes, the analyzer receives) with the clients holding
X0 = (x0, x2, ..., x2) or X1 = (x1, x2, ..., x2) (client 0 is user 1). Rounds are independent
(fresh arrivals, randomness and permutations for the same values) and are simulated per block
of rounds (pipeline_batch.py: the client's code called once per block on a (rounds, n) array,
the batches of simulator/pipeline/shuffler.py's rules computed for every round at once), each
block from its own SeedSequence child. The others must hold a fixed x2 here: values drawn once
per run would make the rounds dependent.

Statistics per round:

* the histogram attacks of attacks.py on the group histogram of the round's released reports
  (groups: outputs with equal ratios (R(x0)/R(x2), R(x1)/R(x2)), from the declared pmf);
* ``order``: the report at user 1's arrival position. The attacker sees when user 1 sent (its
  rank among the round's arrivals) and reads the released output at that position (the round's
  released batches concatenated in release order); bins order the outputs by the single-report
  ratio R(x0)(y) / R(x1)(y), with "no report there" counted as ratio 1. Against a uniform
  permutation this position carries (almost) nothing; against a shuffler that does not permute
  it is user 1's report, and the bound approaches eps0.

The exact value beside each row, and the bounds of the verdicts, are evaluated at the number of
reports shuffled together with user 1 (:func:`shuffled_size`): n, or the batch size when the
pipeline releases fixed-size batches (batch membership depends on arrival order only, so the
other batches carry no information about user 1). With dropouts, timeouts, thresholding or
colluders the shuffled set is random and smaller; the comparison is then indicative only.

An implementation under test (implementation.ImplementationRandomizer) is the clients' code
(one call per block of rounds). With ``cover_domain`` (the
default for implementations, categorical domains) the other users do not all hold x2: user i
(i = 2..n) holds (x2 + i - 2) mod d, a fixed assignment that passes every value of the domain
through the code every round (with a fixed x2 an off-by-one at a value nobody holds is never
exercised). The histogram attacks then use the output groups of the mixture of the others'
inputs (a fixed function of the histogram: valid whatever the law), and no exact value stands
beside their rows (the others are not exchangeable). A goodness-of-fit row per world tests the
pooled released reports against their declared expectation, the sum of R(value of the sender)
over the released messages (senders are known to the auditor; the same conservative Pearson
test as the shuffle level; the reports counted are those the clients sent in released batches).

A user's shuffler (message_shuffler.MessageShuffler) sees every released batch: its messages in
arrival order with their arrival metadata, and its release is what the attacks see. A function
called once per batch costs a Python call each: when the audit needs more than
MAX_SHUFFLER_CALLS of them, the attack rows run the audit's own uniform shuffler on every trial
and the user's shuffler is called on a sample of rounds per world (its own streams), whose
permutation and order checks are its verdicts; the verdicts' reasons say so. A function marked
``batched = True`` is called once per block of equal-size batches and sees every trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.domains import Categorical
from shufflesim.simulator.audit.attacks import (
    Attack,
    AttackSetting,
    HistogramChunk,
    build_attacks,
)
from shufflesim.simulator.audit.groups import OutputGroups, output_groups
from shufflesim.simulator.audit.levels import Level, register_attack, register_level
from shufflesim.simulator.audit.message_shuffler import MAX_SHUFFLER_CALLS, MessageShuffler
from shufflesim.simulator.audit.pipeline_batch import (
    Release,
    audit_shuffle_release,
    draw_rounds,
    one_shuffle,
    permutation_release,
    released_batches,
    rounds_per_block,
)
from shufflesim.simulator.audit.pipeline_vector import ProjectedBins, vector_client
from shufflesim.simulator.audit.randomizer_level import FitResult, chi_square_fit
from shufflesim.simulator.audit.sampling import child, chunk_sizes
from shufflesim.simulator.audit.shuffle_level import (
    AttackAudit,
    AuditOptions,
    attack_rows,
    check_deltas,
    claim_pair_epsilon,
    exact_by_direction,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.pipeline import PipelineConfig, uniform_permutation
from shufflesim.simulator.pipeline.clients import messages_per_client

#: Spawn keys of a user shuffler's generator and of the audit's reference permutations.
SHUFFLER_KEY = 0x5F1


def identity_permutation(rng: np.random.Generator, size: int) -> np.ndarray:
    """A faulty shuffler that releases messages in arrival order (for audits and demos)."""
    return np.arange(size)


class RoundChunk(HistogramChunk):
    """The statistics of a chunk of pipeline rounds: the group histograms of the released
    reports, and ``order``, the bin of the report at user 1's arrival position per round."""

    def __init__(self, n: int, counts: np.ndarray, order: np.ndarray) -> None:
        super().__init__(n, counts)
        self.order = order


@register_attack("order", levels=(Level.PIPELINE,),
                 description="the report at user 1's arrival position in the released batches",
                 note="catches a shuffler that does not permute")
class OrderAttack(Attack):
    """The released report at user 1's arrival position, binned by its single-report ratio
    (module docstring)."""

    name = "order"

    @classmethod
    def build(cls, setting: AttackSetting) -> list[Attack]:
        return [cls(setting.outputs)]

    def __init__(self, outputs: OutputGroups) -> None:
        self.bins = outputs.order_bins

    def bin(self, chunk: RoundChunk) -> np.ndarray:
        return chunk.order

    def describe(self, side: str, threshold: int) -> str:
        op = ">=" if side == "upper" else "<="
        return f"report at user 1's arrival position: ratio rank {op} {threshold}"


def release_statistics(release: Release, rank: np.ndarray, groups: OutputGroups, randomizer
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(group histograms (rounds, G), order-attack bins (rounds,)) of a block of rounds'
    released messages; ``rank``: user 1's arrival rank per round (-1: it did not send)."""
    g = groups.model.groups
    idx = np.asarray(randomizer.output_index(release.reports), dtype=np.int64).reshape(-1)
    hist = np.bincount(release.trial * g + groups.group[idx], minlength=release.trials * g)
    present, where = release.at(rank)
    order = np.full(release.trials, groups.missing_bin)
    order[present] = groups.order_bin[idx[where[present]]]
    return hist.reshape(release.trials, g), order


def _fit_counts(rounds, randomizer, values, fit) -> None:
    """Add the reports the clients sent in released batches, and their senders' values
    (``values``: each client's index among the fit's inputs), to ``fit`` = (observed, senders)
    count arrays."""
    observed, senders = fit
    kept = rounds.reports if rounds.kept.all() else rounds.reports[rounds.kept]
    observed += np.bincount(np.asarray(randomizer.output_index(kept), dtype=np.int64)
                            .reshape(-1), minlength=observed.size)
    if rounds.kept.all():  # every client's messages released
        senders += rounds.trials * np.bincount(values, minlength=senders.size)
    else:
        senders += np.bincount(values[rounds.client[rounds.kept]], minlength=senders.size)


def audit_pipeline(
    randomizer, n: int, deltas, options: AuditOptions, seed: np.random.SeedSequence | int,
    *, x0, x1, x2, config: PipelineConfig | None = None,
    permutation: Callable = uniform_permutation, with_exact: bool = True,
    progress: Callable[[int, int], None] | None = None, cover_domain: bool | None = None,
    shuffler: MessageShuffler | None = None,
) -> AttackAudit:
    """Audit the pipeline (module docstring); ``options.attacks`` may include "order".

    ``permutation`` replaces the shuffler's permutation (fault injection, e.g.
    :func:`identity_permutation`); ``shuffler``: a user's shuffler that sees the messages
    (message_shuffler.MessageShuffler: it releases each batch, and its checks are tallied on
    the object); ``cover_domain`` (default:
    for an implementation under test with a categorical domain) cycles the others' inputs
    through the domain."""
    start = time.perf_counter()
    deltas = check_deltas(deltas)
    require(isinstance(n, int) and n >= 2, "n", n, "must be an integer >= 2")
    require(np.ndim(x2) == 0, "others", x2, "the pipeline level needs a fixed x2")
    if messages_per_client(randomizer) != 1:
        raise UserError(f"randomizer {randomizer.name}: the pipeline audit needs one message "
                        "per client")
    config = config or PipelineConfig()
    implementation = hasattr(randomizer, "implementation")
    declared = randomizer.declared if implementation else randomizer
    # a continuous claim's binned implementation (binned.py): the clients send, and the
    # shuffler sees, the raw reports; the attacks bin the released ones
    client = getattr(randomizer, "tested", randomizer)
    indexed = declared if client is not randomizer else randomizer
    vector = vector_client(client)  # a gradient client: vector messages (pipeline_vector.py)
    if vector is not None:
        client, indexed = vector, ProjectedBins(declared, vector)
    require(declared is not None, "implementation",
            getattr(getattr(randomizer, "implementation", None), "source", None),
            "a black box is audited at the randomizer level only: the pipeline level needs a "
            "claimed randomizer (its output groups)")
    domain = declared.input_domain
    categorical = isinstance(domain, Categorical)
    if cover_domain is None:
        cover_domain = implementation and categorical
    require(not cover_domain or categorical, "cover_domain", cover_domain,
            "needs a categorical input domain")
    others = np.full(n - 1, x2)
    if cover_domain:
        others = (int(x2) + np.arange(n - 1)) % domain.size
        others_law = np.bincount(others, minlength=domain.size) / (n - 1)
        groups = output_groups(declared, n, x0, x1, others_law)
    else:
        groups = output_groups(declared, n, x0, x1, x2)
    attacks = build_attacks(groups.model, options.attacks, options.resolution,
                            level=Level.PIPELINE, outputs=groups)
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    values = [np.concatenate(([x0], others)), np.concatenate(([x1], others))]
    fit_state = None
    # the inputs the pooled fit weighs (the domain, or a continuous claim's few fixed inputs)
    inputs = (np.arange(domain.size) if categorical
              else np.unique(np.concatenate(values)))
    codes = [np.searchsorted(inputs, v) for v in values]
    if implementation and inputs.size <= MAX_FIT_INPUTS and getattr(
            declared, "output_size", None) is not None:
        size = int(declared.output_size)
        fit_state = [(np.zeros(size, dtype=np.int64), np.zeros(inputs.size, dtype=np.int64))
                     for _ in (0, 1)]
    total = 2 * options.trials
    done = 0
    names = [a.name for a in attacks]
    counts = {(a.name, w, phase): np.zeros(a.bins, dtype=np.int64)
              for a in attacks for w in (0, 1) for phase in (0, 1)}
    per_block = min(options.chunk, rounds_per_block(
        n * messages_per_client(randomizer) * getattr(client, "message_size", 1)))
    sampled = shuffler is not None and shuffler_sample(
        shuffler, getattr(declared, "continuous", declared), values[0], config, options.trials,
        seq)
    for phase, size in ((0, options.selection_trials), (1, options.evaluation_trials)):
        for w in (0, 1):
            for c, block in enumerate(chunk_sizes(size, per_block)):
                key = child(seq, w, phase, c)
                rounds = draw_rounds(client, values[w], config, block,
                                     np.random.default_rng(key))
                mix = np.random.default_rng(child(key, SHUFFLER_KEY))
                if shuffler is not None and not sampled:
                    release = shuffler.release_rounds(
                        rounds, mix, np.random.default_rng(child(key, SHUFFLER_KEY + 1)))
                elif permutation is uniform_permutation or shuffler is not None:
                    release = audit_shuffle_release(rounds, mix)
                elif permutation is identity_permutation:
                    release = audit_shuffle_release(rounds, mix, permute=False)
                else:
                    release = permutation_release(rounds, permutation, mix)
                hist, order = release_statistics(release, rounds.user_rank(0), groups,
                                                 indexed)
                if fit_state is not None:
                    _fit_counts(rounds, indexed, codes[w], fit_state[w])
                chunk = RoundChunk(n, hist, order)
                for a in attacks:
                    counts[(a.name, w, phase)] += np.bincount(
                        np.clip(a.bin(chunk), 0, a.bins - 1), minlength=a.bins)
                done += block
                if progress is not None:
                    progress(done, total)
    if sampled:
        run_shuffler_sample(shuffler, client, values, config, sampled, per_block, seq)
    holdout = options.selection_trials > 0
    per_bin = {name: ((counts[(name, 0, 0)], counts[(name, 1, 0)]) if holdout else (None, None),
                      (counts[(name, 0, 1)], counts[(name, 1, 1)])) for name in names}
    describe = {a.name: a.describe for a in attacks}
    shuffled = shuffled_size(n, config)
    exact = ({d: exact_by_direction(groups.model, d, shuffled) for d in deltas}
             if with_exact and not cover_domain else None)
    rows = attack_rows(names, per_bin, describe, options, deltas, exact)
    summary = {d: max(v[0] for v in exact[d]) for d in deltas} if exact else {}
    pair = ({d: claim_pair_epsilon(groups.model, d) for d in deltas}
            if implementation and with_exact and not cover_domain and one_shuffle(n, config)
            else {})
    fits = ()
    if fit_state is not None:
        pmf = np.asarray(declared.output_pmf(inputs), dtype=float)
        fits = tuple(_pooled_fit(w, observed, senders, pmf)
                     for w, (observed, senders) in enumerate(fit_state))
    label = groups.model.label
    note = ""
    if cover_domain:
        label = f"x0 = {x0}, x1 = {x1}, others hold (x2 + i) mod {domain.size} from x2 = {x2}"
        note = "others cycle through the domain: no exact value for this pair"
    source = randomizer.implementation.source if implementation else ""
    return AttackAudit("pipeline", randomizer.name, float(randomizer.epsilon0), n, label,
                       options, tuple(rows), time.perf_counter() - start, summary, fits,
                       source, note, pair)


def shuffler_sample(shuffler: MessageShuffler, declared, values, config: PipelineConfig,
                     trials: int, seq: np.random.SeedSequence) -> int:
    """0 when a user's shuffler can see every trial, else the rounds per world it is called on
    (module docstring): its batches per round are measured on a pilot of the declared
    sampler's rounds."""
    if shuffler.batched:
        return 0
    pilot = draw_rounds(declared, values, config, PILOT_ROUNDS,
                        np.random.default_rng(child(seq, SHUFFLER_KEY + 2)))
    per_round = max(1.0, sum(g[0].size for g in released_batches(pilot).values())
                    / PILOT_ROUNDS)
    if 2 * trials * per_round <= MAX_SHUFFLER_CALLS:
        return 0
    sample = max(1, int(MAX_SHUFFLER_CALLS / (2 * per_round)))
    shuffler.scope = (f"; called on a sample of {sample} rounds per world: one Python call per "
                      f"batch, at most {MAX_SHUFFLER_CALLS} per audit (a function with "
                      f"batched = True sees every trial); the attack rows ran the audit's own "
                      f"uniform shuffler on all {trials} trials per world")
    return sample


def run_shuffler_sample(shuffler: MessageShuffler, randomizer, values, config, rounds: int,
                         per_block: int, seq: np.random.SeedSequence) -> None:
    """The user's shuffler on ``rounds`` rounds per world of its own streams (checks only)."""
    for w in (0, 1):
        for c, block in enumerate(chunk_sizes(rounds, per_block)):
            key = child(seq, w, SAMPLE_PHASE, c)
            drawn = draw_rounds(randomizer, values[w], config, block, np.random.default_rng(key))
            shuffler.release_rounds(drawn, np.random.default_rng(child(key, SHUFFLER_KEY)),
                                    np.random.default_rng(child(key, SHUFFLER_KEY + 1)))


#: Rounds of the pilot that counts a configuration's batches per round.
PILOT_ROUNDS = 64
#: Stream key (in the phase's place) of the user shuffler's sample of rounds.
SAMPLE_PHASE = 2
#: Largest categorical domain whose pooled goodness of fit the pipeline level computes.
MAX_FIT_INPUTS = 1 << 12


def _pooled_fit(world: int, observed, senders, pmf) -> FitResult:
    """Pearson chi-square of the pooled released outputs against sum_sender R(value)."""
    law = senders @ pmf
    stat, dof, p = chi_square_fit(observed, law / law.sum() if law.sum() > 0 else law)
    return FitResult(f"X{world}", "pooled chi-square", stat, dof, p, int(observed.sum()))


def shuffled_size(n: int, config: PipelineConfig | None) -> int:
    """How many reports user 1 is shuffled with: n, or the batch size if smaller."""
    if config is None or config.batch_size is None:
        return n
    return min(n, config.batch_size)


register_level(Level.PIPELINE, "the whole pipeline (clients, batching shuffler, analyzer)")
