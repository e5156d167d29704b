"""The audit's levels and attack names (docs/architecture.md, "The auditor"), in a module light
enough for the command line to import at start-up."""

from __future__ import annotations

from enum import StrEnum


class Level(StrEnum):
    RANDOMIZER = "randomizer"
    SHUFFLE = "shuffle"
    PIPELINE = "pipeline"


#: Histogram attacks (simulator/audit/attacks.py): the likelihood ratio and a count threshold.
ATTACK_NAMES = ("lr", "count")
#: The pipeline level's order-aware attack (simulator/audit/pipeline_level.py).
ORDER = "order"
