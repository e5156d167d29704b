"""One audited setting, end to end: the chosen level's attacks, then the verdicts.

:class:`AuditSettings` is what the ``[audit]`` scenario section and the ``shufflesim audit``
command both build; :func:`run_audit` returns the rows of the ``audit`` table (tables.py) for
one randomizer and n. Randomness: everything is drawn from the SeedSequence given (the command
line uses ``SeedSequence(seed)``, a scenario ``SeedSequence(seed, spawn_key=(point, AUDIT_KEY))``).

An implementation under test (``implementation = "path/file.py:function"`` or
``"module:function"``, simulator/audit/implementation.py) is audited instead of the
randomizer's own sampler; the randomizer is then its claim (or ``claim=`` a black-box
:class:`Claim`). Its rows are the same from the three entry points - Python
(:func:`audit_implementation`), ``shufflesim audit --implementation`` and a scenario's
``[audit] implementation`` key - because all three draw from :func:`implementation_seed`
(``SeedSequence(seed, spawn_key=(point, AUDIT_KEY))``, point 0 outside a scenario). At the
shuffle level the other users' inputs default to the uniform law over a categorical domain
(every value passes through the code; for claims with more than 2^20 outputs, mapped by ratio
pairs, the x2 of the exact lower bound's triple instead); at the pipeline level they cycle
through the domain.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS, Categorical
from shufflesim.simulator.audit.adapter import ImplementationRandomizer
from shufflesim.simulator.audit.atoms import atom_rows
from shufflesim.simulator.audit.attacks import LR_RESOLUTION, require_finite_groups
from shufflesim.simulator.audit.audit_inputs import as_input, audit_triple
from shufflesim.simulator.audit.binned import binned_pair, continuous_triple, is_binnable
from shufflesim.simulator.audit.claim import Claim
from shufflesim.simulator.audit.claim_lr import audit_claim_lr, is_lr_claim, lr_triple
from shufflesim.simulator.audit.fresh_devices import fresh_device_rows
from shufflesim.simulator.audit.grading import attach_p_values, grade
from shufflesim.simulator.audit.input_search import final_shuffle, search_pipeline, search_shuffle
from shufflesim.simulator.audit.learned_rows import implementation_draw, learned_rows
from shufflesim.simulator.audit.levels import ATTACKS, LEVELS, Level, as_level, attack_names
from shufflesim.simulator.audit.loading import load_implementation
from shufflesim.simulator.audit.message_shuffler import load_shuffler
from shufflesim.simulator.audit.multi_message_level import audit_multi_message, is_multi_message
from shufflesim.simulator.audit.pipeline_learned import audit_pipeline_learned, learned_pipeline
from shufflesim.simulator.audit.pipeline_level import (
    audit_pipeline,
    identity_permutation,
    shuffled_size,
)
from shufflesim.simulator.audit.pipeline_multi import audit_pipeline_multi
from shufflesim.simulator.audit.pipeline_vector import vector_client
from shufflesim.simulator.audit.profile import profile_rows
from shufflesim.simulator.audit.randomizer_level import RandomizerAuditOptions, audit_randomizer
from shufflesim.simulator.audit.sampling import DEFAULT_CHUNK, child
from shufflesim.simulator.audit.shuffle_level import AuditOptions, audit_shuffle
from shufflesim.simulator.audit.tables import (
    attack_records,
    implementation_records,
    randomizer_records,
    verdict_records,
)
from shufflesim.simulator.audit.verdicts import bound_verdicts, fit_verdict, shuffled_verdict
from shufflesim.simulator.pipeline import PipelineConfig, uniform_permutation
from shufflesim.simulator.usercode import UserFunction

#: Second element of a scenario audit's spawn key (keeps it apart from the runner's units).
AUDIT_KEY = 0x617564
#: Spawn key of the randomizer-level attacks' streams (apart from the pair bounds' streams).
RANDOMIZER_ATTACK_KEY = 0x5EA


@dataclass(frozen=True)
class AuditSettings:
    """Options of one audit (scenario section ``[audit]`` / command ``shufflesim audit``).

    level: randomizer | shuffle | pipeline; delta: central deltas (shuffle, pipeline);
    trials: per world (shuffle, pipeline) or per input (randomizer), selection included;
    confidence: of the setting's maximum bound; holdout_fraction, shortlist: event selection
    (events.py; defaults 0.1 and 3, at the randomizer level 0.2 and 1); attacks: histogram
    attacks ("lr", "count") and, at the pipeline level, "order" (default: all that apply);
    x0, x1, x2: the neighbouring inputs (default: the triple of the exact lower bound);
    others: instead of x2, a probability vector over the inputs from which users 2..n draw
    theirs (shuffle level); bounds: catalogue bounds to judge (default: every applicable one;
    empty: no verdicts); permute: false makes the pipeline's shuffler keep arrival order (a
    planted fault, for demonstrations); chunk: trials per random stream chunk.

    Implementation under test (implementation.py): implementation: "path/file.py:function" or
    "module:function"; input_offset / output_offset: numbering of its inputs / scalar reports
    (a client numbering items from 1: input_offset = 1); vectorized: false calls it once per
    report (default: detected); two_stage: the shuffle level's faster estimate (user 1's
    report from the implementation, the others' from the declared law); shuffler:
    "path/file.py:function" of a user shuffler ``(messages, rng) -> messages`` for the
    pipeline level; claim_delta0: the delta0 it claims (randomizer level); support:
    "path/file.py:function" of a frequency oracle's decoder ``(reports, x) -> bool array``
    (report i supports value x), an event family of the randomizer level's ``search`` attack
    (needed for local hashing, whose reports are all distinct); fresh_devices: run the
    implementation in this many fresh processes too and test whether its randomness repeats
    across them (fresh_devices.py: import-time seeding, a fixed key); learned: false leaves
    out the learned attack and the test at delta* of a continuous claim at the shuffle level
    (learned_rows.py).
    """

    trials: int
    level: str = Level.SHUFFLE  # a registered level (levels.LEVELS); Level after checks
    delta: tuple[float, ...] = ()
    confidence: float = 0.95
    holdout_fraction: float | None = None
    shortlist: int | None = None
    attacks: tuple[str, ...] | None = None
    x0: float | int | None = None
    x1: float | int | None = None
    x2: float | int | None = None
    others: tuple[float, ...] | None = None
    bounds: tuple[str, ...] | None = None
    permute: bool = True
    chunk: int = DEFAULT_CHUNK
    resolution: int = LR_RESOLUTION
    implementation: str | None = None
    input_offset: int = 0
    output_offset: int | None = None
    vectorized: bool | None = None
    two_stage: bool = False
    shuffler: str | Callable | None = None
    claim_delta0: float = 0.0
    support: str | None = None
    fresh_devices: int | None = None
    learned: bool = True

    def __post_init__(self) -> None:
        level = as_level(self.level)  # every registered level (levels.LEVELS)
        object.__setattr__(self, "level", level)
        delta = (self.delta,) if isinstance(self.delta, (int, float)) else tuple(self.delta)
        object.__setattr__(self, "delta", delta)
        if level is not Level.RANDOMIZER:
            require(len(delta) >= 1, "delta", list(delta), "needs at least one value")
        else:
            require(not delta, "delta", delta[0] if len(delta) == 1 else list(delta),
                    "the randomizer level audits one user's randomizer, which has no central "
                    "delta; delta applies to the shuffle and pipeline levels")
        for d in delta:
            require(isinstance(d, (int, float)) and not isinstance(d, bool) and 0 < d < 1,
                    "delta", d, "must lie in the open interval (0, 1)")
        # the randomizer level runs its registered attacks (search, approximate: issue 17)
        # besides its own pair bounds; it still accepts (and ignores) the shuffle level's names
        allowed = (attack_names(level) if level is not Level.RANDOMIZER
                   else attack_names(Level.SHUFFLE) + attack_names(Level.RANDOMIZER))
        for a in self.attacks or ():
            require(a in allowed, "attacks", a, f"unknown attack at the {level} level; "
                    f"choose from {list(allowed)}")
        require(self.others is None or self.x2 is None, "others", self.others,
                "give either x2 or others, not both")
        require(self.others is None or level is Level.SHUFFLE, "others", self.others,
                "only the shuffle level draws the other users' inputs from a distribution")
        require(self.permute or level is Level.PIPELINE, "permute", self.permute,
                "only applies at the pipeline level")
        require(self.support is None or level is Level.RANDOMIZER, "support", self.support,
                "a decoder for the randomizer level's search attack")
        require(self.implementation is not None or not self.two_stage, "two_stage",
                self.two_stage, "applies to an implementation under test")
        require(not self.two_stage or level is Level.SHUFFLE, "two_stage", self.two_stage,
                "only applies at the shuffle level")
        require(self.shuffler is None or level is Level.PIPELINE, "shuffler", self.shuffler,
                "only applies at the pipeline level")
        require(self.shuffler is None or self.permute, "shuffler", self.shuffler,
                "give either shuffler or permute = false, not both")
        require(isinstance(self.claim_delta0, (int, float)) and 0 <= self.claim_delta0 < 1,
                "claim_delta0", self.claim_delta0, "must lie in [0, 1)")
        require(self.claim_delta0 == 0 or level is Level.RANDOMIZER, "claim_delta0",
                self.claim_delta0, "only applies at the randomizer level")
        require(self.fresh_devices is None or (
            isinstance(self.fresh_devices, int) and not isinstance(self.fresh_devices, bool)
            and 2 <= self.fresh_devices <= 64), "fresh_devices", self.fresh_devices,
            "must be an integer number of devices in [2, 64]")
        require(self.fresh_devices is None or self.implementation is not None,
                "fresh_devices", self.fresh_devices, "applies to an implementation under test")
        self.options()  # validates trials, confidence, holdout_fraction, shortlist, chunk

    def options(self) -> AuditOptions | RandomizerAuditOptions:
        if self.level is Level.RANDOMIZER:
            kwargs = {} if self.holdout_fraction is None else {
                "holdout_fraction": self.holdout_fraction}
            if self.shortlist is not None:
                kwargs["shortlist"] = self.shortlist
            return RandomizerAuditOptions(self.trials, self.confidence, chunk=self.chunk,
                                          **kwargs)
        attacks = self.attacks or attack_names(self.level)
        kwargs = {} if self.holdout_fraction is None else {
            "holdout_fraction": self.holdout_fraction}
        if self.shortlist is not None:
            kwargs["shortlist"] = self.shortlist
        return AuditOptions(self.trials, self.confidence, attacks=tuple(attacks),
                            resolution=self.resolution, chunk=self.chunk, **kwargs)


def implementation_seed(seed: int, point: int = 0) -> np.random.SeedSequence:
    """The SeedSequence of an implementation audit (module docstring)."""
    return np.random.SeedSequence(entropy=seed, spawn_key=(point, AUDIT_KEY))


def _implementation(settings: AuditSettings, randomizer, claim: Claim | None):
    """The adapter that runs the user's code, or None when no implementation is named."""
    if settings.implementation is None:
        require(claim is None, "claim", claim, "needs an implementation")
        return None
    if claim is None:
        require(randomizer is not None, "randomizer", None,
                "name the randomizer the implementation claims (or a black-box claim)")
        claim = Claim(randomizer, delta0=settings.claim_delta0,
                      input_offset=settings.input_offset, output_offset=settings.output_offset)
    impl = load_implementation(settings.implementation, vectorized=settings.vectorized)
    return ImplementationRandomizer(impl, claim)


