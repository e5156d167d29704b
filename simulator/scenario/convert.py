"""TOML tables to frozen dataclasses: key checks with "did you mean", type coercion by the
fields' annotations, and re-keying of errors under the table's dotted path. Used by the core
sections and by every registered section's parser."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import UnionType
from typing import Any

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.registry import closest
from shufflesim.simulator.errors import ScenarioError

__all__ = ["ParseContext", "check_keys", "closest", "join_key", "parse_dataclass", "rekey",
           "require_table", "unknown_key_hint"]


@dataclass(frozen=True)
class ParseContext:
    """What a section parser may need besides its table."""

    #: Directory of the scenario file: relative paths in the file are resolved against it.
    base_dir: Path
    #: The whole (override-applied) TOML document, read-only, for cross-section checks.
    document: Mapping[str, Any]



def join_key(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def check_keys(table: Mapping[str, Any], allowed: typing.Iterable[str], prefix: str) -> None:
    """Unknown keys are errors that suggest the closest allowed key."""
    allowed = list(allowed)
    for key, value in table.items():
        if key not in allowed:
            raise ScenarioError(join_key(prefix, key), value, unknown_key_hint(key, allowed))


def unknown_key_hint(key: str, allowed: list[str]) -> str:
    close = closest(key, allowed)
    hint = f"unknown key; did you mean {close!r}?" if close else "unknown key"
    return f"{hint} (valid keys: {', '.join(allowed) if allowed else 'none'})"



def require_table(document: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    """``document[key]`` as a table (required)."""
    if key not in document:
        raise ScenarioError(join_key(prefix, key), None, "is required")
    value = document[key]
    if not isinstance(value, Mapping):
        raise ScenarioError(join_key(prefix, key), value, "must be a table")
    return value


def rekey(error: ParameterError | ScenarioError, prefix: str, suffix: str = "") -> ScenarioError:
    """A ScenarioError for an error raised on a field, with the key path ``prefix.field``."""
    if isinstance(error, ScenarioError):
        key, requirement = error.key, error.requirement
    else:
        key, requirement = error.field, error.requirement
    if prefix and not (key == prefix or key.startswith(prefix + ".")):
        key = join_key(prefix, key)
    return ScenarioError(key, error.value, requirement + suffix)


def parse_dataclass(
    cls: type,
    table: Mapping[str, Any],
    prefix: str,
    context: ParseContext | None = None,
    exclude: tuple[str, ...] = (),
) -> Any:
    """Build the frozen dataclass ``cls`` from a TOML table, checking keys and value types.

    Fields are matched by name (``exclude`` lists keys handled by the caller, e.g. a
    ``distribution`` tag); unknown keys, missing required keys and wrong types are errors
    keyed ``prefix.key``. Accepted types: bool, int, float (ints accepted), str, Enum subclasses
    (by value), ``tuple[T, ...]`` (from arrays) and ``X | None``. Errors raised by the class's
    own validation (ScenarioError or ParameterError naming a field) are re-keyed under
    ``prefix``. Fields named in ``cls.path_fields`` are resolved against the scenario directory.
    """
    hints = typing.get_type_hints(cls)
    init_fields = [f for f in dataclasses.fields(cls) if f.init]
    names = [f.name for f in init_fields if not f.name.startswith("_")]
    check_keys({k: v for k, v in table.items() if k not in exclude}, names, prefix)
    kwargs = {}
    for f in init_fields:
        key = join_key(prefix, f.name)
        if f.name not in table:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ScenarioError(key, None, "is required")
            continue
        value = _coerce(table[f.name], hints[f.name], key)
        if f.name in getattr(cls, "path_fields", ()) and context is not None:
            path = Path(value).expanduser()
            value = str(path if path.is_absolute() else context.base_dir / path)
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except (ScenarioError, ParameterError) as error:
        raise rekey(error, prefix) from None


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """Check ``value`` against a field annotation (see :func:`parse_dataclass`)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, UnionType):
        arms = [a for a in typing.get_args(annotation) if a is not type(None)]
        errors = []
        for arm in arms:
            try:
                return _coerce(value, arm, key)
            except ScenarioError as error:
                errors.append(error.requirement)
        raise ScenarioError(key, value, " or ".join(errors))
    if origin is tuple:
        args = typing.get_args(annotation)
        if not isinstance(value, list):
            raise ScenarioError(key, value, "must be an array")
        return tuple(_coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value))
    if annotation is Any:
        return value
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        choices = [m.value for m in annotation]
        if value not in choices:
            raise ScenarioError(key, value, f"must be one of {choices}")
        return annotation(value)
    if annotation is bool:
        if not isinstance(value, bool):
            raise ScenarioError(key, value, "must be true or false")
        return value
    if annotation is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ScenarioError(key, value, "must be an integer")
        return value
    if annotation is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ScenarioError(key, value, "must be a number")
        return value
    if annotation is str:
        if not isinstance(value, str):
            raise ScenarioError(key, value, "must be a string")
        return value
    return value



# ---------------------------------------------------------------------------------------------
# The same rules as JSON Schema (simulator.scenario.schema assembles the scenario's schema)
# ---------------------------------------------------------------------------------------------
def annotation_schema(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of the values :func:`_coerce` accepts for ``annotation`` (a TOML
    integer is a JSON integer, an array a JSON array; ``X | None`` is X, since TOML has no
    null)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, UnionType):
        arms = [annotation_schema(a) for a in typing.get_args(annotation)
                if a is not type(None)]
        return arms[0] if len(arms) == 1 else {"anyOf": arms}
    if origin is tuple:
        return {"type": "array", "items": annotation_schema(typing.get_args(annotation)[0])}
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return {"enum": [m.value for m in annotation]}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if annotation in simple:
        return {"type": simple[annotation]}
    if dataclasses.is_dataclass(annotation):
        return dataclass_schema(annotation)
    return {}  # Any, or a type the converter passes through unchecked


def dataclass_schema(cls: type, exclude: tuple[str, ...] = (),
                     optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON Schema of the table :func:`parse_dataclass` turns into ``cls``: an object with
    a property per init field (``exclude``: fields not written in the table), the fields without
    default required (except those in ``optional``, filled in by the caller), no other key. A
    field's ``metadata["schema"]`` (e.g. ``{"minimum": 16}``) is added to its schema."""
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_") or f.name in exclude:
            continue
        properties[f.name] = {**annotation_schema(hints[f.name]), **f.metadata.get("schema", {})}
        if (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                and f.name not in optional):
            required.append(f.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema
