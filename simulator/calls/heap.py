"""Keep freed memory in the process for the next array (issue 32: composition over rounds).

A composition or calibration over rounds builds and drops arrays of 1-30 MB many times (round
PLDs, block pairs, FFT circles). With glibc's defaults each such array is either mapped
afresh (above the dynamic mmap threshold) or given back to the system when freed (heap top
above the trim threshold), and every page of the next one costs a page fault when first
written: `calibrate ... --n 100000 --rounds 100` (10-RR) spent 0.65-0.89 s of its 3.8 s of CPU
in the kernel (about 290,000 minor faults). Raising the two thresholds keeps that memory for
reuse: 0.11 s in the kernel and about 33,000 faults, at the price of about 10 MB more peak
memory (277 -> 288 MB), since freed memory up to TRIM_THRESHOLD stays with the process.

mallopt (glibc, mallopt(3)) is called once per process through ctypes; where it is missing
(other C libraries, other systems) nothing is changed. The results do not depend on it.
"""

from __future__ import annotations

import importlib

#: mallopt parameter numbers (glibc malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Allocations below this come from the heap (32 MB: glibc's largest dynamic threshold on
#: 64-bit systems).
MMAP_THRESHOLD = 32 << 20
#: Free memory at the top of the heap kept for reuse, up to this.
TRIM_THRESHOLD = 256 << 20

_done: list[bool] = []


def reuse_freed_memory() -> bool:
    """Set the two thresholds once in this process; True where glibc's mallopt accepted them."""
    if _done:
        return _done[0]
    ok = False
    try:
        ctypes = importlib.import_module("ctypes")
        mallopt = ctypes.CDLL(None).mallopt
        ok = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
            mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    except (OSError, AttributeError, ImportError):   # no glibc: leave malloc as it is
        ok = False
    _done.append(ok)
    return ok