def _row_context(context, randomizer: str, epsilon0: float, n) -> dict:
    """The columns every row of one audit shares, with defaults for a stand-alone audit."""
    context = dict(context or {})
    context.setdefault("point", 0)
    context.setdefault("overrides", "{}")
    context.setdefault("randomizer", randomizer)
    context.setdefault("epsilon0", float(epsilon0))
    context.setdefault("n", n)
    return context


def run_audit(settings: AuditSettings, randomizer, n: int | None,
              seed: np.random.SeedSequence, context: Mapping | None = None,
              pipeline: PipelineConfig | None = None,
              progress: Callable[[int, int], None] | None = None, *,
              claim: Claim | None = None, events=None, implementation=None) -> list[dict]:
    """The ``audit`` rows of one setting (attack rows, then verdict rows).

    With ``settings.implementation`` (or ``implementation``: a callable already loaded) the
    implementation is audited against ``claim`` (default: ``randomizer`` with the settings'
    offsets); ``events``: an event function for the randomizer level
    (output_events.EventFunction). The verdict rows are graded as one family (grading.py:
    p-values, Holm's adjustment at ``settings.confidence``, strength in words)."""
    records = _audit_rows(settings, randomizer, n, seed, context, pipeline, progress,
                          claim=claim, events=events, implementation=implementation)
    return grade(records, settings.confidence)


