"""Event functions of the implementation audit (issue 17; simulator/audit/implementation.py's
docstring): maps from reports to event indices in [0, size) for output spaces too large to
tabulate (the claimed output index, bits of coordinates, hashed report bytes, outputs seen in
a pilot), and the default choice per claim."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS
from shufflesim.protocols.randomizers.domains import Categorical

#: Events of the default hashed event function.
HASH_BUCKETS = 1024


class EventFunction(Protocol):
    """Maps reports (leading axis: samples) to event indices in [0, size)."""

    size: int
    label: str

    def __call__(self, reports: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class OutputIndex:
    """Every output is its own event: the claimed randomizer's output index."""

    randomizer: Any
    label: str = "outputs"

    @property
    def size(self) -> int:
        return int(self.randomizer.output_size)

    def __call__(self, reports: np.ndarray) -> np.ndarray:
        return np.asarray(self.randomizer.output_index(reports), dtype=np.int64)


@dataclass(frozen=True)
class CoordinateEvents:
    """The bits of a few coordinates of binary vector reports (unary encodings: coordinate j is
    the bit of value j): event = sum_k bit(coordinates[k]) 2^k."""

    coordinates: tuple[int, ...]
    label: str = ""

    def __post_init__(self) -> None:
        require(1 <= len(self.coordinates) <= 16, "coordinates", self.coordinates,
                "between 1 and 16 coordinates")
        if not self.label:
            object.__setattr__(self, "label", f"bits of coordinates {list(self.coordinates)}")

    @property
    def size(self) -> int:
        return 1 << len(self.coordinates)

    def __call__(self, reports: np.ndarray) -> np.ndarray:
        bits = np.asarray(reports)[:, list(self.coordinates)] != 0
        return bits.astype(np.int64) @ (1 << np.arange(len(self.coordinates), dtype=np.int64))


@dataclass(frozen=True)
class HashedEvents:
    """Each report's bytes hashed into ``buckets`` events (FNV-1a over the bytes, salted)."""

    buckets: int = HASH_BUCKETS
    salt: int = 0
    label: str = ""

    def __post_init__(self) -> None:
        require(isinstance(self.buckets, int) and 2 <= self.buckets <= MAX_ENUMERABLE_OUTPUTS,
                "buckets", self.buckets, f"must be an integer in [2, {MAX_ENUMERABLE_OUTPUTS}]")
        if not self.label:
            object.__setattr__(self, "label", f"hash of the report bytes into {self.buckets}")

    @property
    def size(self) -> int:
        return self.buckets

    def __call__(self, reports: np.ndarray) -> np.ndarray:
        return report_hash(reports, self.salt) % np.uint64(self.buckets)


def report_hash(reports: np.ndarray, salt: int = 0) -> np.ndarray:
    """64-bit FNV-1a hash of each report's bytes (leading axis: reports), vectorized over
    reports (a loop over the bytes of one report)."""
    arr = np.ascontiguousarray(reports)
    count = arr.shape[0] if arr.ndim else 1
    raw = arr.reshape(count, -1).view(np.uint8).reshape(count, -1)
    h = np.full(count, np.uint64(0xCBF29CE484222325) ^ np.uint64(salt), dtype=np.uint64)
    prime = np.uint64(0x100000001B3)
    with np.errstate(over="ignore"):
        for j in range(raw.shape[1]):
            h ^= raw[:, j].astype(np.uint64)
            h *= prime
    return h


@dataclass(frozen=True)
class ObservedOutputs:
    """Black-box scalar or vector reports: one event per distinct report seen in a pilot sample
    (drawn from its own random stream), one more event for every other report."""

    keys: np.ndarray  # sorted hashes of the pilot's distinct reports
    label: str = "reports seen in the pilot sample"

    @classmethod
    def from_pilot(cls, pilot: np.ndarray, limit: int = 4096) -> ObservedOutputs:
        hashes, counts = np.unique(report_hash(pilot), return_counts=True)
        if hashes.size > limit:
            hashes = np.sort(hashes[np.argsort(-counts, kind="stable")[:limit]])
        return cls(hashes)

    @property
    def size(self) -> int:
        return int(self.keys.size) + 1

    def __call__(self, reports: np.ndarray) -> np.ndarray:
        h = report_hash(reports)
        pos = np.searchsorted(self.keys, h)
        pos_c = np.minimum(pos, self.keys.size - 1)
        hit = (self.keys.size > 0) & (self.keys[pos_c] == h)
        return np.where(hit, pos_c, self.keys.size).astype(np.int64)


def default_events(randomizer, inputs) -> EventFunction | None:
    """The event function a level uses when none is given: None (the dense output index) for
    a tabulable output space; the bits of the audited inputs' coordinates for binary vector
    reports of a categorical claim; else hashed reports. Black boxes with discrete outputs get
    :class:`ObservedOutputs` from a pilot (built by the randomizer level)."""
    declared = getattr(randomizer, "declared", randomizer)
    if declared is None:
        return None
    size = getattr(declared, "output_size", None)
    if getattr(declared, "output_kind", "discrete") == "continuous":
        return None
    if size is not None and size <= MAX_ENUMERABLE_OUTPUTS:
        return None
    shape = tuple(declared.output_shape)
    if len(shape) == 1 and isinstance(declared.input_domain, Categorical) \
            and shape[0] == declared.input_domain.size and len(inputs) <= 16:
        return CoordinateEvents(tuple(int(x) for x in inputs))
    return HashedEvents()
