"""FFT convolution of two non-negative vectors with a bound on its error in the 2-norm.

For x, y >= 0 the exact convolution z = x * y costs O(len(x) len(y)) directly; through real FFTs
of length L >= len(x) + len(y) - 1 (a power of two) it costs O(L log L). The floating-point FFT
has no relative accuracy in the small entries of z, only a normwise one. The bound used here
(Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., Thm 24.2 for the
Cooley-Tukey FFT): a computed transform satisfies ||fl(F v) - F v||_2 <= eta_L ||F v||_2 with
eta_L = log2(L) (mu + gamma_4 (sqrt 2 + mu)), mu the error of the twiddle factors. With
accurately computed twiddles (mu <= u) this is <= 7 u log2(L); numpy's pocketfft uses mixed
radices, so ``ETA_FACTOR`` = 20 (about 3x that) is taken, and tests/test_certified_fft.py checks
that observed errors stay far below the bound. Propagating it through two forward transforms
(||F v||_2 = sqrt(L) ||v||_2), the entrywise product (complex rounding <= sqrt 2 gamma_2) and
the inverse transform gives, to first order,

    ||fl(z) - z||_2 <= eta_L (||x||_2 ||y||_1 + ||x||_1 ||y||_2) + (3 u + eta_L) ||z||_2,

with ||z||_2 <= min(||x||_1 ||y||_2, ||x||_2 ||y||_1); the bound returned doubles it (second-
order terms) and adds the rounding of the norms. Negative computed entries are set to 0, which
moves no entry away from its (non-negative) true value, so the bound still holds.

A consumer that sums a stretch of S entries of z gets an error of at most sqrt(S) times the
bound (Cauchy-Schwarz); a further convolution with a probability vector w adds nothing
(||e * w||_2 <= ||e||_2 ||w||_1 = ||e||_2, Young's inequality).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ETA_FACTOR", "fft_convolve", "fft_error_bound"]

U = float(np.finfo(float).eps) / 2
#: eta_L = ETA_FACTOR u log2(L) (module docstring)
ETA_FACTOR = 20.0


def _length(size: int) -> int:
    return 1 << max(1, (size - 1).bit_length())


def fft_error_bound(x: np.ndarray, y: np.ndarray) -> float:
    """The bound on ||fft_convolve(x, y) - x * y||_2 (module docstring), without computing the
    convolution (so a caller can choose between the FFT and the direct sum first)."""
    length = _length(len(x) + len(y) - 1)
    eta = ETA_FACTOR * U * math.log2(length)
    n1x, n1y = float(np.sum(x)), float(np.sum(y))
    # sum of squares without BLAS (np.linalg.norm's dot took ~10 ms a call on a loaded machine)
    n2x, n2y = math.sqrt(float(np.sum(x * x))), math.sqrt(float(np.sum(y * y)))
    z2 = min(n1x * n2y, n2x * n1y)
    first = eta * (n2x * n1y + n1x * n2y) + (3 * U + eta) * z2
    return 2.0 * first * (1.0 + 1e-6)


def fft_convolve(x: np.ndarray, y: np.ndarray,
                 bound: float | None = None) -> tuple[np.ndarray, float]:
    """(z, e): the convolution of non-negative x and y through real FFTs, negative entries set
    to 0, and e >= ||z - x * y||_2 (``bound``: fft_error_bound(x, y) if already computed)."""
    size = len(x) + len(y) - 1
    length = _length(size)
    z = np.fft.irfft(np.fft.rfft(x, length) * np.fft.rfft(y, length), length)[:size]
    return np.maximum(z, 0.0), fft_error_bound(x, y) if bound is None else bound
