"""The SimPy shuffle pipeline: clients -> shuffler -> analyzer (docs/architecture.md, "The SimPy
pipeline").

The names below are imported from their modules on first use (PEP 562), so that importing one
submodule (the audit's batches use clients and config) does not import SimPy and pandas
(run.py, analyzer.py; issue 32)."""

from __future__ import annotations

import importlib

#: name -> the submodule that defines it
_EXPORTS = {
    "BATCHES_SCHEMA": "analyzer",
    "ArrivalMode": "config",
    "DelayConfig": "config",
    "DelayDistribution": "config",
    "PipelineConfig": "config",
    "PipelineResult": "run",
    "RoundSummary": "run",
    "run_pipeline": "run",
    "Batch": "shuffler",
    "ReleaseReason": "shuffler",
    "uniform_permutation": "shuffler",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
