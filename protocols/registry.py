"""One registry mechanism: named plug-ins (scenario sections, distributions, table producers,
estimator targets, attacks, ...), standard library only.

A :class:`Registry` maps names to items in registration order. Registering a name twice is a
programming error (``RuntimeError``); looking up an unknown name is the user's error
(:class:`~protocols.errors.ParameterError` naming the field, the value, the closest registered
name by :func:`difflib.get_close_matches` and every valid name)::

    TARGETS: Registry[Target] = Registry("target", field="estimator.name")

    @TARGETS.register              # an item with a ``name`` attribute (e.g. a class)
    class Mean: name = "mean"

    TARGETS.register("avg", Mean)  # an explicit name (aliases, functions)

    @TARGETS.register("total")     # a decorator with an explicit name
    def total(...): ...

Built-ins are data (docs/architecture.md, "Registries and plug-ins"): a registry made with
``declared="package.plugins:NAME"`` reads, on its first read (``get``, ``names``, ``items``,
``in``, ``len``, iteration), the ordered tuple of module names ``NAME`` in that declaration
module, imports each (they register themselves), then every third-party module of the
entry-point group ``shufflesim.plugins``. Its order is the declaration's: an item sorts by the
position of the module whose import registered it (the innermost module being executed when
it was registered), then by registration; items from modules outside the declaration (third
party, tests) follow in registration order. So what a registry holds, and in which order,
does not depend on what was imported before.

A declaration may instead be a mapping from each built-in's name to ``"module:attribute"``
(its modules, in order of first appearance, are the declared modules). Until the registry is
first read as a whole, looking up (``get``, ``in``) a name it declares imports only that name's
module, and no entry point (issue 32: ``bound --randomizer krr`` imports k-RR, not every
randomizer); the attribute must then be the item that module registered under the name.
Reading the whole registry (``names``, ``items``, iteration, ``len``, an undeclared name)
imports every declared module and the third-party ones as above, so a third-party plug-in is
never looked up by a built-in name, and one that registers a built-in's name is refused then.

A mapping's reference may also be a bare ``"module"``: the item is then whatever that module
registers (or exports, below) under the name (the bounds: several per module).

A registry made with ``exported="SPECS"`` also reads, after importing each declared module,
that module's tuple ``SPECS`` (if it has one) and registers its items, in order, as that
module's: a module then exports its plug-ins as data instead of registering them (the bound
modules do).
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from shufflesim.protocols import import_gc
from shufflesim.protocols.errors import ParameterError

T = TypeVar("T")
_NOTHING: Any = object()
#: The entry-point group through which another distribution adds plug-ins: each entry point
#: names a module (imported; it registers itself like a built-in one) or a function of no
#: arguments (called once).
ENTRY_POINT_GROUP = "shufflesim.plugins"
_third_party: list[str] = []  # the entry points loaded so far ("name = value")
_third_party_state = {"loaded": False}


def load_third_party() -> list[str]:
    """Load every entry point of :data:`ENTRY_POINT_GROUP` once (sorted by name, then value)
    and return them as ``"name = value"``. A plug-in that fails to load is a ParameterError
    naming it (field ``plugin``)."""
    if _third_party_state["loaded"]:
        return list(_third_party)
    _third_party_state["loaded"] = True
    from importlib import metadata  # only when a registry is first read (start-up time)

    found = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP),
                   key=lambda ep: (ep.name, ep.value))
    for ep in found:
        try:
            loaded = ep.load()
            if callable(loaded) and not isinstance(loaded, type):
                loaded()
        except Exception as error:
            raise ParameterError("plugin", f"{ep.name} = {ep.value}",
                                 f"failed to load: {type(error).__name__}: {error}") from error
        _third_party.append(f"{ep.name} = {ep.value}")
    return list(_third_party)


def _registering_module() -> str | None:
    """The innermost module whose top level is running (the one whose import registers)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            return frame.f_globals.get("__name__")
        frame = frame.f_back
    return None


def _declaration(declared: str):
    """The object a declaration ``"module:NAME"`` names (importing only that module)."""
    module, _, attribute = declared.partition(":")
    return getattr(import_gc.import_module(module), attribute)


