"""The ``shufflesim`` command line: app (the click group), commands/ (one module per command),
options (shared options), lazy (modules loaded on first use)."""

from shufflesim.simulator.cli.app import entry, main

__all__ = ["entry", "main"]