def _audit_rows(settings: AuditSettings, randomizer, n: int | None,
                seed: np.random.SeedSequence, context: Mapping | None = None,
                pipeline: PipelineConfig | None = None,
                progress: Callable[[int, int], None] | None = None, *,
                claim: Claim | None = None, events=None, implementation=None) -> list[dict]:
    spec = LEVELS.get(str(settings.level))
    if spec.run is not None:  # a level that runs itself (levels.LevelSpec)
        require(implementation is None and settings.implementation is None, "level",
                spec.name, "audits the project's sampler only (no implementation under test)")
        return spec.run(settings, randomizer, n, seed, context, pipeline, progress)
    tested = None
    if implementation is not None:
        claim = claim or Claim(randomizer, delta0=settings.claim_delta0,
                               input_offset=settings.input_offset,
                               output_offset=settings.output_offset)
        tested = ImplementationRandomizer(
            load_implementation(implementation, vectorized=settings.vectorized), claim)
    else:
        tested = _implementation(settings, randomizer, claim)
    if tested is not None:
        rows = _run_implementation(settings, tested, n, seed, context, pipeline, progress,
                                   events)
        if settings.fresh_devices:
            rows += fresh_device_rows(settings, tested, seed, rows)
        return rows
    context = _row_context(context, randomizer.name, randomizer.epsilon0, n)
    options = settings.options()
    if settings.level is Level.RANDOMIZER:
        # an (eps0, delta0)-LDP randomizer (the gaussian) is audited at its declared delta0
        delta0 = float(getattr(randomizer, "delta0", 0.0) or 0.0)
        audit = audit_randomizer(randomizer, options, seed, events=events, delta0=delta0)
        return attach_p_values(randomizer_records(audit, context), audit, options) + \
            _randomizer_attacks(settings, randomizer, audit.epsilon0, delta0, seed, context, "")
    require(isinstance(n, int) and n >= 2, "n", n, "must be an integer >= 2")
    if is_multi_message(randomizer):  # the shuffle or pipeline level
        audit = _audit_multi(settings, randomizer, randomizer, n, options, seed, progress,
                             pipeline)
        return attach_p_values(attack_records(audit, context) + _bound_rows(
            settings, randomizer, audit, n, options, context), audit, options)
    require_finite_groups(randomizer)
    x0, x1, x2 = audit_triple(settings, randomizer, n)
    if settings.level is Level.SHUFFLE:
        others = x2 if settings.others is None else np.asarray(settings.others)
        audit = audit_shuffle(randomizer, n, settings.delta, options, seed, x0=x0, x1=x1,
                              others=others, progress=progress)
        bound_n = n
    else:
        permutation = uniform_permutation if settings.permute else identity_permutation
        audit = audit_pipeline(randomizer, n, settings.delta, options, seed, x0=x0, x1=x1,
                               x2=x2, config=pipeline, permutation=permutation,
                               progress=progress)
        bound_n = shuffled_size(n, pipeline)
    return attach_p_values(attack_records(audit, context) + _bound_rows(
        settings, randomizer, audit, bound_n, options, context), audit, options)


