"""CLI sub-commands: each module defines one click command called ``command``."""

#: The public API: the package's modules (import the one you need).
__all__ = ["audit", "bound", "calibrate", "list", "plot", "run"]
