"""What user code prints (simulator/usercode.py), kept off the command's stdout: while user code
runs, ``sys.stdout`` is ``sys.stderr``, or a buffer the command line holds until the command
ends (written to stderr after a success, dropped after a failure, so that a failing command
prints its one error line). No numpy here: the command line imports it at start-up."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

_redirect_lock = threading.Lock()
_redirect_depth = 0
_saved_stdout: Any = None
#: Where user code's stdout goes: None: sys.stderr at once; a _Held buffer: kept until the
#: command ends (the CLI: written to stderr after a success, dropped after a failure).
_held: _Held | None = None
#: Characters of user output a held buffer keeps (the rest is counted, not kept).
HELD_CHARS = 1_000_000


class _Held:
    """User code's stdout, held back (see :func:`hold_output`)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            room = HELD_CHARS - self.size
            self.parts.append(text[:max(room, 0)])
            self.size += min(len(text), max(room, 0))
            self.dropped += max(len(text) - max(room, 0), 0)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def text(self) -> str:
        with self.lock:
            more = f"\n[{self.dropped} more characters not kept]\n" if self.dropped else ""
            return "".join(self.parts) + more


def hold_output(hold: bool) -> str:
    """Start (True) or end (False) holding user code's stdout in this process; returns what was
    held (ending) or "" (starting). The command line holds it so that a failing command prints
    one line: it writes the held text to stderr after a success and drops it after a failure."""
    global _held
    text = _held.text() if _held is not None else ""
    _held = _Held() if hold else None
    return text


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """While inside, ``print`` (``sys.stdout``) writes to ``sys.stderr``, or to the held buffer
    (module docstring)."""
    global _redirect_depth, _saved_stdout
    with _redirect_lock:
        if _redirect_depth == 0:
            _saved_stdout = sys.stdout
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            sys.stdout = _held if _held is not None else sys.stderr
        _redirect_depth += 1
    try:
        yield
    finally:
        with _redirect_lock:
            _redirect_depth -= 1
            if _redirect_depth == 0:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                if sys.stdout is sys.stderr or sys.stdout is _held:  # nobody replaced it
                    sys.stdout = _saved_stdout
                _saved_stdout = None
