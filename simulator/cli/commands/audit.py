"""``shufflesim audit``: attack-based lower bounds with confidence, and verdicts on every bound.

    shufflesim audit --randomizer krr --domain-size 2 --epsilon0 4 --n 1000 --delta 1e-6 \\
        --trials 1000000 [--level randomizer|shuffle|pipeline] [--confidence 0.95] [--json]

Prints the attack rows (event, counts, Clopper-Pearson limits, eps_lb beside the exact value of
the attacked pair) and one verdict per bound (simulator.audit.verdicts); ``--json`` prints the
rows of the ``audit`` table as JSON records instead.

Your own implementation (simulator/audit/implementation.py):

    shufflesim audit --implementation client.py:randomize --randomizer krr --domain-size 4 \
        --epsilon0 2 --trials 200000 --level randomizer
    shufflesim audit --implementation client.py:randomize --claim-epsilon0 2 --domain-size 4 \
        --trials 200000 --level randomizer          # a black box: only its eps0

A Gaussian clipped-gradient client (simulator/audit/gradient.py; at the pipeline level its
vector messages go through the shuffler, pipeline_vector.py):

    shufflesim audit --implementation client.py:noisy_gradient --gradient-clip 1 \
        --gradient-dim 8 --gradient-examples 4 --claim-epsilon0 1 --claim-delta0 1e-6 \
        --level shuffle --n 2 --delta 1e-2

``--trials`` defaults to ``auto`` (simulator/audit/auto_trials.py).

An (eps0, delta0)-LDP randomizer (gaussian) is audited at the randomizer level at its delta0:

    shufflesim audit --randomizer gaussian --epsilon0 1 --delta0 1e-6 --trials 200000 \
        --level randomizer

The rows equal those of simulator.audit.run.audit_implementation and of a one-point scenario
with ``[audit] implementation`` at the same seed.
"""

from __future__ import annotations

import dataclasses
import json
import shlex

import click

