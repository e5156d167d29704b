"""Progress of long work on stderr: items done / total, rate and time left.

:class:`ProgressReport` is a ``progress(done, total)`` callback. It stays silent for the first
``delay`` seconds, so short work prints nothing; after that it shows
``<label>: 37/200 units (18%), 2.4 units/s, 1 min 8 s left`` (the word ``units`` is the
report's ``unit``: ``bounds`` for ``shufflesim bound``). On a terminal it redraws one line (at
most every ``interval`` seconds) and ends it with a newline when the work is done; to a file or
pipe it writes a whole line at most every ``log_interval`` seconds, and a last line when the
work is done, never a redraw.

The rate counts only items finished since the report started (items a resumed run found
finished are not part of it). The time left is the remaining items over the *recent* rate: the
items finished over the last ``max(10 s, a quarter of the elapsed time)``, so that a slow start
(worker processes starting, a first expensive item) does not inflate the estimate at the end.

Work made of few long steps (one bound that takes a minute) calls :meth:`ProgressReport.doing`
to name the step in progress, and runs inside :meth:`ProgressReport.heartbeat`, which repeats
the line (with the step and its elapsed time) at the same intervals even when no step
finishes, so that a long step never looks hung.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
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


def format_rate(rate: float, unit: str = "units") -> str:
    if rate >= 10:
        return f"{rate:.0f} {unit}/s"
    if rate >= 0.1:
        return f"{rate:.2g} {unit}/s"
    return f"{rate * 60:.2g} {unit}/min"


#: Seconds of silence before the first line on a terminal (short work prints nothing).
DELAY = 1.0
#: Seconds of silence before the first line to a file or pipe: a line written there cannot be
#: withdrawn, so only work that is really long logs its progress (issue 26: a command that
#: fails prints one line; errors found up front come long before this).
LOG_DELAY = 30.0
#: Seconds between two lines to a file or pipe.
LOG_INTERVAL = 10.0


class ProgressReport:
    """A ``progress(done, total)`` callback writing to ``stream`` (module docstring)."""

    def __init__(self, label: str, stream: TextIO | None = None, *, enabled: bool = True,
                 delay: float | None = None, interval: float = 0.2,
                 log_interval: float | None = None,
                 tty: bool | None = None, clock: Callable[[], float] = time.monotonic,
                 unit: str = "units") -> None:
        self.label = label
        self.unit = unit
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.tty = _isatty(self.stream) if tty is None else tty
        self.delay = (DELAY if self.tty else LOG_DELAY) if delay is None else delay
        self.interval = interval
        self.log_interval = LOG_INTERVAL if log_interval is None else log_interval
        self._clock = clock
        self._start = clock()
        self._first_done: int | None = None
        self._last_write: float | None = None
        self._open_line = False
        self._last = (0, 0)
        self._samples: deque[tuple[float, int]] = deque()
        self._step: tuple[str, float] | None = None
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            now = self._clock()
            if self._first_done is None:
                self._first_done = done
            if done != self._last[0] or not self._samples:
                self._samples.append((now, done))
            self._last = (done, total)
            self._maybe_write(now, force=done >= total)

    def doing(self, step: str | None) -> None:
        """Name the step in progress (shown with its elapsed time); None clears it."""
        with self._lock:
            self._step = None if step is None else (step, self._clock())

    def steps(self, names: Sequence[str]) -> Iterator[str]:
        """Yield each of ``names`` in turn, naming it as the step in progress with the count done
        before it; after the last, clear the step and report all done. An exception in the
        caller's loop body stops it there, like a hand-written loop."""
        for i, name in enumerate(names):
            self.doing(name)
            self(i, len(names))
            yield name
        self.doing(None)
        self(len(names), len(names))

    @contextmanager
    def heartbeat(self) -> Iterator[ProgressReport]:
        """Repeat the progress line while the block runs, even when no step finishes."""
        stop = threading.Event()
        wait = self.interval if self.tty else self.log_interval

        def beat() -> None:
            while not stop.wait(min(wait, 1.0)):
                with self._lock:
                    done, total = self._last
                    if total and done < total:
                        self._maybe_write(self._clock(), force=False)

        thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
        if self.enabled:
            thread.start()
        try:
            yield self
        finally:
            stop.set()
            if thread.is_alive():
                thread.join()

    def _maybe_write(self, now: float, force: bool) -> None:
        if not self.enabled:
            return
        if now - self._start < self.delay and self._last_write is None:
            return
        wait = self.interval if self.tty else self.log_interval
        if not force and self._last_write is not None and now - self._last_write < wait:
            return
        done, total = self._last
        self._write(self.line(done, total, now), final=done >= total)
        self._last_write = now

    def line(self, done: int, total: int, now: float | None = None) -> str:
        now = self._clock() if now is None else now
        percent = 100.0 * done / total if total else 100.0
        text = f"{self.label}: {done}/{total} {self.unit} ({percent:.0f}%)"
        ran = done - (self._first_done or 0)
        elapsed = now - self._start
        if ran > 0 and elapsed > 0:
            if done < total:
                rate = self._recent_rate(done, now)
                text += f", {format_rate(rate, self.unit)}"
                text += f", {format_duration((total - done) / rate)} left"
            else:
                text += f", {format_rate(ran / elapsed, self.unit)}, {format_duration(elapsed)}"
        if self._step is not None and done < total:
            step, since = self._step
            text += f"; {step} ({format_duration(now - since)})"
        return text

    def _recent_rate(self, done: int, now: float) -> float:
        """Items per second over the last max(10 s, elapsed / 4) (module docstring)."""
        window = max(10.0, (now - self._start) / 4)
        while len(self._samples) > 1 and now - self._samples[1][0] >= window:
            self._samples.popleft()
        then, done_then = self._samples[0]
        if then == self._samples[-1][0] or done_then == done:  # one sample: the whole run
            then, done_then = self._start, self._first_done or 0
        return max(done - done_then, 1e-12) / max(now - then, 1e-9)

    def _write(self, text: str, final: bool) -> None:
        if self.tty:  # the line stays open until the report closes (it may be withdrawn)
            self.stream.write("\r\x1b[K" + text)
            self._open_line = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End an open terminal line (the work is done, or was interrupted)."""
        if self.enabled and self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False

    def withdraw(self) -> None:
        """Erase an open terminal line: the command fails, and its one line is the error."""
        if self.enabled and self._open_line:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._open_line = False

    def __enter__(self) -> ProgressReport:
        return self

    def __exit__(self, kind, *exc_info) -> None:
        with self._lock:
            if kind is None or issubclass(kind, KeyboardInterrupt):
                self.close()
            else:
                self.withdraw()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
