"""Warnings for bare numbers where a quantity is expected: ``wait: 500`` is 500 s, which is
probably not what the author meant. The value is still accepted (it is read in the unit the
field documents, SI unless stated); the warning names the unit assumed, at the value's line.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from orbitree.language.quantities import Dimension
from orbitree.language.source import PathKey


def bare_numbers(model: type[BaseModel], written: Any, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    """(path, message) for each non-zero bare number in ``written`` where ``model`` expects a
    quantity; nested parameter models are searched too (``contact_guard: {force: 25}``)."""
    if not isinstance(written, dict):
        return
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in written:
            continue
        value = written[key]
        dimension = _dimension(field.metadata) or _dimension_in(field.annotation)
        if dimension is not None:
            if _is_bare(value):
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
