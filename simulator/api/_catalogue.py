"""``shufflesim.catalogue``: what ``shufflesim list --json`` shows, as DataFrames."""

from __future__ import annotations

import pandas as pd

from shufflesim._frames import provenance
from shufflesim.simulator.calls.catalogue import catalogue as catalogue_data


def _named(entries: dict, key: str = "name") -> pd.DataFrame:
    return pd.DataFrame.from_records([{key: name, **value} for name, value in entries.items()])


def catalogue() -> dict[str, pd.DataFrame]:
    """Everything a scenario or a command can name, one DataFrame per kind: ``randomizers``
    (parameters, output, personalized budgets, aggregate path), ``estimators``,
    ``data_distributions``, ``budget_distributions``, ``bounds`` (kind, status, scope, regime,
    reference, delta0), ``composed_methods`` (over rounds), ``audit_levels`` and
    ``audit_attacks``; ``shufflesim list --json`` holds the same data.

    >>> import shufflesim
    >>> tables = shufflesim.catalogue()
    >>> "krr" in set(tables["randomizers"].name), "optimal-blanket" in set(tables["bounds"].name)
    (True, True)
    """
    info = catalogue_data()
    tables = {
        "randomizers": _named(info["randomizers"]),
        "estimators": pd.DataFrame({"name": info["estimators"]}),
        "data_distributions": pd.DataFrame.from_records(
            [{"name": k, "parameters": v} for k, v in info["data_distributions"].items()]),
        "budget_distributions": pd.DataFrame.from_records(
            [{"name": k, "parameters": v} for k, v in info["budget_distributions"].items()]),
        "bounds": _named(info["bounds"]),
        "composed_methods": _named(info["composed_methods"]),
        "audit_levels": pd.DataFrame.from_records(
            [{"name": k, "description": v} for k, v in info["audit"]["levels"].items()]),
        "audit_attacks": pd.DataFrame.from_records(
            [{"name": k, "summary": v} for k, v in info["audit"]["attacks"].items()]),
    }
    for table in tables.values():
        table.attrs.update(provenance("catalogue"))
    return tables
