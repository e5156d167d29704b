"""The printed catalogue of ``shufflesim list``, remembered between runs so that the command
does not import the engine (scipy, pandas, dp_accounting, the audit) to answer.

Building the catalogue reads every registry, which imports every plug-in (over a second of
CPU). Its printed forms (text and ``--json``) depend only on the installed code, so they are
kept in a cache file named by a fingerprint of that code: the path, size and modification time
of every ``.py`` file of the shufflesim packages (the plug-in declarations included), the
package and Python versions. Any edit to
the code gives another fingerprint and the catalogue is built again; when a third-party
plug-in is installed (entry-point group ``shufflesim.plugins``) it is always built (its files
are not fingerprinted). The cache folder is ``$SHUFFLESIM_CACHE_DIR``, else
``$XDG_CACHE_HOME/shufflesim``, else ``~/.cache/shufflesim``; a folder that cannot be written
only means the catalogue is built each time.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import shufflesim.protocols
import shufflesim.simulator
from shufflesim.protocols.registry import ENTRY_POINT_GROUP

#: Bump when the cached content's format changes.
FORMAT = 1


def cache_dir() -> Path:
    """Where the cache files live (module docstring)."""
    explicit = os.environ.get("SHUFFLESIM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "shufflesim"


def _package_folders() -> list[Path]:
    folders = [*shufflesim.protocols.__path__, *shufflesim.simulator.__path__]
    return sorted({Path(f).resolve() for f in folders})


def fingerprint() -> str:
    """A digest of the installed code (module docstring)."""
    digest = hashlib.sha256(f"{FORMAT} {sys.version} {shufflesim.simulator.__version__}".encode())
    for folder in _package_folders():
        for path in sorted(folder.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:24]


def third_party() -> bool:
    """Whether any distribution declares an entry point of the plug-in group."""
    from importlib import metadata  # only here: the command's start-up does not need it

    return bool(metadata.entry_points(group=ENTRY_POINT_GROUP))


def load() -> dict[str, str] | None:
    """The cached printed forms ({"text": ..., "json": ...}) for this code, or None."""
    if third_party():
        return None
    try:
        return json.loads((cache_dir() / f"list-{fingerprint()}.json").read_text())
    except (OSError, ValueError):
        return None


def store(printed: dict[str, str]) -> None:
    """Remember the printed forms for this code (when no third-party plug-in is installed);
    older cache files of ``list`` are removed. Failures to write are ignored."""
    if third_party():
        return
    folder = cache_dir()
    name = f"list-{fingerprint()}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{name}.{os.getpid()}"
        partial.write_text(json.dumps(printed))
        os.replace(partial, folder / name)
        for old in folder.glob("list-*.json"):
            if old.name != name:
                old.unlink(missing_ok=True)
    except OSError:
        pass
