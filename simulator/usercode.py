"""The one adapter every piece of user code runs behind (issue 26; design section 8, "user
code is contained"): implementations (clients), shufflers, decoders and the readers of the
user's data files.

What it guarantees, for every call made through :func:`call` (or a :class:`UserFunction`):

* **Everything the code raises ends as one line.** Any exception, including ``SystemExit``
  (``sys.exit(3)`` inside a client) and ``KeyboardInterrupt`` raised by the code itself,
  becomes a :class:`UserCodeError`, ``field = 'file.py:function': raised Kind: message (at
  file.py:LINE in function)``, naming the file, line and function where it was raised. Errors
  of shufflesim's own checks (``ParameterError``, ``UserError``) pass through unchanged. A
  ``KeyboardInterrupt`` whose innermost frame is not the user's (a signal handler of the
  command) is the user pressing Ctrl-C and passes through too.
* **Its stdout never reaches the command's stdout.** While user code runs, ``sys.stdout`` is
  ``sys.stderr`` (Python-level ``print``; reference counted across threads), so ``--json``
  output stays parseable. The command line holds it instead (:func:`hold_output`) and writes
  it to stderr after the command succeeds: a failing command prints its one error line.
* **A per-call time limit.** Each call must return within :func:`time_limit` seconds
  (default :data:`DEFAULT_TIME_LIMIT`; the CLI's ``--call-timeout`` of ``audit`` and ``run``
  changes it, 0 or ``None`` switches it off). In the main thread the limit is
  a ``SIGALRM`` timer (it interrupts ``time.sleep`` and Python loops); in other threads a
  watchdog thread raises the timeout asynchronously in the calling thread (it interrupts
  Python code between bytecodes, not a blocking C call). Expiry is a :class:`UserCodeError`
  naming the limit and how to change it.
* **Returned values are checked** (:func:`numeric_array`): ``None``, strings, ragged lists
  and object arrays of non-numbers are one line naming what came back.
* **One error type crosses every boundary.** :class:`UserCodeError` is a ``ParameterError``
  (a ``UserError`` too): its ``args`` are its constructor's, so SimPy's ``type(e)(*e.args)``
  and pickling (process pools) re-create it with the same line.

Loading (:func:`load_function`) runs the user's module under the same containment: a module
that calls ``sys.exit(0)`` or prints at import is one line or stderr text, never a silent exit.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.util
import inspect
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shufflesim.protocols.errors import ParameterError, require, shown
from shufflesim.simulator.errors import ScenarioError, UserError
from shufflesim.simulator.held_output import stdout_to_stderr

#: Seconds one call to user code may take before it is stopped (``--call-timeout``).
DEFAULT_TIME_LIMIT = 60.0
#: The environment variable that carries the limit to worker processes (they inherit it).
TIME_LIMIT_VARIABLE = "SHUFFLESIM_CALL_TIMEOUT"


def _inherited() -> float | None:
    try:
        seconds = float(os.environ.get(TIME_LIMIT_VARIABLE, DEFAULT_TIME_LIMIT))
    except ValueError:
        return DEFAULT_TIME_LIMIT
    return seconds if 0 < seconds < float("inf") else None


_time_limit: float | None = _inherited()
#: What the timeout line tells the user to change.
TIME_LIMIT_REMEDY = "raise the per-call limit with --call-timeout SECONDS (0 switches it off)"


class UserCodeError(ParameterError, UserError):
    """User code failed (module docstring): one line ``field = 'source': what``. A
    ``ParameterError`` and a ``UserError``, re-creatable from its ``args`` and picklable."""


_explicit_limit = False


def set_time_limit(seconds: float | None, *, explicit: bool = False) -> None:
    """Set the per-call time limit of user code in this process (None or 0: no limit);
    ``explicit``: given on the command line (a scenario's ``[limits] call_timeout`` does not
    override it)."""
    if seconds is not None:
        require(isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
                and 0 <= seconds < float("inf"), "call_timeout", seconds,
                "must be a number of seconds >= 0 (0: no limit)")
    global _time_limit, _explicit_limit
    _explicit_limit = explicit
    _time_limit = float(seconds) if seconds else None
    os.environ[TIME_LIMIT_VARIABLE] = repr(_time_limit or 0.0)  # worker processes inherit it


def time_limit_explicit() -> bool:
    """Whether the limit in force was given on the command line."""
    return _explicit_limit


def time_limit() -> float | None:
    """The per-call time limit in force (None: none)."""
    return _time_limit


# -- the time limit --------------------------------------------------------------------------

class _Timeout(BaseException):
    """Raised inside user code when its call runs out of time (never escapes this module)."""


def _on_alarm(signum, frame):  # noqa: ARG001 (signal handler signature)
    raise _Timeout


class _Watchdog:
    """One daemon thread raising :class:`_Timeout` in threads whose deadline passed."""

    def __init__(self) -> None:
        self.deadlines: dict[int, float] = {}
        self.condition = threading.Condition()
        self.thread: threading.Thread | None = None

    def arm(self, seconds: float) -> None:
        with self.condition:
            self.deadlines[threading.get_ident()] = time.monotonic() + seconds
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="shufflesim-usercode-"
                                               "watchdog", daemon=True)
                self.thread.start()
            self.condition.notify()

    def disarm(self) -> None:
        with self.condition:
            self.deadlines.pop(threading.get_ident(), None)

    def _run(self) -> None:
        with self.condition:
            while True:
                now = time.monotonic()
                for ident, deadline in list(self.deadlines.items()):
                    if deadline <= now:
                        del self.deadlines[ident]
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(
                            ctypes.c_ulong(ident), ctypes.py_object(_Timeout))
                wait = min(self.deadlines.values(), default=now + 3600) - now
                self.condition.wait(max(wait, 0.01))


_WATCHDOG = _Watchdog()
_local = threading.local()


@contextlib.contextmanager
def _limited(seconds: float | None) -> Iterator[None]:
    """Raise :class:`_Timeout` inside the block after ``seconds`` (None: never). Nested blocks
    keep the outer limit."""
    depth = getattr(_local, "depth", 0)
    if not seconds or depth:
        _local.depth = depth + 1
        try:
            yield
        finally:
            _local.depth = depth
        return
    main = (threading.current_thread() is threading.main_thread()
            and hasattr(signal, "setitimer"))
    previous = None
    if main:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    else:
        _WATCHDOG.arm(seconds)
    _local.depth = 1
    try:
        yield
    finally:
        _local.depth = 0
        if main:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        else:
            _WATCHDOG.disarm()


# -- calling ---------------------------------------------------------------------------------

def _shown_path(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _user_frame(error: BaseException, files: set[str]) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost traceback frame in one of ``files`` (else the
    innermost frame outside shufflesim and the standard library's contextlib)."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    for frame in reversed(frames):
        if os.path.abspath(frame[0]) in files:
            return frame
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outside = [f for f in frames if not os.path.abspath(f[0]).startswith(here)
               and not f[0].endswith("contextlib.py")]
    return outside[-1] if outside else None


def source_file(function: Callable) -> str | None:
    """The file ``function`` was defined in, if known."""
    try:
        path = inspect.getsourcefile(inspect.unwrap(function))
    except (TypeError, ValueError):
        return None
    return os.path.abspath(path) if path else None


def describe(error: BaseException, function: Callable | None = None) -> str:
    """``raised Kind: message (at file.py:LINE in function)`` for an exception of user code."""
    files = set()
    if function is not None and (path := source_file(function)) is not None:
        files.add(path)
    frame = _user_frame(error, files)
    text = " ".join(str(error).split())
    if isinstance(error, SystemExit):
        what = f"called sys.exit({error.code!r})" if error.code is not None else \
            "called sys.exit()"
    else:
        what = f"raised {type(error).__name__}" + (f": {text}" if text else "")
    if frame is not None:
        what += f" (at {_shown_path(frame[0])}:{frame[1]} in {frame[2]})"
    return what


def _is_users(error: BaseException, function: Callable | None) -> bool:
    """Whether a KeyboardInterrupt was raised by the user's code (its innermost frame is in
    the user's file) rather than by a signal handler of the command."""
    tb = error.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:  # the default SIGINT handler (C) leaves no frame of its own
        return False
    path = source_file(function) if function is not None else None
    return path is not None and os.path.abspath(last.tb_frame.f_code.co_filename) == path


