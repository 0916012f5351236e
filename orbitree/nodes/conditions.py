"""The condition tests of ``condition`` leaves and ``guard`` decorators, applied to a value."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from orbitree.language.params import ConditionParams
from orbitree.nodes.context import Context

_ORDER = {
    "below": (operator.lt, "<"),
    "at_most": (operator.le, "<="),
    "above": (operator.gt, ">"),
    "at_least": (operator.ge, ">="),
}


def evaluate(
    params: ConditionParams, value: Any, present: bool, age: float | None
) -> tuple[bool, str]:
    """Apply the tests of ``params`` to a blackboard value; return (passed, explanation)."""
    given = params.model_fields_set
    key = params.key
    if "exists" in given and params.exists != present:
        return False, f"{key} {'is missing' if params.exists else 'exists'}"
    if not present:
        if given - {"exists", "name", "key", "norm"}:
            return False, f"{key} has not been written"
        return True, f"{key} is absent"
    if "max_age" in given and (age is None or age > params.max_age + 1e-9):
        return False, f"{key} is stale ({age:.3f} s old)" if age is not None else f"{key} unstamped"
    subject = float(np.linalg.norm(value)) if params.norm else value
    if "equals" in given and not _equal(subject, params.equals):
        return False, f"{key} = {subject!r}, not {params.equals!r}"
    if "not_equals" in given and _equal(subject, params.not_equals):
        return False, f"{key} = {subject!r}"
    for name, (compare, symbol) in _ORDER.items():
        bound = getattr(params, name)
        if bound is None:
            continue
        try:
            passed = bool(compare(subject, bound))
        except (TypeError, ValueError):
            return False, f"{key} = {subject!r} cannot be compared with {bound!r}"
        if not passed:
            return False, f"{key} = {_short(subject)}, not {symbol} {bound:g}"
    return True, f"{key} = {_short(subject)}"


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b)


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else repr(value)


def check_blackboard(params: ConditionParams, client: Any, ctx: Context) -> tuple[bool, str]:
    """Evaluate ``params`` against the blackboard through a client with read access."""
    try:
        value, present = client.get(params.key), True
    except KeyError:
        value, present = None, False
    return evaluate(params, value, present, ctx.age(params.key))
