"""The audit's levels and the registry of its attacks (docs/architecture.md, "Registries and
plug-ins"), in a module light enough for the command line to import at start-up.

An attack is a class registered beside its definition with :func:`register_attack`: its name,
the levels it applies to and a description (``shufflesim list`` shows it). The class builds
its instances for one attacked pair (``build(setting)``, simulator/audit/attacks.py). The
built-in attacks: "lr" and "count" (attacks.py), "order" (pipeline_level.py); registration
order is the order of the audit's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from shufflesim.protocols.registry import Registry


class Level(StrEnum):
    RANDOMIZER = "randomizer"
    SHUFFLE = "shuffle"
    PIPELINE = "pipeline"


@dataclass(frozen=True)
class AttackSpec:
    """A registered attack: ``attack`` is its class; ``note`` follows the levels in its
    summary."""

    name: str
    attack: type
    levels: tuple[Level, ...]
    description: str
    note: str = ""

    @property
    def summary(self) -> str:
        """The description with the levels it applies to (``shufflesim list``)."""
        plural = "s" if len(self.levels) > 1 else ""
        note = f": {self.note}" if self.note else ""
        levels = ", ".join(level.value for level in self.levels)
        return f"{self.description} ({levels} level{plural}{note})"


#: Every attack, in registration order.
ATTACKS: Registry[AttackSpec] = Registry("attack", field="attacks",
                                        declared="shufflesim.simulator.plugins:ATTACKS")


def register_attack(name: str, *, levels: Iterable[Level | str], description: str,
                    note: str = "") -> Callable[[type], type]:
    """Class decorator: register the attack class under ``name`` for ``levels``."""

    def add(cls: type) -> type:
        ATTACKS.register(AttackSpec(name, cls, tuple(Level(v) for v in levels), description,
                                    note))
        return cls

    return add


def attack_names(level: Level | str) -> tuple[str, ...]:
    """The attacks that apply at ``level``, in registration order."""
    level = Level(level)
    return tuple(spec.name for spec in ATTACKS.values() if level in spec.levels)
