"""Records -> a pandas DataFrame that keeps its provenance in ``.attrs``."""

from __future__ import annotations

import pandas as pd

from shufflesim.simulator import __version__


def provenance(call: str, **parameters) -> dict:
    """What ``.attrs`` holds: the version, the call and its parameters (plain values)."""
    return {"shufflesim_version": __version__, "call": call,
            "parameters": {k: _plain(v) for k, v in parameters.items()}}


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def frame(records: list[dict], call: str, columns=None, **parameters) -> pd.DataFrame:
    """``records`` (the rows of the command's ``--json``) as a DataFrame, with the provenance
    of :func:`provenance` in ``.attrs``."""
    table = pd.DataFrame.from_records(records, columns=columns)
    table.attrs.update(provenance(call, **parameters))
    return table
