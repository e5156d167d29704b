"""Validation of the ``[pipeline]`` options: every error names the key and the value."""

from __future__ import annotations

import pytest

from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.pipeline import (
    ArrivalMode,
    DelayConfig,
    DelayDistribution,
    PipelineConfig,
)


def test_defaults():
    config = PipelineConfig()
    assert config.batch_size is None and config.timeout is None and config.min_batch == 1
    assert config.arrival is ArrivalMode.UNIFORM and config.rounds == 1
    assert config.delay.distribution is DelayDistribution.NONE


@pytest.mark.parametrize(("kwargs", "key"), [
    (dict(batch_size=0), "pipeline.batch_size"),
    (dict(batch_size=2.5), "pipeline.batch_size"),
    (dict(batch_size=True), "pipeline.batch_size"),
    (dict(timeout=0), "pipeline.timeout"),
    (dict(timeout=float("inf")), "pipeline.timeout"),
    (dict(timeout="1"), "pipeline.timeout"),
    (dict(min_batch=0), "pipeline.min_batch"),
    (dict(batch_size=5, min_batch=6), "pipeline.min_batch"),
    (dict(arrival="burst"), "pipeline.arrival"),
    (dict(window=-1.0), "pipeline.window"),
    (dict(dropout=1.0), "pipeline.dropout"),
    (dict(dropout=-0.1), "pipeline.dropout"),
    (dict(rounds=0), "pipeline.rounds"),
    (dict(colluding_fraction=1), "pipeline.colluding_fraction"),
    (dict(group_size=0), "pipeline.group_size"),
    (dict(delay="exponential"), "pipeline.delay"),
])
def test_bad_values_name_key_and_value(kwargs, key):
    with pytest.raises(ScenarioError) as info:
        PipelineConfig(**kwargs)
    assert info.value.key == key
    assert repr(next(iter(kwargs.values()))) in str(info.value) or key.endswith("min_batch")


def test_from_mapping_parses_enums_and_delay():
    config = PipelineConfig.from_mapping({
        "batch_size": 100, "timeout": 0.5, "min_batch": 10, "arrival": "poisson",
        "window": 60.0, "dropout": 0.05, "rounds": 3, "colluding_fraction": 0.1,
        "delay": {"distribution": "uniform", "low": 0.0, "high": 0.2},
    })
    assert config.arrival is ArrivalMode.POISSON
    assert config.delay == DelayConfig(DelayDistribution.UNIFORM, low=0.0, high=0.2)
    assert PipelineConfig.from_mapping({"delay": "none"}).delay == DelayConfig()
    exp = PipelineConfig.from_mapping({"delay": {"distribution": "exponential", "mean": 2}})
    assert exp.delay.mean == 2


def test_unknown_key_suggests_the_closest():
    with pytest.raises(ScenarioError, match="did you mean 'timeout'") as info:
        PipelineConfig.from_mapping({"timout": 1.0})
    assert info.value.key == "pipeline.timout"
    with pytest.raises(ScenarioError, match="did you mean 'mean'") as info:
        PipelineConfig.from_mapping({"delay": {"distribution": "exponential", "maen": 1}})
    assert info.value.key == "pipeline.delay.maen"


@pytest.mark.parametrize(("delay", "key"), [
    ({"distribution": "exponential"}, "pipeline.delay.mean"),
    ({"distribution": "exponential", "mean": 0}, "pipeline.delay.mean"),
    ({"distribution": "exponential", "mean": 1, "high": 2}, "pipeline.delay.high"),
    ({"distribution": "uniform", "low": 0.0}, "pipeline.delay.high"),
    ({"distribution": "uniform", "low": 2.0, "high": 1.0}, "pipeline.delay.high"),
    ({"distribution": "uniform", "low": -1.0, "high": 1.0}, "pipeline.delay.low"),
    ({"distribution": "none", "mean": 1.0}, "pipeline.delay.mean"),
    ({"distribution": "gamma"}, "pipeline.delay.distribution"),
    (3, "pipeline.delay"),
])
def test_bad_delays(delay, key):
    with pytest.raises(ScenarioError) as info:
        PipelineConfig.from_mapping({"delay": delay})
    assert info.value.key == key


def test_section_must_be_a_table():
    with pytest.raises(ScenarioError) as info:
        PipelineConfig.from_mapping([1, 2])
    assert info.value.key == "pipeline"