def _randomizer_attacks(settings: AuditSettings, sampled, epsilon0: float, delta0: float,
                        seed: np.random.SeedSequence, context, source: str) -> list[dict]:
    """Rows of the requested randomizer-level attacks (levels.ATTACKS with level randomizer:
    the input and event search, the approximate-LDP audit), each on its own random stream,
    run on ``sampled.randomize`` (the project's sampler or the implementation) against the
    declared LDP level ``epsilon0`` at ``delta0``."""
    records: list[dict] = []
    own = attack_names(Level.RANDOMIZER)
    support = None
    if settings.support is not None:
        try:
            support = UserFunction(load_implementation(settings.support).function, "support",
                                   settings.support, numeric=True)
        except ParameterError as error:
            raise ParameterError("support", settings.support, error.requirement) from None
    for k, name in enumerate(settings.attacks or ()):
        if name not in own:
            continue
        spec = ATTACKS.get(name)
        records += spec.attack.rows(sampled.randomize, sampled.input_domain,
                                    epsilon0=epsilon0, delta0=delta0, trials=settings.trials,
                                    confidence=settings.confidence,
                                    seed=child(seed, RANDOMIZER_ATTACK_KEY, k),
                                    context=context, implementation=source, support=support)
    return records


def _bound_rows(settings: AuditSettings, randomizer, audit, bound_n: int, options,
                context) -> list[dict]:
    """Verdict rows of every judged bound at each delta (none with bounds = ())."""
    records: list[dict] = []
    if settings.bounds is not None and len(settings.bounds) == 0:
        return records
    for delta in settings.delta:
        best = audit.best(delta)
        empirical = best.epsilon_lb if math.isfinite(best.epsilon_lb) else None
        verdicts = bound_verdicts(randomizer, bound_n, delta, empirical=empirical,
                                  confidence=options.confidence,
                                  names=None if settings.bounds is None else list(settings.bounds))
        records += verdict_records(verdicts, {**context, "pair": audit.pair},
                                   str(settings.level))
    return records


