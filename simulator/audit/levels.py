"""The audit's levels and attacks, as two registries (docs/architecture.md, "Registries and
plug-ins"), in a module light enough for the command line to import at start-up.

An attack is a class registered beside its definition with :func:`register_attack`: its name,
the levels it applies to and a description (``shufflesim list`` shows it). The class builds
its instances for one attacked pair (``build(setting)``, simulator/audit/attacks.py). The
built-in attacks: "lr" and "count" (attacks.py), "order" (pipeline_level.py); registration
order is the order of the audit's rows.

A level is a :class:`LevelSpec` registered with :func:`register_level` in its module (the
built-ins: randomizer_level.py, shuffle_level.py, pipeline_level.py), in the order of
``LEVELS`` in simulator/plugins.py. ``shufflesim audit --level``, ``shufflesim list`` and the
scenario's ``[audit]`` section accept every registered level. The three built-ins are run by
simulator/audit/run.py (``Level`` names them); a new level carries its own ``run``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from shufflesim.protocols.registry import Registry


class Level(StrEnum):
    """The built-in levels' names (registered in ``LEVELS`` by their modules)."""

    RANDOMIZER = "randomizer"
    SHUFFLE = "shuffle"
    PIPELINE = "pipeline"


@dataclass(frozen=True)
class LevelSpec:
    """A registered audit level: ``description`` (``shufflesim list``); ``run`` (None for the
    built-ins, which audit/run.py runs) is ``run(settings, randomizer, n, seed, context,
    pipeline, progress) -> rows`` of the ``audit`` table for the project's sampler."""

    name: str
    description: str
    run: Callable | None = None


#: Every audit level, in the order of simulator/plugins.py ``LEVELS``.
LEVELS: Registry[LevelSpec] = Registry("audit level", field="level",
                                       declared="shufflesim.simulator.plugins:LEVELS")


def register_level(name: str, description: str, run: Callable | None = None) -> LevelSpec:
    """Register the audit level ``name`` (in its module; one line in ``LEVELS``)."""
    return LEVELS.register(LevelSpec(str(name), description, run))


def as_level(name: object) -> Level | str:
    """A registered level's name: the ``Level`` member for a built-in, else the string;
    ParameterError (field ``level``) naming the registered levels when none is."""
    spec = LEVELS.get(str(name) if isinstance(name, str) else name)
    return Level(spec.name) if spec.name in Level._value2member_map_ else spec.name


@dataclass(frozen=True)
class AttackSpec:
    """A registered attack: ``attack`` is its class; ``note`` follows the levels in its
    summary."""

    name: str
    attack: type
    levels: tuple[Level | str, ...]
    description: str
    note: str = ""

    @property
    def summary(self) -> str:
        """The description with the levels it applies to (``shufflesim list``)."""
        plural = "s" if len(self.levels) > 1 else ""
        note = f": {self.note}" if self.note else ""
        levels = ", ".join(str(level) for level in self.levels)
        return f"{self.description} ({levels} level{plural}{note})"


#: Every attack, in registration order.
ATTACKS: Registry[AttackSpec] = Registry("attack", field="attacks",
                                        declared="shufflesim.simulator.plugins:ATTACKS")


def register_attack(name: str, *, levels: Iterable[Level | str], description: str,
                    note: str = "") -> Callable[[type], type]:
    """Class decorator: register the attack class under ``name`` for ``levels``."""

    def add(cls: type) -> type:
        ATTACKS.register(AttackSpec(name, cls, tuple(_level_name(v) for v in levels),
                                    description, note))
        return cls

    return add


def _level_name(level: Level | str) -> Level | str:
    """``Level`` for a built-in name (checked when the audit runs, not at registration)."""
    return Level(level) if level in Level._value2member_map_ else str(level)


def attack_names(level: Level | str) -> tuple[str, ...]:
    """The attacks that apply at ``level``, in registration order."""
    level = _level_name(level)
    return tuple(spec.name for spec in ATTACKS.values() if level in spec.levels)