from shufflesim.simulator.calls import audit as audit_call
from shufflesim.simulator.cli.lazy import lazy_module
from shufflesim.simulator.cli.options import (
    call_timeout_option,
    delta0_option,
    flag_errors,
    limit_options,
    parse_params,
    render_table,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.progress import ProgressReport

audit_tables = lazy_module("shufflesim.simulator.audit.tables")
audit_grading = lazy_module("shufflesim.simulator.audit.grading")
audit_report = lazy_module("shufflesim.simulator.audit.report")

ATTACK_HEADER = ("level", "attack", "direction", "delta", "event", "trials", "p0", "p1",
                 "eps_lb", "conf", "exact", "ratio")
VERDICT_HEADER = ("bound", "kind", "status", "delta", "epsilon", "exact", "empirical", "verdict",
                  "p", "holm_p", "strength", "tightness", "subject")
FIT_HEADER = ("input", "test", "samples", "statistic", "p_value")


def _num(value, digits: int = 6) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def render(records: list[dict]) -> str:
    """Human-readable tables of the audit rows."""
    parts = []
    attacks = [r for r in records if r["row_type"] == "attack"]
    if attacks:
        parts.append(render_table([[r["level"], r["attack"], r["direction"], _num(r["delta"], 3),
                                    r["event"], _num(r["trials"]), _num(r["p0"], 4),
                                    _num(r["p1"], 4), _num(r["epsilon_lb"], 5),
                                    _num(r["confidence"], 4), _num(r["exact_lower"], 5),
                                    _num(r["ratio"], 3)] for r in attacks], ATTACK_HEADER))
    fits = [r for r in records if r["row_type"] == "fit"]
    if fits:
        parts.append(render_table([[r["pair"], r["attack"], _num(r["trials"]),
                                    _num(r["statistic"], 5), _num(r["p_value"], 3)]
                                   for r in fits], FIT_HEADER))
    verdicts = [r for r in records if r["row_type"] == "verdict"]
    if verdicts:
        parts.append(render_table([[r["bound"], r["bound_kind"] or "-", r["bound_status"],
                                    _num(r["delta"], 3), _num(r["bound_epsilon"], 5),
                                    _num(r["exact_lower"], 5), _num(r["epsilon_lb"], 5),
                                    r["verdict"], _num(r.get("p_value"), 3),
                                    _num(r.get("adjusted_p_value"), 3),
                                    r.get("strength") or "-", _num(r["tightness"], 4),
                                    r.get("subject") or "-"] for r in verdicts],
                                  VERDICT_HEADER))
        notes = [f"{r['bound']}: {r['reason']}" for r in verdicts
                 if r["verdict"] in ("violated", "not-evaluated")
                 or r.get("subject") == "implementation"]
        parts.append("\n".join(notes))
    return "\n\n".join(p for p in parts if p)


def _claim_options(function):
    """--randomizer (optional here: a black box names none), --domain-size, --param."""
    function = click.option(
        "--param", "params", multiple=True, metavar="KEY=VALUE",
        help="Further randomizer parameter (repeatable), e.g. --param hash_range=4.")(function)
    function = click.option(
        "--domain-size", type=int, default=None,
        help="Domain size k of a categorical randomizer (or of a black box's inputs).")(function)
    return click.option("--randomizer", "randomizer_name", default=None,
                        help="Registered randomizer name (see `shufflesim list`); with "
                             "--implementation, the randomizer it claims.")(function)


@click.command("audit")
@_claim_options
@click.option("--epsilon0", type=float, default=None,
              help="Local budget eps0 (required with --randomizer).")
@delta0_option
@click.option("--implementation", default=None, metavar="FILE.py:FUNCTION|MODULE:FUNCTION",
              help="Audit your own randomizer code (values, rng) -> reports instead of the "
                   "project's sampler; it claims --randomizer (or --claim-epsilon0).")
@click.option("--claim-epsilon0", type=float, default=None,
              help="Black box: the eps0 the implementation claims (no --randomizer; "
                   "randomizer level).")
@click.option("--claim-delta0", type=float, default=0.0, show_default=True,
              help="The delta0 the implementation claims (randomizer level).")
@click.option("--interval", default=None, metavar="LOW,HIGH",
              help="Black box: real inputs in [LOW, HIGH] (instead of --domain-size).")
@click.option("--output", "output_kind", type=click.Choice(["discrete", "vector", "continuous"]),
              default="discrete", show_default=True, help="Black box: its reports' encoding.")
@click.option("--input-offset", type=int, default=0, show_default=True,
              help="Added to inputs before calling the implementation (1: it numbers items "
                   "from 1).")
@click.option("--output-offset", type=int, default=None,
              help="Subtracted from its scalar integer reports (default: --input-offset).")
@click.option("--not-vectorized", is_flag=True,
              help="The implementation takes one value at a time (called once per report).")
@click.option("--two-stage", is_flag=True,
              help="Shuffle level, faster: only user 1's report from the implementation, the "
                   "others' from the declared law.")
@click.option("--shuffler", default=None, metavar="FILE.py:FUNCTION|MODULE:FUNCTION",
              help="Pipeline level: your shuffler (messages, rng) -> messages.")
@click.option("--fresh-devices", "fresh_devices", type=int, is_flag=False, flag_value=4,
              default=None, metavar="[DEVICES]",
              help="Also run the implementation in DEVICES (default 4) fresh processes, one "
                   "batch each, and test whether its randomness repeats across them "
                   "(import-time seeding, a fixed key).")
@click.option("--support", default=None, metavar="FILE.py:FUNCTION|MODULE:FUNCTION",
              help="Randomizer level, --attack search: your frequency oracle's decoder "
                   "(reports, x) -> bool array (local hashing needs it).")
@click.option("--n", "n", type=int, default=None,
              help="Number of users (shuffle and pipeline levels).")
@click.option("--delta", "deltas", type=float, multiple=True,
              help="Central delta (repeatable; shuffle and pipeline levels).")
@click.option("--trials", default="auto", show_default=True, metavar="TRIALS|auto",
              help="Trials per world (per input at the randomizer level), selection included; "
                   "auto: the level's default (shuffle 1e6, pipeline 3e6, randomizer 2e5; "
                   "enough to catch a client at 1.1x its eps0), lowered when the run would "
                   "take more than about two minutes.")
@click.option("--gradient-clip", type=float, default=None, metavar="C",
              help="Gradient client (with --implementation, --claim-epsilon0, --claim-delta0): "
                   "clip norm C of its clipped gradients; it claims the analytic Gaussian at "
                   "L2 sensitivity 2C/m.")
@click.option("--gradient-dim", type=int, default=None, metavar="D",
              help="Gradient client: coordinates per gradient.")
@click.option("--gradient-examples", type=int, default=1, show_default=True, metavar="M",
              help="Gradient client: examples per client m (1: client-level privacy).")
@click.option("--level", default="shuffle", show_default=True,
              help="What to audit: a registered level (randomizer, shuffle, pipeline; "
                   "`shufflesim list`).")
@click.option("--confidence", type=float, default=0.95, show_default=True,
              help="Confidence of the largest empirical lower bound.")
@click.option("--holdout", "holdout_fraction", type=float, default=None,
              help="Share of trials used to choose the events (0: split the confidence over "
                   "every candidate event). Default 0.1 (0.2 at the randomizer level).")
@click.option("--shortlist", type=int, default=None,
              help="Events chosen per attack and direction (default 3; 1 at the randomizer "
                   "level).")
@click.option("--attack", "attacks", multiple=True,
              help="Attack (repeatable): lr, count, and order at the pipeline level; search "
                   "(inputs and output events) and approximate at the randomizer level.")
@click.option("--x0", type=float, default=None, help="User 1's input in X0.")
@click.option("--x1", type=float, default=None, help="User 1's input in X1.")
@click.option("--x2", type=float, default=None, help="Every other user's input.")
@click.option("--others", default=None, metavar="P0,P1,...",
              help="Instead of --x2: probabilities over the inputs from which every other user "
                   "draws its input (shuffle level).")
@click.option("--bound", "bounds", multiple=True,
              help="Bound to judge (repeatable); default every applicable bound.")
@click.option("--no-verdicts", is_flag=True, help="Only the attacks, no bound verdicts.")
@click.option("--no-permute", is_flag=True,
              help="Planted fault (pipeline level): the shuffler keeps arrival order.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Root seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the audit rows as JSON records.")
@click.option("--fail-on-violation", "fail_on", type=float, is_flag=False, flag_value=-1.0,
              default=None, metavar="[CONFIDENCE]",
              help="Exit 1 when a verdict on the implementation, the randomizer or a proven "
                   "bound is violated at CONFIDENCE (Holm-adjusted over this run's verdict "
                   "rows; default: --confidence). Exit 2 stays for bad input.")
@click.option("--report", "report_path", default=None, metavar="FILE.md|FILE.html",
              help="Write a self-contained report (claim, inputs, verdicts, figure, seeds, "
                   "command to reproduce).")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@flag_errors(aliases={"method": "--bound", "attacks": "--attack", "delta": "--delta",
                      "others": "--others", "permute": "--no-permute",
                      "implementation": "--implementation", "shuffler": "--shuffler",
                      "support": "--support", "fresh_devices": "--fresh-devices",
                      "two_stage": "--two-stage", "claim_delta0": "--claim-delta0",
                      "input_offset": "--input-offset", "output_offset": "--output-offset",
                      "output": "--output", "report": "--report", "trials": "--trials",
                      "clip": "--gradient-clip", "dim": "--gradient-dim",
                      "examples_per_client": "--gradient-examples"},
             when=("claim_epsilon0", {"epsilon0": "--claim-epsilon0",
                                      "delta0": "--claim-delta0"}))
@call_timeout_option
@limit_options
def command(randomizer_name, domain_size, params, epsilon0, delta0, implementation, claim_epsilon0,
            claim_delta0, interval, output_kind, input_offset, output_offset, not_vectorized,
            two_stage, shuffler, fresh_devices, support, n, deltas, trials, gradient_clip,
            gradient_dim, gradient_examples, level, confidence,
            holdout_fraction, shortlist, attacks, x0, x1, x2, others, bounds, no_verdicts,
            no_permute, seed, as_json, fail_on, report_path, quiet):
    """Empirical lower bounds on eps (attacks with Clopper-Pearson confidence) beside the exact
    lower bound and a verdict on every registered bound; with --implementation, of your own
    randomizer code against what it claims."""
    gate = _gate_confidence(fail_on, confidence)
    if report_path is not None:
        audit_report.check_path(report_path)
    prepared = audit_call.prepare(
        trials=trials, randomizer_name=randomizer_name, epsilon0=epsilon0,
        params=parse_params(None, params), delta0=delta0, implementation=implementation,
        claim_epsilon0=claim_epsilon0, claim_delta0=claim_delta0,
        interval=_interval(interval), domain_size=domain_size, output=output_kind,
        input_offset=input_offset, output_offset=output_offset,
        vectorized=False if not_vectorized else None, two_stage=two_stage, shuffler=shuffler,
        support=support, n=n, deltas=deltas, level=level, confidence=confidence,
        holdout_fraction=holdout_fraction, shortlist=shortlist, attacks=attacks, x0=x0, x1=x1,
        x2=x2, others=_probabilities(others), bounds=bounds, verdicts=not no_verdicts,
        permute=not no_permute, fresh_devices=fresh_devices, seed=seed,
        gradient=_gradient(gradient_clip, gradient_dim, gradient_examples))
    randomizer, claim, settings = prepared.randomizer, prepared.claim, prepared.settings
    trials = settings.trials
    report = ProgressReport(f"auditing ({prepared.estimate.describe()})", enabled=not quiet,
                            unit="steps")
    records = audit_call.run_prepared(prepared, report)
    what = randomizer if claim is None else claim.describe()
    if prepared.gradient is not None:
        g = prepared.gradient
        what = (f"gradient client (dim {g.dim}, clip {g.clip:g}, m {g.examples_per_client}) "
                f"projected: {what}")
    if implementation is not None:
        what = f"{implementation} claiming {what!r}" if claim is None else \
            f"{implementation} claiming {what}"
    if as_json:
        click.echo(json.dumps(audit_tables.to_json_records(records), indent=2))
    else:
        note = f" ({prepared.trials_note})" if prepared.trials_note else ""
        click.echo(f"{what}, n = {n}, level = {level}, trials = {trials}{note}")
        click.echo(render(records))
    if report_path is not None:
        inputs = {k: v for k, v in dataclasses.asdict(settings).items()
                  if v not in (None, (), False) or k == "permute"}
        inputs["n"] = n
        audit_report.write_report(report_path, records, audit_report.ReportContext(
            claim=str(what), inputs=inputs, seed=seed,
            seed_note=("numpy SeedSequence(seed)" if implementation is None else
                       "numpy SeedSequence(seed, spawn_key=(0, AUDIT_KEY)) "
                       "(simulator.audit.run.implementation_seed)"),
            command=_command_line()))
    if gate is not None:
        failed = audit_grading.failing(records, gate)
        if failed:
            names = ", ".join(sorted({r["bound"] for r in failed}))
            click.echo(f"audit failed at confidence {gate:g}: violated {names}", err=True)
            click.get_current_context().exit(1)


def _gradient(clip: float | None, dim: int | None, examples: int) -> dict | None:
    """The gradient claim's shape (calls.audit.prepare), None without --gradient-clip/-dim."""
    if clip is None and dim is None:
        return None
    if clip is None or dim is None:
        missing = "--gradient-clip" if clip is None else "--gradient-dim"
        raise UserError(f"{missing} is required with a gradient claim (--gradient-clip C "
                        "--gradient-dim D)")
    return {"clip": clip, "dim": dim, "examples_per_client": examples}


def _gate_confidence(fail_on: float | None, confidence: float) -> float | None:
    """The confidence of --fail-on-violation (its flag alone: --confidence), checked."""
    if fail_on is None:
        return None
    gate = confidence if fail_on == -1.0 else fail_on
    if not 0 < gate < 1:
        raise UserError(f"--fail-on-violation = {gate:g}: the confidence must lie in (0, 1)")
    return gate


def _command_line() -> str:
    """The command that reproduces the rows: this one's options that differ from their
    defaults, without --report (rebuilt from the parsed parameters)."""
    ctx = click.get_current_context()
    words = ["shufflesim", "audit"]
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in ("report_path",):
            continue
        value = ctx.params.get(param.name)
        if value is None or value == param.default or value in ((), False):
            continue
        flag = max(param.opts, key=len)
        if param.is_flag:
            words.append(flag)
        elif param.name == "fail_on":
            words += [flag] if value == -1.0 else [flag, f"{value:g}"]
        elif param.multiple:
            for v in value:
                words += [flag, _word(v)]
        else:
            words += [flag, _word(value)]
    return shlex.join(words)


def _word(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _interval(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        raise UserError(f"--interval = {text!r}: expected LOW,HIGH") from None
    return low, high


def _probabilities(text: str | None) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise UserError(f"--others = {text!r}: expected comma-separated numbers") from None
