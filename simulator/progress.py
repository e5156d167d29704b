"""Progress of long work on stderr: units done / total, rate and time left.

:class:`ProgressReport` is a ``progress(done, total)`` callback. It stays silent for the first
``delay`` seconds, so short runs print nothing; after that it shows
``<label>: 37/200 units (18%), 2.4 units/s, 1 min 8 s left``. On a terminal it redraws one line
(at most every ``interval`` seconds) and ends it with a newline when the work is done; to a file
or pipe it writes a whole line at most every ``log_interval`` seconds, and a last line when the
work is done. The rate counts only units finished since the report started (units a resumed
run found finished are not part of it), and the time left is the remaining units over that
rate.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import TextIO


def format_duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 7 min`` (rounded up to whole seconds)."""
    if not math.isfinite(seconds):
        return "?"
    total = max(0, math.ceil(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def format_rate(rate: float) -> str:
    if rate >= 10:
        return f"{rate:.0f} units/s"
    if rate >= 0.1:
        return f"{rate:.2g} units/s"
    return f"{rate * 60:.2g} units/min"


class ProgressReport:
    """A ``progress(done, total)`` callback writing to ``stream`` (module docstring)."""

    def __init__(self, label: str, stream: TextIO | None = None, *, enabled: bool = True,
                 delay: float = 1.0, interval: float = 0.2, log_interval: float = 10.0,
                 tty: bool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.delay, self.interval, self.log_interval = delay, interval, log_interval
        self.tty = _isatty(self.stream) if tty is None else tty
        self._clock = clock
        self._start = clock()
        self._first_done: int | None = None
        self._last_write: float | None = None
        self._open_line = False
        self._last = (0, 0)

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        if self._first_done is None:
            self._first_done = done
        self._last = (done, total)
        if not self.enabled:
            return
        finished = done >= total
        if now - self._start < self.delay and (self._last_write is None):
            return
        wait = self.interval if self.tty else self.log_interval
        if not finished and self._last_write is not None and now - self._last_write < wait:
            return
        self._write(self.line(done, total, now), final=finished)
        self._last_write = now

    def line(self, done: int, total: int, now: float | None = None) -> str:
        now = self._clock() if now is None else now
        percent = 100.0 * done / total if total else 100.0
        text = f"{self.label}: {done}/{total} units ({percent:.0f}%)"
        ran = done - (self._first_done or 0)
        elapsed = now - self._start
        if ran > 0 and elapsed > 0:
            rate = ran / elapsed
            text += f", {format_rate(rate)}"
            if done < total:
                text += f", {format_duration((total - done) / rate)} left"
            else:
                text += f", {format_duration(elapsed)}"
        return text

    def _write(self, text: str, final: bool) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K" + text + ("\n" if final else ""))
            self._open_line = not final
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End an open terminal line (e.g. after an interruption)."""
        if self.enabled and self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False

    def __enter__(self) -> ProgressReport:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
