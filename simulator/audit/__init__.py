"""The auditor: empirical privacy lower bounds at three levels (randomizer, shuffle, pipeline)
from registered attacks, set beside the analytic bounds as verdicts (levels: the attack
registry; run: one audited setting; section: the [audit] scenario section)."""

#: The public API: the package's modules (import the one you need).
__all__ = [
    "adapter",
    "approximate",
    "attacks",
    "claim",
    "classifier",
    "confidence",
    "events",
    "implementation",
    "levels",
    "loading",
    "multi_message_level",
    "output_events",
    "pipeline_level",
    "randomizer_level",
    "run",
    "sampling",
    "search",
    "search_events",
    "search_families",
    "section",
    "shuffle_level",
    "tables",
    "verdicts",
]
