"""The ``audit`` capability: attack-based lower bounds with confidence, and verdicts on every
bound, for a registered randomizer or for the user's own implementation (against a named
randomizer or a black-box claim). ``shufflesim audit`` (which adds parsing, printing, the
report file and the exit-code gate) and ``shufflesim.audit`` both call :func:`prepare` and
:func:`run_prepared`; a scenario's ``[audit]`` section runs the same ``run_audit`` per sweep
point.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from shufflesim.simulator.audit.levels import Level, as_level
from shufflesim.simulator.calls.bounds import silent
from shufflesim.simulator.calls.setting import build_randomizer, check_setting, resolve_methods
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.lazy import lazy_module

np = lazy_module("numpy")
audit_run = lazy_module("shufflesim.simulator.audit.run")
audit_claim = lazy_module("shufflesim.simulator.audit.claim")
audit_gradient = lazy_module("shufflesim.simulator.audit.gradient")
auto_trials = lazy_module("shufflesim.simulator.audit.auto_trials")
audit_loading = lazy_module("shufflesim.simulator.audit.loading")
cost = lazy_module("shufflesim.simulator.calls.cost")


def check_level_options(level: str, n: int | None) -> None:
    """--n belongs to the shuffle and pipeline levels, where it is required; the randomizer
    level audits one user's randomizer and refuses it rather than ignore it. ``level``: a
    registered level (levels.LEVELS), else a ParameterError naming them."""
    level = str(as_level(level))
    if level == Level.RANDOMIZER.value:
        if n is not None:
            raise UserError(f"--n = {n}: the randomizer level audits one user's randomizer; "
                            "--n and --delta apply to the shuffle and pipeline levels")
    elif n is None:
        raise UserError(f"--n is required at the {level} level (the number of users shuffled "
                        "together)")


@dataclass(frozen=True)
class PreparedAudit:
    """An audit checked and costed, not yet run (:func:`prepare`)."""

    randomizer: object
    claim: object
    settings: object
    n: int | None
    seed_sequence: object
    estimate: object
    #: how the trials were chosen ("" when given; auto_trials.TrialsChoice.reason)
    trials_note: str = ""
    #: a Gaussian gradient client's claim (gradient.GradientClaim) and its loaded function
    gradient: object = None
    client: object = None
    seed: int = 0


def prepare(*, trials: int | str = "auto", randomizer_name: str | None = None,
          epsilon0: float | None = None, params: dict | None = None,
          delta0: float | None = None, implementation=None,
          claim_epsilon0: float | None = None, claim_delta0: float = 0.0,
          interval: tuple[float, float] | None = None, domain_size: int | None = None,
          output: str = "discrete", input_offset: int = 0, output_offset: int | None = None,
          vectorized: bool | None = None, two_stage: bool = False, shuffler=None,
          support=None, n: int | None = None, deltas=(), level: str = "shuffle",
          confidence: float = 0.95, holdout_fraction: float | None = None,
          shortlist: int | None = None, attacks=None, x0=None, x1=None, x2=None, others=None,
          bounds=None, verdicts: bool = True, permute: bool = True, fresh_devices=None,
          seed: int = 0, gradient: dict | None = None,
          ) -> PreparedAudit:
    """Every check of one audit, and its cost (simulator.calls.cost: refused with a remedy when it
    cannot finish within the limits), without running it.

    ``implementation``: None (audit the project's sampler of the randomizer), a callable
    ``(values, rng) -> reports``, or ``FILE.py:FUNCTION`` / ``MODULE:FUNCTION``; it claims the
    named randomizer, or (``claim_epsilon0``) is a black box with only its eps0.
    ``gradient``: {"clip", "dim", "examples_per_client"} of a Gaussian gradient client
    (simulator.audit.gradient: the implementation claims (``claim_epsilon0``,
    ``claim_delta0``)-LDP at sensitivity 2 clip / m). ``trials``: per world, or "auto"
    (simulator.audit.auto_trials: the level's default, capped by a time estimate)."""
    check_level_options(level, n)
    check_setting(n, None)
    try:
        trials = auto_trials.parse(trials)
    except ValueError as error:
        raise UserError(f"--trials = {trials!r}: {error}") from None
    params = dict(params or {})
    claim = None
    randomizer = None
    gradient_claim = client = None
    if gradient is not None:
        if implementation is None or randomizer_name is not None or epsilon0 is not None \
                or delta0 is not None or claim_epsilon0 is None or not claim_delta0:
            raise UserError("a gradient claim (--gradient-clip, --gradient-dim) needs "
                            "--implementation, --claim-epsilon0 and --claim-delta0 > 0, "
                            "without --randomizer / --epsilon0")
        if fresh_devices is not None:
            raise UserError(f"--fresh-devices = {fresh_devices}: not available for a gradient "
                            "claim (its client runs behind the projection); audit the "
                            "gradient client's randomness without --gradient-clip")
        gradient_claim = audit_gradient.GradientClaim(
            epsilon0=claim_epsilon0, delta0=claim_delta0, **gradient)
        client = audit_loading.load_implementation(implementation).function
        claim = audit_claim.Claim(gradient_claim.scalar)
        claim_delta0 = 0.0  # carried by the scalar claim
    elif claim_epsilon0 is not None:
        if implementation is None or randomizer_name is not None or epsilon0 is not None \
                or delta0 is not None:
            raise UserError("--claim-epsilon0 names a black box: give it with --implementation "
                            "and without --randomizer / --epsilon0")
        claim = audit_claim.Claim(
            epsilon0=claim_epsilon0, delta0=claim_delta0,
            domain_size=None if interval else domain_size, interval=interval,
            output=output, input_offset=input_offset, output_offset=output_offset)
    else:
        if randomizer_name is None:
            raise UserError("--randomizer is required (or --implementation with "
                            "--claim-epsilon0 for a black box)")
        if epsilon0 is None:
            raise UserError("--epsilon0 is required with --randomizer")
        if interval is not None:
            raise UserError("--interval describes a black box (with --claim-epsilon0)")
        if domain_size is not None:
            params["domain_size"] = domain_size
        randomizer = build_randomizer(randomizer_name, epsilon0, params, delta0)
    names = () if not verdicts else resolve_methods(bounds)
    if implementation is None:
        for flag, value in (("--shuffler", shuffler), ("--two-stage", two_stage or None),
                            ("--not-vectorized", None if vectorized is None else True)):
            if value is not None:
                raise UserError(f"{flag} applies to an audit of --implementation")
    outputs = getattr(randomizer, "output_size", None) if randomizer is not None else None
    note = ""
    if trials == auto_trials.AUTO:
        choice = auto_trials.choose(
            level, n, implementation is not None, outputs,
            message_size=1 if gradient_claim is None else int(gradient_claim.dim),
            messages_per_client=int(getattr(randomizer, "messages_per_client", 1) or 1))
        trials, note = choice.trials, choice.reason
    settings = audit_run.AuditSettings(
        trials=trials, level=level, delta=tuple(deltas), confidence=confidence,
        holdout_fraction=holdout_fraction, shortlist=shortlist, attacks=attacks or None,
        x0=x0, x1=x1, x2=x2, others=None if others is None else tuple(others),
        bounds=None if names is None else tuple(names), permute=permute,
        implementation=implementation, input_offset=input_offset, output_offset=output_offset,
        vectorized=vectorized, two_stage=two_stage, shuffler=shuffler,
        claim_delta0=claim_delta0, support=support, fresh_devices=fresh_devices)
    estimate = cost.check(cost.audit_cost(level, trials, n, outputs, implementation is not None))
    seq = (np.random.SeedSequence(seed) if implementation is None
           else audit_run.implementation_seed(seed))
    return PreparedAudit(randomizer, claim, settings, n, seq, estimate, note, gradient_claim,
                         client, seed)


def run_prepared(prepared: PreparedAudit, progress=None) -> list[dict]:
    """Run a prepared audit: the rows of the ``audit`` table (``row_type`` attack, fit or
    verdict)."""
    report = progress or silent("auditing", "steps")
    # the user's code prints to stderr (simulator/usercode.py): --json always parses
    with report, report.heartbeat():
        if prepared.gradient is not None:  # the same rows as audit_gradient in Python
            return audit_gradient.audit_gradient(
                prepared.client, prepared.gradient, trials=prepared.settings.trials,
                level=str(prepared.settings.level), n=prepared.n,
                delta=prepared.settings.delta, seed=prepared.seed,
                **gradient_options(prepared.settings))
        return audit_run.run_audit(prepared.settings, prepared.randomizer, prepared.n,
                                   prepared.seed_sequence, progress=report,
                                   claim=prepared.claim)


def gradient_options(settings) -> dict:
    """The AuditSettings fields audit_gradient passes on (all but those it sets itself)."""
    own = {"trials", "level", "delta", "implementation", "vectorized", "claim_delta0"}
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
            if f.name not in own}


def audit(*, progress=None, **options):
    """:func:`prepare` then :func:`run_prepared`: (randomizer or None, claim or None,
    AuditSettings, records). ``options`` are :func:`prepare`'s."""
    prepared = prepare(**options)
    records = run_prepared(prepared, progress)
    return prepared.randomizer, prepared.claim, prepared.settings, records
