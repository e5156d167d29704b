"""The vectorized batch path: run (setups, units, the two paths), targets and metrics,
shuffling (exact uniform permutations), threads, memory (plans and checks)."""
