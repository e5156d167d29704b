"""Options of the SimPy shuffle pipeline (the scenario section ``[pipeline]``).

Every option is validated in ``__post_init__``; a bad value raises
:class:`simulator.errors.ScenarioError` with the dotted key (``pipeline.<field>``) and the value.
Modes are enums. See :mod:`shufflesim.simulator.pipeline.run` for how each option is used.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum, StrEnum
from typing import Any

from shufflesim.simulator.errors import ScenarioError

SECTION = "pipeline"


class ArrivalMode(StrEnum):
    """How the clients' send times spread over a round's collection window of length ``window``.

    * ``all_at_once``: every client sends at the start of the window.
    * ``uniform``: send times i.i.d. uniform on the window.
    * ``poisson``: a Poisson process of rate n / window from the window start; the n clients take
      its first n points in a uniformly random order (so the expected span is the window; the
      last send time is Gamma(n, rate) and may fall past the window end).
    """

    ALL_AT_ONCE = "all_at_once"
    UNIFORM = "uniform"
    POISSON = "poisson"


class DelayDistribution(StrEnum):
    """Per-message network delay between a client's send time and the shuffler."""

    NONE = "none"
    EXPONENTIAL = "exponential"  # parameter ``mean``
    UNIFORM = "uniform"  # parameters ``low`` and ``high``


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _enum(enum_type: type[Enum], key: str, value: object) -> Enum:
    if isinstance(value, enum_type):
        return value
    try:
        return enum_type(value)
    except ValueError:
        choices = [m.value for m in enum_type]
        raise ScenarioError(key, value, f"must be one of {choices}") from None


def _check_keys(mapping: Mapping[str, Any], allowed: list[str], prefix: str) -> None:
    for key in mapping:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {allowed}"
            raise ScenarioError(f"{prefix}.{key}", mapping[key], f"unknown key{hint}")


@dataclass(frozen=True)
class DelayConfig:
    """Network delay of each message (i.i.d. per message)."""

    distribution: DelayDistribution = DelayDistribution.NONE
    mean: float | None = None
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        key = f"{SECTION}.delay"
        dist = _enum(DelayDistribution, f"{key}.distribution", self.distribution)
        object.__setattr__(self, "distribution", dist)
        if dist is DelayDistribution.EXPONENTIAL:
            if not (_is_number(self.mean) and 0 < self.mean < math.inf):
                raise ScenarioError(f"{key}.mean", self.mean, "must be a finite number > 0")
            self._forbid(key, ("low", "high"))
        elif dist is DelayDistribution.UNIFORM:
            for name in ("low", "high"):
                value = getattr(self, name)
                if not (_is_number(value) and 0 <= value < math.inf):
                    raise ScenarioError(f"{key}.{name}", value, "must be a finite number >= 0")
            if self.high < self.low:
                raise ScenarioError(f"{key}.high", self.high, f"must be >= low = {self.low}")
            self._forbid(key, ("mean",))
        else:
            self._forbid(key, ("mean", "low", "high"))

    def _forbid(self, key: str, names: tuple[str, ...]) -> None:
        for name in names:
            if getattr(self, name) is not None:
                raise ScenarioError(
                    f"{key}.{name}", getattr(self, name),
                    f"not a parameter of delay distribution {self.distribution.value!r}",
                )

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | str) -> DelayConfig:
        """From the scenario value: a table ``{distribution = ..., mean = ...}`` or ``"none"``."""
        key = f"{SECTION}.delay"
        if isinstance(mapping, str):
            return cls(distribution=mapping)
        if not isinstance(mapping, Mapping):
            raise ScenarioError(key, mapping, "must be a table or the string 'none'")
        _check_keys(mapping, [f.name for f in fields(cls)], key)
        return cls(**dict(mapping))


