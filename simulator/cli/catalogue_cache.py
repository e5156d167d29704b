"""The printed catalogue of ``shufflesim list``, known without importing the engine (scipy,
pandas, dp_accounting, the audit) to answer.

Building the catalogue reads every registry, which imports every plug-in (about 2 s of CPU).
Its printed forms (text and ``--json``) depend only on the code that building imports, so
they are kept where they can be read in a few milliseconds, in this order:

1. the *snapshot* shipped with the package (``catalogue_snapshot.json`` beside this module):
   the printed forms, the list of every shufflesim source file that building them imported,
   and a digest of those files' contents (with the Python and numpy versions). It is used
   when the installed files still have that digest, i.e. when building would import exactly
   the code it was built from and so print the same. Reading and hashing those files costs
   about 10 ms. ``python -m shufflesim.simulator.cli.snapshot`` writes it again (a
   release step: any change to an imported file makes it stale, and ``list`` then falls back
   to the next layer, never to a stale answer);
2. a cache file in the user's cache folder, named by a fingerprint of the installed code (the
   path, size and modification time of every ``.py`` file of the shufflesim packages, the
   package and Python versions): the second ``list`` after an edit is fast too. The folder is
   ``$SHUFFLESIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/shufflesim``, else
   ``~/.cache/shufflesim``; a folder that cannot be written only means the catalogue is built
   each time.

When a third-party plug-in is installed (entry-point group ``shufflesim.plugins``) neither is
used: its files are not part of any digest, so the catalogue is always built. Neither is used
either when this process has changed a built-in declaration tuple in memory (as tests and
embedding programs may, before any registry is read): the declaration files' digest no longer
says what building would import.
"""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import sys
from pathlib import Path

import shufflesim.protocols
import shufflesim.simulator
from shufflesim.protocols.registry import ENTRY_POINT_GROUP

#: Bump when the cached content's format changes.
FORMAT = 2
#: The snapshot shipped with the package (module docstring).
SNAPSHOT = Path(__file__).with_name("catalogue_snapshot.json")


def cache_dir() -> Path:
    """Where the user's cache files live (module docstring)."""
    explicit = os.environ.get("SHUFFLESIM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "shufflesim"


def _roots() -> dict[str, Path]:
    """The folder of each top package, by the name a snapshot records its files under (the
    package ``shufflesim`` itself is the folder simulator/api)."""
    return {"protocols": Path(shufflesim.protocols.__path__[0]).resolve(),
            "simulator": Path(shufflesim.simulator.__path__[0]).resolve()}


def _package_folders() -> list[Path]:
    folders = [*shufflesim.protocols.__path__, *shufflesim.simulator.__path__]
    return sorted({Path(f).resolve() for f in folders})


def fingerprint() -> str:
    """A digest of the installed code's paths, sizes and modification times (layer 2)."""
    digest = hashlib.sha256(f"{FORMAT} {sys.version} {shufflesim.simulator.__version__}".encode())
    for folder in _package_folders():
        for path in sorted(folder.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:24]


def _numpy_version() -> str:
    from importlib import metadata  # only here: the command's start-up does not need it

    try:
        return metadata.version("numpy")
    except metadata.PackageNotFoundError:
        return ""


def content_digest(files: list[str]) -> str | None:
    """The digest of the contents of ``files`` (``root/relative/path.py``, roots as in
    :func:`_roots`), the Python and numpy versions; None when a file is missing."""
    roots = _roots()
    digest = hashlib.sha256(f"{FORMAT} {sys.version_info[:2]} {_numpy_version()}".encode())
    for name in files:
        root, _, relative = name.partition("/")
        try:
            content = (roots[root] / relative).read_bytes()
        except (KeyError, OSError):
            return None
        digest.update(f"{name}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


def imported_files() -> list[str]:
    """Every shufflesim source file imported in this process, as ``root/relative/path.py``."""
    roots = _roots()
    out = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or not path.endswith(".py"):
            continue
        resolved = Path(path).resolve()
        for name, root in roots.items():
            if resolved.is_relative_to(root):
                out.add(f"{name}/{resolved.relative_to(root).as_posix()}")
                break
    return sorted(out)


#: The modules that hold the built-in declaration tuples.
DECLARATIONS = ("shufflesim.protocols.plugins", "shufflesim.simulator.plugins")


def declarations_changed() -> bool:
    """Whether a declaration module already loaded in this process holds tuples or mappings
    other than its file's (read afresh: the files are tuples of module names and mappings of
    names to "module:attribute"). A module not loaded yet can only hold its file's."""
    for name in DECLARATIONS:
        module = sys.modules.get(name)
        if module is None:
            continue
        fresh = runpy.run_path(module.__file__)
        for key, value in vars(module).items():
            if key.isupper() and isinstance(value, (tuple, dict)) and fresh.get(key) != value:
                return True
    return False


def third_party() -> bool:
    """Whether any distribution declares an entry point of the plug-in group."""
    from importlib import metadata

    return bool(metadata.entry_points(group=ENTRY_POINT_GROUP))


def from_snapshot(path: Path | None = None) -> dict[str, str] | None:
    """The printed forms of the snapshot at ``path`` (default :data:`SNAPSHOT`) when the
    files it lists still have its digest, else None."""
    try:
        snapshot = json.loads((path or SNAPSHOT).read_text())
        if snapshot.get("format") != FORMAT:
            return None
        if content_digest(snapshot["files"]) != snapshot["digest"]:
            return None
        return {"text": snapshot["text"], "json": snapshot["json"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def load() -> dict[str, str] | None:
    """The printed forms ({"text": ..., "json": ...}) for this code, or None (module
    docstring: the shipped snapshot, else the user's cache)."""
    if third_party() or declarations_changed():
        return None
    printed = from_snapshot()
    if printed is not None:
        return printed
    try:
        return json.loads((cache_dir() / f"list-{fingerprint()}.json").read_text())
    except (OSError, ValueError):
        return None


def store(printed: dict[str, str]) -> None:
    """Remember the printed forms for this code in the user's cache (when no third-party
    plug-in is installed); older cache files of ``list`` are removed. Failures to write are
    ignored."""
    if third_party() or declarations_changed():
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


def write_snapshot(printed: dict[str, str], path: Path | None = None) -> Path:
    """Write the snapshot of ``printed`` (built in this process) with the files this process
    imported and their digest (module docstring), to ``path`` (default :data:`SNAPSHOT`)."""
    path = path or SNAPSHOT
    files = imported_files()
    snapshot = {"format": FORMAT, "digest": content_digest(files), "files": files, **printed}
    path.write_text(json.dumps(snapshot, indent=1) + "\n")
    return path
