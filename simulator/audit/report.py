"""A self-contained audit report (``shufflesim audit --report FILE.md|.html``, issue 29): the
claim, the inputs, the graded verdict table (grading.py), the attack rows, the audit sandwich
figure (simulator/plotting/audit.py, embedded as a PNG data URI; left out with a sentence when
matplotlib is not installed), the seeds and the command that reproduces the rows.

One file, nothing linked: a review can attach it as it is. Markdown and HTML carry the same
content; the format follows the file's suffix (.md, .markdown, .html, .htm).
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from shufflesim.protocols.errors import require
from shufflesim.simulator.plotting.audit import plot_audit_sandwich

MARKDOWN = (".md", ".markdown")
HTML = (".html", ".htm")

VERDICT_COLUMNS = (("bound", "bound"), ("subject", "subject"), ("level", "level"),
                   ("delta", "delta"), ("bound_epsilon", "bound eps"),
                   ("epsilon_lb", "eps_lb"), ("p_value", "p"), ("adjusted_p_value", "Holm p"),
                   ("strength", "strength"), ("verdict", "verdict"))
ATTACK_COLUMNS = (("level", "level"), ("attack", "attack"), ("direction", "direction"),
                  ("delta", "delta"), ("event", "event"), ("trials", "trials"),
                  ("epsilon_lb", "eps_lb"), ("confidence", "conf"),
                  ("exact_lower", "exact"), ("ratio", "ratio"))
#: Attack rows shown (the largest bounds); the rest are counted.
MAX_ATTACK_ROWS = 24


@dataclass(frozen=True)
class ReportContext:
    """What the rows do not say: the claim in words, the inputs (flag or field -> value),
    the seed and how the run's SeedSequence derives from it, and the command line."""

    claim: str
    inputs: Mapping[str, object] = field(default_factory=dict)
    seed: int | None = None
    seed_note: str = ""
    command: str = ""


def check_path(path: str | Path) -> Path:
    """The report's path, checked before any work: a known suffix and an existing folder."""
    p = Path(path)
    require(p.suffix.lower() in MARKDOWN + HTML, "report", str(path),
            "must end in .md or .html (the report's format)")
    require(p.parent.is_dir() if str(p.parent) else True, "report", str(path),
            f"folder {p.parent} does not exist")
    return p


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}"
    return str(value)


def _figure_png(records: Sequence[dict]) -> tuple[bytes | None, str]:
    """The audit sandwich as PNG bytes, or None and the reason."""
    try:
        from matplotlib import figure
    except ImportError:
        return None, "figure omitted: matplotlib is not installed (pip install 'shufflesim[plot]')"
    frame = pd.DataFrame(list(records))
    try:
        figures = list(plot_audit_sandwich({"audit": frame}, figure))
    except Exception as error:  # a figure must never cost the report
        return None, f"figure omitted: {type(error).__name__}: {error}"
    if not figures:
        return None, "figure omitted: no verdict rows with bounds to draw"
    buffer = io.BytesIO()
    figures[0][1].savefig(buffer, format="png", dpi=90)
    return buffer.getvalue(), "audit sandwich: empirical lower bound, exact lower bound, bounds"


def _verdicts(records):
    return [r for r in records if r.get("row_type") == "verdict"]


def _attacks(records):
    rows = [r for r in records if r.get("row_type") == "attack"]
    rows.sort(key=lambda r: -(r.get("epsilon_lb") or 0.0))
    return rows


def _summary(records) -> str:
    verdicts = _verdicts(records)
    violated = [r for r in verdicts if r.get("verdict") == "violated"]
    tested = [r for r in verdicts if r.get("verdict") in ("violated", "consistent")]
    if not tested:
        return "No verdict was tested."
    if not violated:
        return (f"No violation: {len(tested)} verdict row(s) consistent (family-wise error "
                "controlled by Holm's procedure over the rows of this run).")
    words = "; ".join(f"{r['bound']} ({r.get('strength') or '-'})" for r in violated)
    return f"{len(violated)} of {len(tested)} verdict row(s) violated: {words}."