@dataclass(frozen=True)
class PipelineConfig:
    """Options of one pipeline run.

    batch_size: release a batch as soon as it holds this many messages (None: no size trigger).
    timeout: release a batch this long after it opened, i.e. after the time its first message
        reached the empty buffer (None: no timer).
    min_batch: batches smaller than this are dropped (thresholding) and recorded as dropped.
    arrival, window: when clients send within a round (see :class:`ArrivalMode`); the round
        ends at the later of the window end and the last message's arrival at the shuffler,
        where whatever is still buffered is flushed (reason ``end``).
    dropout: each client independently never sends in a round with this probability.
    delay: per-message network delay (see :class:`DelayConfig`).
    rounds: number of collection rounds, run one after the other; every client takes part in
        each round with its fixed value and fresh randomness.
    colluding_fraction: ceil(fraction * n) clients, chosen uniformly once per run, whose reports
        the analyzer knows: they stay in the batches but not in the honest count that the
        per-batch epsilon is computed for (rounded up: the conservative side).
    group_size: at most this many consecutive arrivals form one arrival group (one SimPy event);
        a performance knob that does not change any result.
    """

    batch_size: int | None = None
    timeout: float | None = None
    min_batch: int = 1
    arrival: ArrivalMode = ArrivalMode.UNIFORM
    window: float = 1.0
    dropout: float = 0.0
    delay: DelayConfig = field(default_factory=DelayConfig)
    rounds: int = 1
    colluding_fraction: float = 0.0
    group_size: int = 1 << 16

    def __post_init__(self) -> None:
        p = SECTION
        if self.batch_size is not None and not (_is_int(self.batch_size) and self.batch_size >= 1):
            raise ScenarioError(f"{p}.batch_size", self.batch_size, "must be an integer >= 1")
        if self.timeout is not None and not (
            _is_number(self.timeout) and 0 < self.timeout < math.inf
        ):
            raise ScenarioError(f"{p}.timeout", self.timeout, "must be a finite number > 0")
        if not (_is_int(self.min_batch) and self.min_batch >= 1):
            raise ScenarioError(f"{p}.min_batch", self.min_batch, "must be an integer >= 1")
        if self.batch_size is not None and self.min_batch > self.batch_size:
            raise ScenarioError(
                f"{p}.min_batch", self.min_batch, f"must be <= batch_size = {self.batch_size}"
            )
        object.__setattr__(self, "arrival", _enum(ArrivalMode, f"{p}.arrival", self.arrival))
        if not (_is_number(self.window) and 0 < self.window < math.inf):
            raise ScenarioError(f"{p}.window", self.window, "must be a finite number > 0")
        if not (_is_number(self.dropout) and 0 <= self.dropout < 1):
            raise ScenarioError(f"{p}.dropout", self.dropout, "must lie in [0, 1)")
        if not isinstance(self.delay, DelayConfig):
            raise ScenarioError(f"{p}.delay", self.delay, "must be a DelayConfig")
        if not (_is_int(self.rounds) and self.rounds >= 1):
            raise ScenarioError(f"{p}.rounds", self.rounds, "must be an integer >= 1")
        if not (_is_number(self.colluding_fraction) and 0 <= self.colluding_fraction < 1):
            raise ScenarioError(
                f"{p}.colluding_fraction", self.colluding_fraction, "must lie in [0, 1)"
            )
        if not (_is_int(self.group_size) and self.group_size >= 1):
            raise ScenarioError(f"{p}.group_size", self.group_size, "must be an integer >= 1")

    @classmethod
    def from_mapping(
        cls, mapping: Mapping[str, Any], extra_keys: tuple[str, ...] = ()
    ) -> PipelineConfig:
        """Build from the ``[pipeline]`` table of a scenario (unknown keys are errors).

        ``extra_keys``: other valid keys of the section, handled by the caller (named in the
        hint for a misspelt key)."""
        if not isinstance(mapping, Mapping):
            raise ScenarioError(SECTION, mapping, "must be a table")
        _check_keys(mapping, [f.name for f in fields(cls)] + list(extra_keys), SECTION)
        values = dict(mapping)
        if "delay" in values:
            values["delay"] = DelayConfig.from_mapping(values["delay"])
        return cls(**values)

    def colluding_count(self, n: int) -> int:
        """Number of colluding clients among n: ceil(colluding_fraction * n), at most n."""
        return min(n, math.ceil(self.colluding_fraction * n - 1e-9))
