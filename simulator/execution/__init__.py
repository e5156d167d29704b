"""Running a scenario: its units of work, the executors that run them, resumable part files,
the table producers and progress reports."""

#: The public API: the package's modules (import the one you need).
__all__ = ["executors", "producers", "progress", "resume", "runner", "simulation", "units"]
