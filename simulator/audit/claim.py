"""What an implementation under test claims (issue 17; simulator/audit/implementation.py's
docstring): a registered randomizer with its parameters, or a black box's eps0 (and delta0),
input domain and output encoding, with the input/output numbering offsets."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.protocols.randomizers.domains import Categorical, Interval

#: Output encodings of a black box.
ENCODINGS = ("discrete", "vector", "continuous")


@dataclass(frozen=True)
class Claim:
    """What the implementation claims (module docstring): ``randomizer`` (a registered
    randomizer instance) or, for a black box, ``epsilon0`` (and ``delta0``) with
    ``domain_size`` or ``interval`` and ``output``."""

    randomizer: Any = None
    epsilon0: float | None = None
    delta0: float = 0.0
    domain_size: int | None = None
    interval: tuple[float, float] | None = None
    output: str = "discrete"
    input_offset: int = 0
    output_offset: int | None = None

    def __post_init__(self) -> None:
        if self.randomizer is not None:
            eps = float(self.randomizer.epsilon0)
            require(self.epsilon0 is None or math.isclose(self.epsilon0, eps), "epsilon0",
                    self.epsilon0, f"differs from the claimed randomizer's eps0 {eps:g}")
            object.__setattr__(self, "epsilon0", eps)
            require(self.domain_size is None and self.interval is None, "domain_size",
                    self.domain_size, "the claimed randomizer gives the input domain")
            declared = float(getattr(self.randomizer, "delta0", 0.0) or 0.0)
            if declared > 0:  # an (eps0, delta0)-LDP randomizer claims its own delta0
                require(self.delta0 in (0, declared) or math.isclose(self.delta0, declared),
                        "delta0", self.delta0, f"differs from the claimed randomizer's delta0 "
                        f"{declared:g}")
                object.__setattr__(self, "delta0", declared)
        else:
            require(self.epsilon0 is not None and math.isfinite(self.epsilon0)
                    and self.epsilon0 > 0, "epsilon0", self.epsilon0,
                    "a black-box claim needs eps0 > 0 (or name a registered randomizer)")
            require((self.domain_size is None) != (self.interval is None), "domain_size",
                    self.domain_size, "a black box needs its input domain: domain_size or "
                    "interval (one of them)")
            if self.domain_size is not None:
                require(isinstance(self.domain_size, int) and self.domain_size >= 2,
                        "domain_size", self.domain_size, "must be an integer >= 2")
            else:
                lo, hi = self.interval
                require(math.isfinite(lo) and math.isfinite(hi) and lo < hi, "interval",
                        self.interval, "must be finite (low, high) with low < high")
            require(self.output in ENCODINGS, "output", self.output,
                    f"must be one of {list(ENCODINGS)}")
        require(isinstance(self.delta0, (int, float)) and 0 <= self.delta0 < 1, "delta0",
                self.delta0, "must lie in [0, 1)")
        for name in ("input_offset", "output_offset"):
            v = getattr(self, name)
            require(v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)),
                    name, v, "must be an integer")

    @classmethod
    def registered(cls, name: str, *, epsilon0: float, input_offset: int = 0,
                   output_offset: int | None = None, **params) -> Claim:
        """The claim "this implements the registered randomizer ``name``(eps0, params)"."""
        return cls(make_randomizer(name, epsilon0=epsilon0, **params),
                   input_offset=input_offset, output_offset=output_offset)

    @property
    def black_box(self) -> bool:
        return self.randomizer is None

    @property
    def input_domain(self) -> Categorical | Interval:
        if self.randomizer is not None:
            return self.randomizer.input_domain
        if self.domain_size is not None:
            return Categorical(self.domain_size)
        return Interval(float(self.interval[0]), float(self.interval[1]))

    @property
    def scalar_integer_outputs(self) -> bool:
        """Reports are integer scalars (the output offset applies to them)."""
        if self.randomizer is not None:
            return (getattr(self.randomizer, "output_kind", "discrete") == "discrete"
                    and tuple(self.randomizer.output_shape) == ())
        return self.output == "discrete"

    @property
    def report_offset(self) -> int:
        if not self.scalar_integer_outputs:
            return 0
        return self.input_offset if self.output_offset is None else int(self.output_offset)

    def describe(self) -> str:
        if self.randomizer is not None:
            return repr(self.randomizer)
        dom = (f"domain_size={self.domain_size}" if self.domain_size is not None
               else f"interval={tuple(self.interval)}")
        return (f"black box eps0={self.epsilon0:g}, delta0={self.delta0:g}, {dom}, "
                f"output={self.output}")
