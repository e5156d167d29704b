"""The vectorized batch path: run (setups, units, the two paths), targets and metrics,
shuffling (exact uniform permutations), threads, memory (plans and checks)."""

#: The public API: the package's modules (import the one you need).
__all__ = ["memory", "metrics", "run", "shuffling", "targets", "threads"]
