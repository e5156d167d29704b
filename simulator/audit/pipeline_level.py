"""Pipeline-level audit: the shuffle-level attacks, and an order-aware one, on outputs of the whole
SimPy pipeline (clients -> shuffler -> analyzer; docs/architecture.md, "The auditor", level 3).

A trial is one collection round of :func:`simulator.pipeline.run_pipeline` with the clients
holding X0 = (x0, x2, ..., x2) or X1 = (x1, x2, ..., x2) (client 0 is user 1). A pipeline run
with ``rounds = R`` gives R independent trials (every round draws fresh arrivals, randomness
and permutations for the same values); trials are run in chunks of rounds, each chunk from its
own SeedSequence. The others must hold a fixed x2 here: values drawn once per run would make
the rounds of a run dependent.

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

An implementation under test (implementation.ImplementationRandomizer) runs inside the SimPy
clients (``randomize`` of every client calls the user's code). With ``cover_domain`` (the
default for implementations, categorical domains) the other users do not all hold x2: user i
(i = 2..n) holds (x2 + i - 2) mod d, a fixed assignment that passes every value of the domain
through the code every round (with a fixed x2 an off-by-one at a value nobody holds is never
exercised). The histogram attacks then use the output groups of the mixture of the others'
inputs (a fixed function of the histogram: valid whatever the law), and no exact value stands
beside their rows (the others are not exchangeable). A goodness-of-fit row per world tests the
pooled released reports against their declared expectation, the sum of R(value of the sender)
over the released messages (senders are known to the auditor; the same conservative Pearson
test as the shuffle level). A user's own shuffler is audited through ``permutation``
(implementation.shuffler_permutation); the ``order`` attack catches one that does not permute.
"""

from __future__ import annotations

