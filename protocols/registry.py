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
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from shufflesim.protocols.errors import ParameterError

T = TypeVar("T")
_NOTHING: Any = object()


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

    def __init__(self, what: str, field: str = "name") -> None:
        self.what = what
        self.field = field
        self._items: dict[str, T] = {}

    def register(self, name: Any = _NOTHING, item: Any = _NOTHING) -> Any:
        """``register(item)`` (under ``item.name``; usable as a decorator),
        ``register(name, item)``, or ``register(name)`` as a decorator. Returns the item."""
        if isinstance(name, str) and item is _NOTHING:
            return lambda obj: self._add(name, obj)
        if item is _NOTHING:
            return self._add(name.name, name)
        return self._add(name, item)

    def _add(self, name: str, item: T) -> T:
        if name in self._items:
            raise RuntimeError(f"{self.what} {name!r} registered twice")
        self._items[name] = item
        return item

    def remove(self, name: str) -> T:
        """Unregister ``name`` and return its item (for tests that register a plug-in of their
        own and must leave the registry as they found it); KeyError if it is not registered."""
        if name not in self._items:
            raise KeyError(f"{self.what} {name!r} is not registered")
        return self._items.pop(name)

    def get(self, name: object) -> T:
        """The item registered as ``name``; ParameterError (field, value, hint) if none is."""
        if isinstance(name, str) and name in self._items:
            return self._items[name]
        close = closest(name, self._items) if isinstance(name, str) else None
        hint = f"did you mean {close!r}? " if close else ""
        raise ParameterError(
            self.field, name, f"unknown {self.what}; {hint}choose one of {self.names()}"
        )

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        """(name, item) pairs in registration order."""
        return list(self._items.items())

    def values(self) -> list[T]:
        """The items in registration order."""
        return list(self._items.values())

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self._items)})"

