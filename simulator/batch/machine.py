"""This machine's memory (:func:`machine_bytes`: physical memory, or the cgroup's limit when
lower) and byte counts as text (:func:`format_bytes`): what every command's cost check
(simulator/calls/cost.py) and a run's memory plan (simulator/batch/memory.py) ask.

Its own module (issue 32, session 16) so that ``bound`` and ``calibrate`` do not compile the
run's memory plans; memory.py re-exports both names and reads the machine through this module
(a test replaces ``machine.machine_bytes``)."""

from __future__ import annotations

import os
from pathlib import Path


def machine_bytes() -> int | None:
    """This machine's memory in bytes: physical memory, or the cgroup's limit when lower; None
    when unknown."""
    sizes = []
    try:
        sizes.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        pass
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            sizes.append(int(text))
    sizes = [size for size in sizes if size > 0]
    return min(sizes) if sizes else None


def format_bytes(size: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{max(size, 0) / 2**10:.1f} KiB"