def _audit_multi(settings: AuditSettings, sampled, declared, n: int, options, seed,
                 progress, pipeline=None, shuffler=None):
    """Shuffle or pipeline level of a multi-message randomizer (multi_message_level.py,
    pipeline_multi.py); x0, x1, x2 (all others') given or the exact lower triple."""
    require(settings.others is None, "others", settings.others, "a multi-message audit takes "
            "one x2 held by every other user (not a distribution)")
    x0, x1, x2 = (as_input(declared, x, f) for x, f in
                  ((settings.x0, "x0"), (settings.x1, "x1"), (settings.x2, "x2")))
    require(x0 is None or x0 != x1, "x1", settings.x1, "must differ from x0 (the neighbouring "
            "datasets differ in user 1's input)")
    if settings.level is Level.PIPELINE:
        require(settings.permute, "permute", settings.permute, "not for multi-message claims")
        return audit_pipeline_multi(sampled, n, settings.delta, options, seed, x0=x0,
                                    x1=x1, x_star=x2, config=pipeline, shuffler=shuffler,
                                    progress=progress)
    return audit_multi_message(sampled, n, settings.delta, options, seed, x0=x0, x1=x1,
                               x_star=x2, progress=progress)


def _run_implementation(settings: AuditSettings, tested: ImplementationRandomizer,
                        n: int | None, seed: np.random.SeedSequence, context, pipeline,
                        progress, events) -> list[dict]:
    """The rows of an audit of an implementation under test (every level runs its code)."""
    claim = tested.claim
    declared = claim.randomizer
    source = tested.implementation.source
    context = _row_context(context, tested.name, claim.epsilon0, n)
    context["implementation"] = source
    options = settings.options()
    if settings.level is Level.RANDOMIZER:
        audit = audit_randomizer(tested, options, seed, events=events, delta0=claim.delta0)
        return attach_p_values(randomizer_records(audit, context), audit, options) + \
            atom_rows(tested, seed, options.confidence, context, "randomizer") + \
            profile_rows(tested, options, seed, context, events) + \
            _randomizer_attacks(settings, tested, audit.epsilon0, claim.delta0, seed, context,
                                source)
    require(declared is not None, "implementation", source, "a black box is audited at the "
            "randomizer level only (--level randomizer): the shuffle and pipeline levels need "
            "a claimed randomizer")
    require(isinstance(n, int) and n >= 2, "n", n, "must be an integer >= 2")
    learned = None  # the learned attack's (audit, verdicts) at the pipeline level
    multi = is_multi_message(declared)  # the shuffle or pipeline level
    binned = is_binnable(declared) and not multi  # the shuffle or pipeline level
    lr = is_lr_claim(declared) and not multi  # claim_lr.py, pipeline_learned.py
    shuffler = load_shuffler(settings.shuffler)  # None, or the user's (message_shuffler.py)
    raw = tested  # its raw reports: the learned attack's (learned_rows.py)
    if binned:  # a continuous scalar claim: its reports binned (binned.py)
        x0, x1, x2 = continuous_triple(declared, n, settings.delta[0], settings)
        tested, _ = binned_pair(tested, x0, x1, seed)
    elif not multi and not lr:
        require_finite_groups(declared)
        x0, x1, x2 = audit_triple(settings, declared, n)
    if multi:
        require(not settings.two_stage, "two_stage", settings.two_stage, "a multi-message "
                "implementation is audited on the messages of all n users (no two-stage)")
        audit = _audit_multi(settings, tested, declared, n, options, seed, progress,
                             pipeline, shuffler)
        bound_n = n
    elif lr and settings.level is Level.SHUFFLE:  # no output groups: the claim's own LR
        audit, bound_n = audit_claim_lr(tested, n, settings.delta, options, seed), n
    elif lr:  # ... and at the pipeline level the learned attack
        audit, bound_n = audit_pipeline_learned(tested, n, settings.delta, options, seed,
                                                pipeline or PipelineConfig(), shuffler), n
    elif settings.level is Level.SHUFFLE:
        others = x2
        if settings.others is not None:
            others = np.asarray(settings.others)
        elif (settings.x2 is None and isinstance(declared.input_domain, Categorical)
              and declared.output_size is not None
              and declared.output_size <= MAX_ENUMERABLE_OUTPUTS):
            d = declared.input_domain.size
            others = np.full(d, 1.0 / d)
        if (isinstance(others, np.ndarray) and settings.others is None and not binned
                and settings.x0 is None and settings.x1 is None):
            # no inputs named: search the worst case (input_search.py)
            audit = search_shuffle(tested, n, settings.delta, options, seed,
                                   progress=progress, two_stage=settings.two_stage)
        else:
            audit = final_shuffle(tested, n, settings.delta, options, seed, x0, x1, others,
                                  progress, settings.two_stage)  # full + two-stage in bulk
        bound_n = n
    else:
        permutation = uniform_permutation if settings.permute else identity_permutation
        if settings.x0 is None and settings.x1 is None and settings.x2 is None and not binned:
            audit = search_pipeline(tested, n, settings.delta, options, seed, config=pipeline,
                                    permutation=permutation, shuffler=shuffler,
                                    progress=progress)  # worst case (input_search.py)
        else:
            audit = audit_pipeline(tested, n, settings.delta, options, seed, x0=x0, x1=x1,
                                   x2=x2, config=pipeline, permutation=permutation,
                                   progress=progress, shuffler=shuffler)
        bound_n = shuffled_size(n, pipeline)
        vector = vector_client(getattr(tested, "tested", None))  # a gradient client's vectors
        if vector is not None and settings.learned:  # the learned attack too (pipeline_learned)
            learned = learned_pipeline(vector, declared, n, settings.delta, options, seed,
                                       pipeline or PipelineConfig(), x0, x1, x2)
    records = attack_records(audit, context)
    claimed = f"{declared.name}(eps0 = {float(declared.epsilon0):g})"
    level = str(settings.level)
    own = [fit_verdict(audit.fit_p_value, options.confidence, claimed, len(audit.fits),
                       "pooled reports")]
    if shuffler is not None:  # the user's shuffler: permutation and order checks
        own += shuffler.verdicts(options.confidence)
    if learned is not None:
        records += attack_records(learned[0], context)
        own += learned[1]
    bound_rows = []
    no_bounds = settings.bounds is not None and len(settings.bounds) == 0
    for delta in () if no_bounds else settings.delta:  # bounds = (): no bound verdicts
        best = audit.best(delta)
        empirical = best.epsilon_lb if math.isfinite(best.epsilon_lb) else None
        names = None if settings.bounds is None else list(settings.bounds)
        verdicts = bound_verdicts(declared, bound_n, delta, empirical=empirical,
                                  confidence=options.confidence, names=names)
        where = f"{audit.pair}, attack {best.attack} {best.direction}, event {best.event}"
        own.append(shuffled_verdict(empirical, options.confidence, verdicts, claimed,
                                    bound_n, delta, where, audit.claim_pair.get(delta)))
        bound_rows += verdict_records(verdicts, {**context, "pair": audit.pair}, level,
                                      source)
    if settings.level is Level.SHUFFLE and (binned or lr) and settings.learned:
        l0, l1 = (x0, x1) if binned else lr_triple(declared)[:2]
        bound_rows += learned_rows(implementation_draw(raw, l0, l1, n), declared, n,
                                   settings.delta, options, seed, context, x0=l0, x1=l1,
                                   source=source, claimed=claimed, bound_rows=bound_rows,
                                   pair=f"(x0, x1, x2) = ({l0}, {l1}, {l1})", atoms=(l0, l1)
                                   if np.ndim(l0) == 0 else ())
    return attach_p_values(
        records + implementation_records(own, {**context, "pair": audit.pair}, level, source,
                                         seconds=audit.seconds, note=audit.note) + bound_rows,
        audit, options)


