"""The SimPy shuffle pipeline: clients -> shuffler -> analyzer (docs/architecture.md, "The SimPy
pipeline")."""

from simulator.pipeline.analyzer import BATCHES_SCHEMA
from simulator.pipeline.config import ArrivalMode, DelayConfig, DelayDistribution, PipelineConfig
from simulator.pipeline.run import PipelineResult, RoundSummary, run_pipeline
from simulator.pipeline.shuffler import Batch, ReleaseReason, uniform_permutation

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