@contextlib.contextmanager
def contained(field: str, source: str, function: Callable | None = None,
              seconds: float | None | str = "default") -> Iterator[None]:
    """Run the block as user code named ``field = source`` (module docstring): its stdout to
    stderr, the time limit, every failure one :class:`UserCodeError`."""
    limit = time_limit() if seconds == "default" else seconds
    try:
        with stdout_to_stderr(), _limited(limit):
            yield
    except (ParameterError, UserError):
        raise
    except _Timeout:
        raise UserCodeError(field, source, f"did not return within {limit:g} s; "
                            f"{TIME_LIMIT_REMEDY}") from None
    except KeyboardInterrupt as error:
        if not _is_users(error, function):
            raise
        raise UserCodeError(field, source, describe(error, function)) from None
    except MemoryError:
        raise
    except BaseException as error:  # noqa: BLE001 (SystemExit and friends: module docstring)
        if isinstance(error, GeneratorExit):
            raise
        raise UserCodeError(field, source, describe(error, function)) from None


def call(function: Callable, *args: Any, field: str, source: str | None = None,
         seconds: float | None | str = "default", **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` contained (module docstring)."""
    label = source if source is not None else label_of(function)
    with contained(field, label, function, seconds):
        return function(*args, **kwargs)


def label_of(function: Callable) -> str:
    """``module:qualname`` of a callable (how errors name a function given as an object)."""
    module = getattr(function, "__module__", None) or "?"
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None) \
        or type(function).__name__
    return f"{module}:{name}"


@dataclass(frozen=True)
class UserFunction:
    """A user's function with the field and source its errors name; calling it is
    :func:`call`. ``numeric``: its result must be an array of numbers (:func:`numeric_array`),
    returned as one."""

    function: Callable
    field: str
    source: str
    numeric: bool = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with contained(self.field, self.source, self.function):
            result = self.function(*args, **kwargs)
        if self.numeric:
            return numeric_array(result, self.field, self.source)
        return result


# -- returned values -------------------------------------------------------------------------

def numeric_array(value: Any, field: str, source: str, what: str = "returned", *,
                  strings: bool = False, complex_ok: bool = False) -> np.ndarray:
    """``value`` as a numeric (bool, integer or real) numpy array, or a UserCodeError naming
    what came back: None, a string, ragged or non-numeric values, an object array. With
    ``strings``, arrays of fixed-width strings pass too (a black box's discrete reports; the
    claim's own checks refuse them where numbers are required). With ``complex_ok``, complex
    arrays pass too (planar points x + iy; the audit adapter checks them against the claim)."""
    if value is None:
        raise UserCodeError(field, source, f"{what} None: it must return an array of numbers")
    if isinstance(value, (str, bytes)):
        raise UserCodeError(field, source, f"{what} the string {value[:40]!r}: it must return "
                            "an array of numbers")
    try:
        array = np.asarray(value)
    except Exception as error:  # noqa: BLE001 (ragged lists, odd objects)
        raise UserCodeError(field, source, f"{what} a value numpy cannot read as an array "
                            f"({type(error).__name__}: {' '.join(str(error).split())[:120]})"
                            ) from None
    if array.dtype.kind in "biuf" or (strings and array.dtype.kind in "US" and array.ndim) or (
            complex_ok and array.dtype.kind == "c"):
        return array
    if array.dtype.kind == "O":
        number = (int, float, complex, np.number, np.bool_) if complex_ok else (
            int, float, np.number, np.bool_)
        is_complex = complex_ok and any(isinstance(v, (complex, np.complexfloating))
                                        for v in array.reshape(-1)[:1000])
        try:
            converted = array.astype(np.complex128 if is_complex else np.float64)
        except (TypeError, ValueError):
            converted = None
        if converted is not None and all(
                isinstance(v, number) and not isinstance(v, str)
                for v in array.reshape(-1)[:1000]):
            return converted
        first = next((v for v in array.reshape(-1)
                      if not isinstance(v, (int, float, np.number, np.bool_))), None)
        raise UserCodeError(field, source, f"{what} an object array holding {first!r} "
                            f"({type(first).__name__}): it must return an array of numbers")
    example = array.reshape(-1)[:1].tolist()
    hint = (" (complex reports, planar points, are read only by an implementation audit "
            "whose claim reports them, e.g. planar_laplace)" if array.dtype.kind == "c" else "")
    raise UserCodeError(field, source, f"{what} an array of {array.dtype} values (e.g. "
                        f"{example[0] if example else None!r}): it must return numbers{hint}")


def numeric_column(values: Any, key: str, value: object, where: str) -> np.ndarray:
    """A data file's column as float64, or a one-line ScenarioError naming ``key = value`` and
    the first entry that is not a number (``where``: the file and column)."""
    array = np.asarray(values)
    if array.dtype.kind in "biuf":
        return array.astype(np.float64)
    flat = array.reshape(-1)
    for row, entry in enumerate(flat, start=1):
        if isinstance(entry, (bytes, str)) or not isinstance(entry, (int, float, np.number)):
            try:
                float(entry)
                continue
            except (TypeError, ValueError):
                pass
            raise ScenarioError(key, value, f"{where} holds {shown(entry)}, not a number "
                                f"(row {row})")
    return flat.astype(np.float64).reshape(array.shape)


# -- loading ---------------------------------------------------------------------------------

def load_function(spec: str, field: str) -> Callable:
    """The object named by ``path/file.py:function`` or ``package.module:function``, its
    module imported under containment (module docstring); a ``UserCodeError`` on ``field``
    otherwise."""
    require(isinstance(spec, str) and ":" in spec, field, spec,
            "expected path/to/file.py:function or package.module:function")
    target, _, name = spec.rpartition(":")
    require(bool(target) and bool(name), field, spec,
            "expected path/to/file.py:function or package.module:function")
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = Path(target).expanduser()
        if path.is_dir():
            raise UserCodeError(field, spec, f"{target} is a directory, not a Python file")
        require(path.is_file(), field, spec, f"no such file: {target}")
        module_name = f"_shufflesim_usercode_{abs(hash(str(path.resolve())))}"
        module = sys.modules.get(module_name)
        if module is None:  # loaded once per process
            loader_spec = importlib.util.spec_from_file_location(module_name, path)
            require(loader_spec is not None and loader_spec.loader is not None, field, spec,
                    f"cannot import {target}")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[module_name] = module
            try:
                with contained(field, spec):
                    loader_spec.loader.exec_module(module)
            except UserCodeError as error:
                sys.modules.pop(module_name, None)
                raise UserCodeError(field, spec, f"importing {target} failed: "
                                    f"{error.requirement}") from None
    else:
        try:
            with contained(field, spec):
                module = importlib.import_module(target)
        except UserCodeError as error:
            requirement = error.requirement
            if "ModuleNotFoundError" in requirement and f"'{target}'" in requirement:
                requirement = f"no module {target!r}"
            else:
                requirement = f"importing {target} failed: {requirement}"
            raise UserCodeError(field, spec, requirement) from None
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise UserCodeError(field, spec, f"{target} has no function {name!r}")
        obj = getattr(obj, part)
    if not callable(obj) or inspect.ismodule(obj):
        raise UserCodeError(field, spec, "is not callable")
    return obj