def _markdown(records, ctx: ReportContext, png: bytes | None, caption: str) -> str:
    def table(rows, columns):
        head = "| " + " | ".join(title for _, title in columns) + " |"
        rule = "|" + "---|" * len(columns)
        body = ["| " + " | ".join(_cell(r.get(k)).replace("|", "\\|") for k, _ in columns)
                + " |" for r in rows]
        return "\n".join([head, rule, *body])

    out = ["# Audit report", "", f"**Claim.** {ctx.claim}", "", f"**Result.** {_summary(records)}",
           "", "## Inputs", ""]
    out += [f"- `{k}`: {_cell(v)}" for k, v in ctx.inputs.items()] or ["- (none)"]
    out += ["", "## Verdicts", "", table(_verdicts(records), VERDICT_COLUMNS), ""]
    out += [f"- **{r['bound']}** ({r.get('verdict')}): {r.get('reason') or ''}"
            for r in _verdicts(records)]
    attacks = _attacks(records)
    out += ["", "## Attacks", "", table(attacks[:MAX_ATTACK_ROWS], ATTACK_COLUMNS)]
    if len(attacks) > MAX_ATTACK_ROWS:
        out.append(f"\n({len(attacks) - MAX_ATTACK_ROWS} further attack rows not shown)")
    out += ["", "## Figure", ""]
    if png is None:
        out.append(caption)
    else:
        data = base64.b64encode(png).decode("ascii")
        out.append(f"![{caption}](data:image/png;base64,{data})")
    out += ["", "## Seeds", "", f"- seed: {_cell(ctx.seed)}"]
    if ctx.seed_note:
        out.append(f"- {ctx.seed_note}")
    out += ["", "## Reproduce", "", "```", ctx.command or "(no command recorded)", "```", ""]
    return "\n".join(out)


def _html(records, ctx: ReportContext, png: bytes | None, caption: str) -> str:
    esc = html.escape

    def table(rows, columns):
        head = "".join(f"<th>{esc(t)}</th>" for _, t in columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{esc(_cell(r.get(k)))}</td>" for k, _ in columns) + "</tr>"
            for r in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    inputs = "".join(f"<li><code>{esc(str(k))}</code>: {esc(_cell(v))}</li>"
                     for k, v in ctx.inputs.items()) or "<li>(none)</li>"
    reasons = "".join(f"<li><b>{esc(str(r['bound']))}</b> ({esc(str(r.get('verdict')))}): "
                      f"{esc(r.get('reason') or '')}</li>" for r in _verdicts(records))
    attacks = _attacks(records)
    more = (f"<p>({len(attacks) - MAX_ATTACK_ROWS} further attack rows not shown)</p>"
            if len(attacks) > MAX_ATTACK_ROWS else "")
    if png is None:
        figure = f"<p>{esc(caption)}</p>"
    else:
        data = base64.b64encode(png).decode("ascii")
        figure = f'<img alt="{esc(caption)}" src="data:image/png;base64,{data}">'
    seed_note = f"<li>{esc(ctx.seed_note)}</li>" if ctx.seed_note else ""
    style = ("body{font-family:sans-serif;max-width:70em;margin:2em auto}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
             "font-size:small}img{max-width:100%}")
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Audit report</title>"
            f"<style>{style}</style></head><body><h1>Audit report</h1>"
            f"<p><b>Claim.</b> {esc(ctx.claim)}</p><p><b>Result.</b> {esc(_summary(records))}"
            f"</p><h2>Inputs</h2><ul>{inputs}</ul><h2>Verdicts</h2>"
            f"{table(_verdicts(records), VERDICT_COLUMNS)}<ul>{reasons}</ul><h2>Attacks</h2>"
            f"{table(attacks[:MAX_ATTACK_ROWS], ATTACK_COLUMNS)}{more}<h2>Figure</h2>{figure}"
            f"<h2>Seeds</h2><ul><li>seed: {esc(_cell(ctx.seed))}</li>{seed_note}</ul>"
            f"<h2>Reproduce</h2><pre>{esc(ctx.command or '(no command recorded)')}</pre>"
            "</body></html>\n")


def write_report(path: str | Path, records: Sequence[dict], ctx: ReportContext) -> Path:
    """Write the report of one audit's rows (module docstring); returns its path."""
    p = check_path(path)
    png, caption = _figure_png(records)
    text = (_html if p.suffix.lower() in HTML else _markdown)(records, ctx, png, caption)
    p.write_text(text, encoding="utf-8")
    p.chmod(0o644)
    return p