def declared_modules(declared: str) -> tuple[str, ...]:
    """The module names a declaration ``"module:NAME"`` lists, in order: a tuple of module
    names, or the modules of a mapping name -> ``"module:attribute"`` in order of first
    appearance."""
    listed = _declaration(declared)
    if isinstance(listed, Mapping):
        return tuple(dict.fromkeys(ref.partition(":")[0] for ref in listed.values()))
    return tuple(listed)


def declared_names(declared: str) -> Mapping[str, str]:
    """name -> ``"module:attribute"`` of a declaration that is a mapping (empty for a tuple)."""
    listed = _declaration(declared)
    return listed if isinstance(listed, Mapping) else {}


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate most similar to ``word``: difflib's best match (ratio >= 0.6), or for
    short words (where one wrong letter drops the ratio below that) the candidate fewest
    edits away by difflib's alignment, if at most max(1, len // 3); None when nothing is
    close."""
    candidates = list(candidates)
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    if close:
        return close[0]
    scored = sorted((_edits(word, c), c) for c in candidates)
    if scored and scored[0][0] <= max(1, len(word) // 3):
        return scored[0][1]
    return None


def _edits(a: str, b: str) -> int:
    """Characters inserted, deleted or replaced to turn ``a`` into ``b`` (difflib's opcodes)."""
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal")


class Registry(Generic[T]):
    """Names to items, in registration order (module docstring).

    ``what`` names an item in messages ("data distribution"); ``field`` is the key an unknown
    name is reported under ("distribution", "estimator.name").
    """

    def __init__(self, what: str, field: str = "name", declared: str | None = None,
                 exported: str | None = None) -> None:
        self.what = what
        self.field = field
        self.declared = declared
        self.exported = exported
        self._items: dict[str, T] = {}
        self._origins: dict[str, str | None] = {}
        self._sequence: dict[str, int] = {}
        self._counter = 0
        self._state = "empty" if declared else "loaded"
        self._ranks: dict[str, int] | None = None
        self._exported_from: set[str] = set()  # declared modules whose exports are added
        self._found: set[str] = set()  # declared names already looked up (and checked)

    def _load(self) -> None:
        """Import the declared modules, then the third-party ones (once; reads during the
        loading see what is registered so far)."""
        if self._state != "empty":
            return
        self._state = "loading"
        try:
            for module in declared_modules(self.declared):
                self._import(module)
            load_third_party()
        except BaseException:
            self._state = "empty"
            raise
        self._state = "loaded"

    def _import(self, module: str):
        """Import a declared module (it registers its items), and add its exports once."""
        loaded = import_gc.import_module(module)
        if self.exported and module not in self._exported_from:
            self._exported_from.add(module)
            for item in getattr(loaded, self.exported, ()):
                self._add(item.name, item, origin=module)
        return loaded

    def _load_for(self, name: object) -> None:
        """Before the whole registry is loaded: import only the module declaring ``name``
        when the declaration maps it (module docstring), else load everything."""
        if self._state == "empty" and isinstance(name, str):
            if name in self._found:
                return
            ref = declared_names(self.declared).get(name)
            if ref is not None:
                module, _, attribute = ref.partition(":")
                loaded = self._import(module)
                found = self._items.get(name, _NOTHING)
                item = getattr(loaded, attribute, _NOTHING) if attribute else found
                if found is item and found is not _NOTHING:
                    self._found.add(name)
                    return
                if found is not _NOTHING:
                    raise RuntimeError(f"{self.what} {name!r} is declared as {ref!r}, but its "
                                       "module registers another item under that name")
                # not registered (e.g. removed since): the whole registry decides, as below
        self._load()

    def _order(self) -> list[str]:
        """The names in declaration order (module docstring); an item put in ``_items``
        directly (a test's monkeypatch) counts as registered last."""
        self._load()
        if self._ranks is None and self.declared:
            self._ranks = {m: i for i, m in enumerate(declared_modules(self.declared))}
        rank = self._ranks or {}
        last = (len(rank), self._counter)
        return sorted(self._items, key=lambda name: (
            rank.get(self._origins.get(name), len(rank)), self._sequence.get(name, last[1])))

    def origin(self, name: str) -> str | None:
        """The module whose import registered ``name`` (None if not found)."""
        self._load()
        return self._origins.get(name)

    def register(self, name: Any = _NOTHING, item: Any = _NOTHING) -> Any:
        """``register(item)`` (under ``item.name``; usable as a decorator),
        ``register(name, item)``, or ``register(name)`` as a decorator. Returns the item."""
        if isinstance(name, str) and item is _NOTHING:
            return lambda obj: self._add(name, obj)
        if item is _NOTHING:
            return self._add(name.name, name)
        return self._add(name, item)

    def _add(self, name: str, item: T, origin: str | None = None) -> T:
        if name in self._items:
            raise RuntimeError(f"{self.what} {name!r} registered twice")
        self._items[name] = item
        self._origins[name] = origin or _registering_module()
        self._sequence[name] = self._counter
        self._counter += 1
        return item

    def remove(self, name: str) -> T:
        """Unregister ``name`` and return its item (for tests that register a plug-in of their
        own and must leave the registry as they found it); KeyError if it is not registered."""
        if name not in self._items:
            raise KeyError(f"{self.what} {name!r} is not registered")
        self._found.discard(name)
        self._origins.pop(name, None)
        self._sequence.pop(name, None)
        return self._items.pop(name)

    @property
    def complete(self) -> bool:
        """Whether the whole registry has been read (every declared module imported)."""
        return self._state == "loaded"

    def registered(self, name: str) -> T | None:
        """The item registered as ``name`` so far, or None: imports nothing (a declared name
        whose module is not imported yet is None)."""
        return self._items.get(name)

    def undeclared(self) -> list[str]:
        """The names registered by modules outside the declaration (third-party plug-ins,
        registration by a call), in registration order, after reading the entry points; no
        declared module is imported. One that takes a declared name is a RuntimeError
        ("registered twice"), as when the whole registry is read."""
        load_third_party()
        modules = set(declared_modules(self.declared)) if self.declared else set()
        last = self._counter  # an item put in ``_items`` directly counts as registered last
        names = [name for name in sorted(self._items, key=lambda n: self._sequence.get(n, last))
                 if self._origins.get(name) not in modules]
        if self.declared and self._state == "empty":
            taken = [name for name in names if name in declared_names(self.declared)]
            if taken:
                raise RuntimeError(f"{self.what} {taken[0]!r} registered twice")
        return names

    def items_of(self, modules) -> list[tuple[str, T]]:
        """(name, item) of what the declared ``modules`` register (imported here if need be)
        and of everything registered outside the declaration (third-party plug-ins, read here,
        and registration by a call), in the registry's order; no other declared module is
        imported."""
        wanted = set(modules)
        declared = declared_modules(self.declared) if self.declared else ()
        for module in declared:
            if module in wanted:
                self._import(module)
        outside = set(self.undeclared())
        rank = {module: i for i, module in enumerate(declared)}
        last = self._counter
        names = [name for name in self._items
                 if self._origins.get(name) in wanted or name in outside]
        names.sort(key=lambda name: (rank.get(self._origins.get(name), len(rank)),
                                     self._sequence.get(name, last)))
        return [(name, self._items[name]) for name in names]

    def get(self, name: object) -> T:
        """The item registered as ``name``; ParameterError (field, value, hint) if none is."""
        self._load_for(name)
        if isinstance(name, str) and name in self._items:
            return self._items[name]
        self._load()  # an unknown name: the message names every registered one
        if isinstance(name, str) and name in self._items:
            return self._items[name]
        close = closest(name, self._items) if isinstance(name, str) else None
        hint = f"did you mean {close!r}? " if close else ""
        raise ParameterError(
            self.field, name, f"unknown {self.what}; {hint}choose one of {self.names()}"
        )

    def names(self) -> list[str]:
        """The registered names, sorted."""
        self._load()
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        """(name, item) pairs in declaration order."""
        return [(name, self._items[name]) for name in self._order()]

    def values(self) -> list[T]:
        """The items in declaration order."""
        return [self._items[name] for name in self._order()]

    def __contains__(self, name: object) -> bool:
        self._load_for(name)
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._order())

    def __len__(self) -> int:
        self._load()
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self._items)})"

