"""The SimPy shuffle pipeline: clients -> shuffler -> analyzer (docs/architecture.md, "The SimPy
pipeline")."""

from shufflesim.simulator.pipeline.analyzer import BATCHES_SCHEMA
from shufflesim.simulator.pipeline.config import (
    ArrivalMode,
    DelayConfig,
    DelayDistribution,
    PipelineConfig,
)
from shufflesim.simulator.pipeline.run import PipelineResult, RoundSummary, run_pipeline
from shufflesim.simulator.pipeline.shuffler import Batch, ReleaseReason, uniform_permutation

__all__ = [
    "BATCHES_SCHEMA",
    "ArrivalMode",
    "Batch",
    "DelayConfig",
    "DelayDistribution",
    "PipelineConfig",
    "PipelineResult",
    "ReleaseReason",
    "RoundSummary",
    "run_pipeline",
    "uniform_permutation",
]
