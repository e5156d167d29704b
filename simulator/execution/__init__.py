"""Running a scenario: its units of work, the executors that run them, resumable part files,
and progress reports (the table producers' registry is simulator/scenario/producers.py)."""

#: The public API: the package's modules (import the one you need).
__all__ = ["executors", "progress", "resume", "runner", "simulation", "units"]
