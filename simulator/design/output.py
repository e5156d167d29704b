"""What ``shufflesim design`` writes: the terminal table, JSON records, design.parquet (the
registered ``design`` table) and the figure (error against lifetime eps, one curve per
candidate, the target and the choice marked; matplotlib, the ``plot`` extra)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa

from shufflesim.simulator.design.predict import METRICS
from shufflesim.simulator.design.records import DesignRow
from shufflesim.simulator.design.runner import FIELDS
from shufflesim.simulator.results.tables import (
    TABLE_FILE_MODE,
    register_table_schema,
    run_metadata,
    write_tables,
)

DESIGN_SCHEMA = DesignRow.schema()
register_table_schema("design", DESIGN_SCHEMA)


def records(frame: pd.DataFrame) -> list[dict]:
    """JSON-ready records (NaN and NA as null, parameters as a mapping)."""
    out = []
    for row in frame.to_dict("records"):
        clean = {}
        for key, value in row.items():
            if value is None or (isinstance(value, float) and math.isnan(value)) \
                    or value is pd.NA:
                clean[key] = None
            elif hasattr(value, "item"):
                clean[key] = value.item()
            else:
                clean[key] = value
        clean["parameters"] = json.loads(clean["parameters"])
        out.append(clean)
    return out


def _cell(value, digits: int = 4) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def table_rows(frame: pd.DataFrame, metric: str) -> tuple[tuple[str, ...], list[list[str]]]:
    """Header and rows of the terminal table."""
    validated = frame["validated_repetitions"].notna().any()
    unproven = frame["bound_not_proven"].notna().any()
    grouped = frame["group"].notna().any()
    header = ["rank", *(["group"] if grouped else []), "n", "randomizer", "parameters", "eps0",
              "b", "bound", "eps", "bits", "msgs", *(f"pred_{m}" for m in METRICS)]
    if unproven:
        header.append("eps0 NOT PROVEN (bound)")
    if validated:
        header.append(f"empirical_{metric} [95% CI]")
    rows = []
    for r in records(frame):
        params = {k: v for k, v in r["parameters"].items() if k != "domain_size"}
        row = [_cell(r["rank"]), *([r["group"]] if grouped else []), _cell(r["n"]),
               r["randomizer"],
               ",".join(f"{k}={v}" for k, v in params.items()) or "-",
               _cell(r["epsilon0"]),
               _cell(None if r["blanket_messages"] is None else int(r["blanket_messages"])),
               r["bound"],
               _cell(r["epsilon"]), _cell(r["bits"]), _cell(r["messages"]),
               *(_cell(r[f"predicted_{m}"]) for m in METRICS)]
        if unproven:
            row.append(f"{_cell(r['epsilon0_not_proven'])} ({r['bound_not_proven'] or '-'})")
        if validated:
            row.append("-" if r[f"empirical_{metric}"] is None else
                       f"{_cell(r[f'empirical_{metric}'])} [{_cell(r[f'empirical_{metric}_low'])}"
                       f", {_cell(r[f'empirical_{metric}_high'])}]")
        if not r["meets_target"]:
            at = header.index("bound")
            row[at] = f"{r['bound']} (not met: {r['reason'][:90]})"
        rows.append(row)
    return tuple(header), rows


def rows(frame: pd.DataFrame) -> list[DesignRow]:
    """The frame's rows as :class:`DesignRow` records (parameters as sorted JSON)."""
    out = []
    for r in records(frame):
        r["parameters"] = json.dumps(r["parameters"], sort_keys=True)
        for name in ("rank", "blanket_messages", "bits", "messages", "validated_repetitions"):
            r[name] = None if r[name] is None else int(r[name])
        out.append(DesignRow(**{f: r[f] for f in FIELDS}))
    return out


def arrow_table(frame: pd.DataFrame) -> pa.Table:
    return DesignRow.table(rows(frame))


def write_parquet(directory: str | Path, frame: pd.DataFrame, inputs: dict) -> list[Path]:
    meta = run_metadata(json.dumps(inputs, sort_keys=True, default=str), 0)
    return write_tables(directory, {"design": arrow_table(frame)}, meta)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` atomically (a temporary file in the same folder, then rename)."""
    path = Path(path)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.chmod(temp, TABLE_FILE_MODE)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def figure(curves: pd.DataFrame, chosen: dict, target: float, metric: str,
           path: str | Path) -> Path:
    """Predicted ``metric`` against lifetime eps, one curve per candidate (``curves``: rows of
    design tables at several targets, met ones only), target and choice marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10.0, 4.8))
    key = f"predicted_{metric}"
    curves = curves.assign(label=curves.randomizer + " " + curves.parameters.str.replace(
        r'"domain_size": \d+,? ?', "", regex=True).str.replace("{}", "", regex=False))
    styles = ("-", "--", "-.", ":")
    for i, (label, group) in enumerate(curves.groupby("label", sort=False)):
        group = group.sort_values("target_epsilon")
        ax.plot(group.target_epsilon, group[key], marker="os^vD"[i % 5], markersize=3,
                linestyle=styles[(i // 10) % 4], label=label)
    ax.axvline(target, color="grey", linestyle="--", linewidth=1, label=f"target eps = {target:g}")
    ax.scatter([target], [chosen[key]], s=120, facecolors="none", edgecolors="black",
               linewidths=2, zorder=5, label=f"choice: {chosen['randomizer']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"lifetime epsilon over {int(chosen['rounds'])} round(s), "
                  f"delta = {chosen['delta']:g}")
    ax.set_ylabel(f"predicted {metric} per round")
    ax.set_title(f"design: n = {int(chosen['n'])}")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
