"""The candidates of a design: every registered randomizer that can serve the task, with the
parameters worth comparing (OLH's hash range, subset selection's subset size, the blanket
messages of the multi-message protocols).

A :class:`Candidate` is a randomizer name, its fixed parameters and how it is calibrated:

* ``kind = "single"``: an eps0-LDP randomizer; the design finds the largest per-round eps0
  (``epsilon0`` is the free parameter);
* ``kind = "multi"``: a multi-message protocol whose privacy comes from its blanket messages
  (protocols.randomizers.multi_message); the design finds the smallest number of blanket
  messages b per user (``blanket_messages`` is the free parameter; ``epsilon0`` of those
  randomizers only records the per-round central eps the bound certified).

Tasks: ``frequency`` over d values (frequency oracles, pure_dump, mix_dump), ``mean`` and
``sum`` over an interval (numeric randomizers; with binary inputs also balcer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from shufflesim.protocols.randomizers.registry import make_randomizer

TASKS = ("frequency", "mean", "sum")

#: Frequency oracles and their parameter variants; ``None`` is the randomizer's own default
#: (OLH: hash range round(e^eps0) + 1, Wang et al. 2017; subset: d / (e^eps0 + 1)).
FREQUENCY_SINGLE: tuple[tuple[str, dict], ...] = (
    ("krr", {}),
    ("oue", {}),
    ("rappor", {}),
    ("olh", {}),
    ("olh", {"hash_range": 2}),
    ("olh", {"hash_range": 8}),
    ("blh", {}),
    ("subset", {}),
    ("subset", {"subset_size": "quarter"}),
    ("hr", {}),
)
#: mix_dump flip probabilities, as fractions of (d - 1) / d (the uniform input message).
MIX_DUMP_FLIPS = (0.25, 0.5)
NUMERIC_SINGLE: tuple[tuple[str, dict], ...] = (
    ("laplace", {}),
    ("piecewise", {}),
    ("duchi", {}),
    ("summation", {"precision": 4}),
    ("summation", {"precision": 10}),
)


@dataclass(frozen=True)
class Candidate:
    """One row of the design table before calibration (module docstring)."""

    randomizer: str
    parameters: dict = field(default_factory=dict)
    kind: str = "single"

    def build(self, epsilon0: float, blanket_messages: int | None = None):
        """The randomizer at ``epsilon0`` (and, for a multi-message protocol, b)."""
        params = dict(self.parameters)
        if self.kind == "multi":
            params["blanket_messages"] = int(blanket_messages)
        return make_randomizer(self.randomizer, epsilon0=float(epsilon0), **params)

    @property
    def label(self) -> str:
        shown = {k: v for k, v in self.parameters.items() if k != "domain_size"}
        if not shown:
            return self.randomizer
        return self.randomizer + "(" + ", ".join(f"{k}={v}" for k, v in shown.items()) + ")"

    @property
    def generic_key(self) -> tuple:
        """Key of the calibrations that depend on eps0 alone (generic bounds)."""
        return ("generic",)

    @property
    def family_key(self) -> tuple:
        """Key of the calibrations that depend on the randomizer and its fixed parameters."""
        return (self.randomizer, tuple(sorted(self.parameters.items())))


def candidates(task: str, domain_size: int | None = None, binary: bool = False
               ) -> list[Candidate]:
    """Every candidate for ``task`` (module docstring), in a fixed order."""
    out: list[Candidate] = []
    if task == "frequency":
        d = int(domain_size)
        for name, extra in FREQUENCY_SINGLE:
            if name == "olh" and extra.get("hash_range", 0) >= d:
                continue
            if extra.get("subset_size") == "quarter":
                if d < 8:
                    continue
                extra = {"subset_size": d // 4}
            out.append(Candidate(name, {"domain_size": d, **extra}))
        if d == 2:
            out.append(Candidate("brr", {}))
        out.append(Candidate("pure_dump", {"domain_size": d}, "multi"))
        for fraction in MIX_DUMP_FLIPS:
            flip = round(fraction * (d - 1) / d, 6)
            out.append(Candidate("mix_dump", {"domain_size": d, "flip_probability": flip},
                                 "multi"))
        return out
    out += [Candidate(name, dict(extra)) for name, extra in NUMERIC_SINGLE]
    if binary:
        out.append(Candidate("balcer", {"coin": "uniform"}, "multi"))
        out.append(Candidate("balcer", {"coin": "biased", "coin_probability": 0.1}, "multi"))
    return out


def bits_per_message(randomizer) -> int:
    """Bits of one message in the randomizer's declared encoding: ceil(log2 K) for K possible
    outputs (multi-message: one message's alphabet), 64 for a real-valued report."""
    if getattr(randomizer, "multi_message", False):
        size = int(randomizer.message_alphabet_size)
    else:
        size = randomizer.output_size
    if size is None:
        return 64 * max(1, math.prod(randomizer.output_shape))
    return max(1, math.ceil(math.log2(int(size))))


def messages_per_user(randomizer) -> int:
    return int(getattr(randomizer, "messages_per_client", 1))


#: Server work per received message to update the support counts, by randomizer (d values):
#: a k-RR or DUMP message touches one count; a bit vector (OUE, RAPPOR, subset) d; a local hash
#: report (OLH, BLH) d hash evaluations; an HR report d / 2 on average (its row's support).
def decode_operations(name: str, d: int | None) -> float:
    per_value = {"oue": 1.0, "rappor": 1.0, "olh": 1.0, "blh": 1.0, "hr": 0.5, "subset": 1.0}
    if d is None or name not in per_value:
        return 1.0
    return per_value[name] * d