import dataclasses
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
from shufflesim.simulator.audit.message_shuffler import MessageShuffler
from shufflesim.simulator.audit.randomizer_level import FitResult, chi_square_fit
from shufflesim.simulator.audit.sampling import child, chunk_sizes
from shufflesim.simulator.audit.shuffle_level import (
    AttackAudit,
    AuditOptions,
    attack_rows,
    check_deltas,
    exact_by_direction,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.pipeline import PipelineConfig, run_pipeline, uniform_permutation
from shufflesim.simulator.pipeline.clients import messages_per_client

#: Spawn keys of a user shuffler's generator and of the audit's reference permutations.
SHUFFLER_KEY = 0x5F1
#: Rounds per pipeline run (bounded memory: the run keeps rounds x n reports).
ROUNDS_PER_RUN = 500


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


def _round_statistics(result, groups: OutputGroups, randomizer, rounds: int, fit=None):
    """(group histograms (rounds, G), order-attack bins (rounds,)) of one pipeline run;
    ``fit`` = (observed, senders) count arrays to add the released outputs and their senders'
    values to (goodness of fit of an implementation)."""
    g = groups.model.groups
    released = [b for b in result.outputs if b.reports is not None]
    if released:
        reports = np.concatenate([b.reports for b in released])
        idx = np.asarray(randomizer.output_index(reports), dtype=np.int64)
        batch_round = np.repeat([b.round for b in released], [b.size for b in released])
        if fit is not None:
            observed, senders, values = fit
            observed += np.bincount(idx, minlength=observed.size)
            clients = np.concatenate([b.clients for b in released])
            senders += np.bincount(values[clients], minlength=senders.size)
    else:
        idx = np.zeros(0, dtype=np.int64)
        batch_round = np.zeros(0, dtype=np.int64)
    hist = np.bincount(batch_round * g + groups.group[idx], minlength=rounds * g)
    hist = hist.reshape(rounds, g)
    # User 1's arrival rank per round (-1 if it did not send).
    clients = [s.client for s in result.streams]
    lengths = np.array([c.size for c in clients])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    flat = np.concatenate(clients) if clients else np.zeros(0, dtype=np.int64)
    hits = np.flatnonzero(flat == 0)
    hit_round = np.searchsorted(starts, hits, side="right") - 1
    rank = np.full(rounds, -1)
    rank[hit_round] = hits - starts[hit_round]
    # Released output at that rank, per round.
    out_count = np.bincount(batch_round, minlength=rounds)
    out_start = np.concatenate(([0], np.cumsum(out_count)[:-1]))
    present = (rank >= 0) & (rank < out_count)
    order = np.full(rounds, groups.missing_bin)
    order[present] = groups.order_bin[idx[out_start[present] + rank[present]]]
    return hist, order


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
    (message_shuffler.MessageShuffler: the pipeline releases in arrival order, the shuffler
    releases each batch, and its checks are tallied on the object); ``cover_domain`` (default:
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
    if implementation and categorical and domain.size <= MAX_FIT_INPUTS:
        size = int(declared.output_size)
        fit_state = [(np.zeros(size, dtype=np.int64), np.zeros(domain.size, dtype=np.int64),
                      values[w]) for w in (0, 1)]
    total = 2 * options.trials
    done = 0
    names = [a.name for a in attacks]
    counts = {(a.name, w, phase): np.zeros(a.bins, dtype=np.int64)
              for a in attacks for w in (0, 1) for phase in (0, 1)}
    per_run = min(options.chunk, ROUNDS_PER_RUN)
    for phase, size in ((0, options.selection_trials), (1, options.evaluation_trials)):
        for w in (0, 1):
            for c, rounds in enumerate(chunk_sizes(size, per_run)):
                rng = np.random.default_rng(child(seq, w, phase, c))
                result = run_pipeline(randomizer, values[w],
                                      dataclasses.replace(config, rounds=rounds), rng,
                                      keep_outputs=True, permutation=(
                                          permutation if shuffler is None
                                          else identity_permutation))
                if shuffler is not None:
                    result = shuffler.shuffle_run(
                        result, np.random.default_rng(child(seq, w, phase, c, SHUFFLER_KEY)),
                        np.random.default_rng(child(seq, w, phase, c, SHUFFLER_KEY + 1)))
                hist, order = _round_statistics(result, groups, randomizer, rounds,
                                                None if fit_state is None else fit_state[w])
                chunk = RoundChunk(n, hist, order)
                for a in attacks:
                    counts[(a.name, w, phase)] += np.bincount(
                        np.clip(a.bin(chunk), 0, a.bins - 1), minlength=a.bins)
                done += rounds
                if progress is not None:
                    progress(done, total)
    holdout = options.selection_trials > 0
    per_bin = {name: ((counts[(name, 0, 0)], counts[(name, 1, 0)]) if holdout else (None, None),
                      (counts[(name, 0, 1)], counts[(name, 1, 1)])) for name in names}
    describe = {a.name: a.describe for a in attacks}
    shuffled = shuffled_size(n, config)
    exact = ({d: exact_by_direction(groups.model, d, shuffled) for d in deltas}
             if with_exact and not cover_domain else None)
    rows = attack_rows(names, per_bin, describe, options, deltas, exact)
    summary = {d: max(v[0] for v in exact[d]) for d in deltas} if exact else {}
    fits = ()
    if fit_state is not None:
        pmf = np.asarray(declared.output_pmf(np.arange(domain.size)), dtype=float)
        fits = tuple(_pooled_fit(w, observed, senders, pmf)
                     for w, (observed, senders, _) in enumerate(fit_state))
    label = groups.model.label
    note = ""
    if cover_domain:
        label = f"x0 = {x0}, x1 = {x1}, others hold (x2 + i) mod {domain.size} from x2 = {x2}"
        note = "others cycle through the domain: no exact value for this pair"
    source = randomizer.implementation.source if implementation else ""
    return AttackAudit("pipeline", randomizer.name, float(randomizer.epsilon0), n, label,
                       options, tuple(rows), time.perf_counter() - start, summary, fits,
                       source, note)


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


register_level(Level.PIPELINE, "the whole SimPy pipeline (clients, shuffler, analyzer)")
