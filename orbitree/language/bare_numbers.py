"""What pydantic would quietly coerce in node parameters, found before it does.

* **Errors for lax scalars**: ``acceleration: true`` is not 1.0, ``continuous: 0`` is not false
  and ``count: "3"`` is not 3 — YAML typed them, and a mission that says so has a mistake in it.
  (The JSON Schema refuses them too; the loader now agrees with it.)
* **Warnings for bare numbers where a quantity is expected**: ``wait: 500`` is 500 s, which is
  probably not what the author meant. The value is still accepted (it is read in the unit the
  field documents, SI unless stated); the warning names the unit assumed, at the value's line.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from orbitree.language.quantities import AnyUnit, Dimension
from orbitree.language.source import PathKey


def bare_numbers(model: type[BaseModel], written: Any, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    """(path, message) for each non-zero bare number in ``written`` where ``model`` expects a
    quantity; nested parameter models are searched too (``contact_guard: {force: 25}``)."""
    for key, field, value in _written_fields(model, written):
        dimension = _dimension(field.metadata) or _dimension_in(field.annotation)
        if dimension is not None:
            named = key.lower().endswith("_" + dimension.bare_unit.lower())  # rate_hz: the name says it
            if _is_bare(value) and not named:
                unit, what = dimension.bare_unit, dimension.name.replace("_", " ")
                yield (*path, key), (f"{key}: bare number {value!r} read as {value!r} {unit} ({what}); "
                                     f"write the unit, e.g. '{value} {unit}'")
            continue
        nested = _model_of(field.annotation)
        if nested is None:
            continue
        if typing.get_origin(field.annotation) is dict and isinstance(value, dict):
            for name_, item in value.items():
                yield from bare_numbers(nested, item, (*path, key, name_))
        else:
            yield from bare_numbers(nested, value, (*path, key))


def _written_fields(model: type[BaseModel], written: Any) -> Iterator[tuple[str, Any, Any]]:
    """(key as written, field, value) of each of ``model``'s fields that ``written`` gives."""
    if not isinstance(written, dict):
        return
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key in written:
            yield key, field, written[key]


def _is_bare(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value != 0


def _dimension(metadata: list[Any]) -> Dimension | None:
    return next((m for m in metadata if isinstance(m, Dimension)), None)


def _dimension_in(annotation: Any) -> Dimension | None:
    """The dimension of an optional quantity (``Duration | None``)."""
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is typing.Annotated:
            found = _dimension(list(arg.__metadata__))
            if found is not None:
                return found
    return None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The parameter model inside ``annotation`` (``X``, ``X | None``, ``dict[str, X]``), if any."""
    candidates = typing.get_args(annotation) or (annotation,)
    for candidate in candidates:
        if typing.get_origin(candidate) is typing.Annotated:
            candidate = typing.get_args(candidate)[0]
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def lax_scalars(model: type[BaseModel], written: Any, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    """(path, message) for each value that only lax coercion would accept: a boolean or a string
    where a plain number is expected, anything but a boolean where a boolean is."""
    for key, field, value in _written_fields(model, written):
        if _takes_units(field):
            if isinstance(value, bool):
                yield (*path, key), f"{key}: expected a number or '<number> <unit>', got {value!r}"
            continue
        kind = _scalar_kind(field.annotation)
        if kind is not None:
            problem = _scalar_problem(kind, value)
            if problem:
                yield (*path, key), f"{key}: {problem}"
            continue
        element = _element_kind(field.annotation)
        if element is not None and isinstance(value, list | tuple):
            for i, item in enumerate(value):
                problem = _scalar_problem(element, item)
                if problem:
                    yield (*path, key, i), f"{key}[{i}]: {problem}"
            continue
        nested = _model_of(field.annotation)
        if nested is not None and typing.get_origin(field.annotation) is not dict:
            yield from lax_scalars(nested, value, (*path, key))


def _takes_units(field: Any) -> bool:
    """A quantity, or a float written with any unit: strings are its business."""
    if _dimension(field.metadata) or _dimension_in(field.annotation):
        return True
    inner = [a for a in typing.get_args(field.annotation) if typing.get_origin(a) is typing.Annotated]
    metadata = [*field.metadata, *(m for a in inner for m in a.__metadata__)]
    return any(isinstance(m, AnyUnit) for m in metadata)


def _scalar_problem(kind: type, value: Any) -> str | None:
    if value is None:
        return None  # an optional field left empty, or pydantic's own 'missing' message
    if kind is bool and not isinstance(value, bool):
        return f"expected true or false, got {value!r}"
    if kind in (int, float) and isinstance(value, bool | str):
        return f"expected {'an integer' if kind is int else 'a number'}, got {value!r}"
    return None


def _plain(annotation: Any) -> Any:
    """``X`` from ``X``, ``X | None`` or ``Annotated[X, ...]``."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _plain(args[0])
    return annotation


def _scalar_kind(annotation: Any) -> type | None:
    plain = _plain(annotation)
    return plain if plain in (bool, int, float) else None


def _element_kind(annotation: Any) -> type | None:
    """The scalar type of a homogeneous list or tuple (``tuple[float, ...]``, ``list[int]``)."""
    plain = _plain(annotation)
    if typing.get_origin(plain) not in (list, tuple):
        return None
    args = [a for a in typing.get_args(plain) if a is not Ellipsis]
    kinds = {_scalar_kind(a) for a in args}
    return kinds.pop() if len(kinds) == 1 and None not in kinds and not any(
        _dimension_in(a) or (typing.get_origin(a) is typing.Annotated and _dimension(list(a.__metadata__)))
        for a in args) else None
