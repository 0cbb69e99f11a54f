"""Frozen dataclasses built from YAML that a schema has already checked, by their fields alone.

The schema (workflow/schemas/*.schema.yaml) says what a file may hold and words the errors; the
dataclasses say what the code reads. Nothing in between maps key by key: a field reads the key of its
name (or its metadata's `key`, dotted for a nested one: "needs.gpus"), converted by its type hint
(a dataclass or named tuple from a mapping, a tuple from a list, or a single item as a list of one),
through its metadata's `read` where the YAML's form is not the object's ("calibrated" for a number).
Text is folded to one line, so a folded YAML block and a quoted line read alike.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
MISSING = object()


def key(name: str, read: Callable[[Any], Any] | None = None, **kwargs: Any) -> Any:
    """A dataclass field read from the YAML key `name` (dotted for a nested key), through `read`."""
    metadata = {"key": name, **({"read": read} if read else {})}
    return dataclasses.field(metadata=metadata, **kwargs)


def words(text: Any) -> str:
    """A text as one line: a folded YAML block ends in a newline and may keep a more-indented one."""
    return " ".join(str(text).split())


def build(cls: type[T], data: Mapping[str, Any], **given: Any) -> T:
    """An instance of the dataclass or named tuple `cls` from a checked YAML mapping; `given` fields are
    taken as they are (what the file alone cannot say: defaults from elsewhere in it, derived values)."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, meta in _fields(cls):
        if name in given:
            values[name] = given[name]
            continue
        value = _lookup(data, meta.get("key", name))
        if value is not MISSING:
            values[name] = meta["read"](value) if "read" in meta else convert(hints[name], value)
    return cls(**values)


def yaml_keys(cls: type) -> dict[str, type | None]:
    """The YAML keys a dataclass reads (dotted for a nested one), each with the class its value is built
    as (None for a plain value): what a test sets beside the schema's properties, so that neither names
    a key the other lacks."""
    hints = typing.get_type_hints(cls)
    return {meta.get("key", name): _built_class(hints[name]) for name, meta in _fields(cls)}


def _fields(cls: type) -> list[tuple[str, Mapping[str, Any]]]:
    """A dataclass's or named tuple's fields, each with its metadata (none for a named tuple's)."""
    if dataclasses.is_dataclass(cls):
        return [(f.name, f.metadata) for f in dataclasses.fields(cls)]
    return [(name, {}) for name in cls._fields]  # type: ignore[attr-defined]


def _lookup(data: Mapping[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, Mapping) or part not in data:
            return MISSING
        data = data[part]
    return data


def convert(hint: Any, value: Any) -> Any:
    """A YAML value as the type hint says: optional types by their one other type, dataclasses and
    named tuples built, tuples of items (a single item standing for a list of one), mappings copied,
    text folded; numbers and booleans as YAML read them."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return convert(next(arg for arg in args if arg is not type(None)), value)
    if _is_built(hint):
        return build(hint, value)
    if origin is tuple and args[-1] is Ellipsis:
        items = value if isinstance(value, list) else [value]
        return tuple(convert(args[0], item) for item in items)
    if origin is dict or hint is dict:
        return dict(value)
    if hint is str:
        return words(value)
    return value


def _is_built(hint: Any) -> bool:
    return isinstance(hint, type) and (dataclasses.is_dataclass(hint) or hasattr(hint, "_fields"))


def _built_class(hint: Any) -> type | None:
    """The dataclass or named tuple a hint builds, through optional types and tuples of it."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) or origin is tuple:
        found = [_built_class(arg) for arg in args if arg not in (type(None), Ellipsis)]
        return next((cls for cls in found if cls is not None), None)
    return hint if _is_built(hint) else None
