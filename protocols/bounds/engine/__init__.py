"""The hockey-stick engine: delta(eps) = E[(sum_i G_i)_+] / n for a sum of independent GPARVs
given as atom sets (core: the public API; eps_search: the eps(delta) search; common: shared
numerics; enumerate, conditioning and fft: the three methods; oracle: the exact small-n test
oracle)."""

#: The public API: the package's modules (import the one you need).
__all__ = ["common", "conditioning", "core", "enumerate", "eps_search", "fft", "methods",
           "oracle", "plans"]
