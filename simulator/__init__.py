"""shufflesim's runner: populations, the batch path, the SimPy pipeline, the auditor, scenarios,
results and the command line. May import :mod:`protocols`; never the other way round."""

__version__ = "0.1.0"

#: The public API: the package's modules (import the one you need).
__all__ = [
    "__version__",
    "audit",
    "batch",
    "cli",
    "errors",
    "execution",
    "learning",
    "pipeline",
    "plotting",
    "plugins",
    "population",
    "results",
    "scenario",
]