def audit_implementation(implementation, claim, *, trials: int, level: str = "randomizer",
                         n: int | None = None, delta=(), seed: int = 0,
                         pipeline: PipelineConfig | None = None, events=None,
                         **options) -> list[dict]:
    """Audit a user's implementation (the Python entry point; the same rows as ``shufflesim
    audit --implementation`` and a one-point scenario's ``[audit] implementation``).

    implementation: a callable ``(values, rng) -> reports``, ``"path/file.py:function"`` or
    ``"module:function"``; claim: an implementation.Claim, or a registered randomizer instance
    it claims to implement; options: the other :class:`AuditSettings` fields (confidence,
    x0, x1, x2, input_offset, vectorized, two_stage, shuffler, bounds, ...). Randomness:
    :func:`implementation_seed` (seed).
    """
    if not isinstance(claim, Claim):
        claim = Claim(claim, delta0=options.get("claim_delta0", 0.0),
                      input_offset=options.get("input_offset", 0),
                      output_offset=options.get("output_offset"))
    loaded = load_implementation(implementation, vectorized=options.get("vectorized"))
    settings = AuditSettings(trials=trials, level=level, delta=delta,
                             implementation=loaded.source, **options)
    return run_audit(settings, claim.randomizer, n, implementation_seed(seed),
                     pipeline=pipeline, claim=claim, events=events, implementation=loaded)
