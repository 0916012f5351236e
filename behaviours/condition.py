"""``condition``: SUCCESS when a blackboard value passes every test given, else FAILURE.

YAML::

    - condition: {key: /target/sirom/visible, equals: true}
    - condition: {key: /servo/error, norm: true, below: 1 mm}
    - condition: {key: /target/sirom/pose_cam, max_age: 200 ms}   # fresh, not stale
    - condition: {key: /mission/abort, exists: false}

Tests: ``exists``, ``equals``, ``not_equals``, ``below`` (<), ``at_most`` (<=), ``above`` (>),
``at_least`` (>=) and ``max_age`` (written no longer ago than this). Numbers may carry units
(converted to SI); ``norm: true`` compares the Euclidean norm of a vector value. A missing key
fails every test except ``exists: false``. The same tests drive the ``guard`` decorator.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import py_trees
from pydantic import field_validator, model_validator

from orbitree.context import Context
from orbitree.leaf import Leaf, NodeParams
from orbitree.quantities import BlackboardKey, Duration, any_quantity

_ORDER = {
    "below": (operator.lt, "<"),
    "at_most": (operator.le, "<="),
    "above": (operator.gt, ">"),
    "at_least": (operator.ge, ">="),
}
_TESTS = ("exists", "equals", "not_equals", *_ORDER, "max_age")


class ConditionParams(NodeParams):
    key: BlackboardKey
    exists: bool | None = None
    equals: Any = None
    not_equals: Any = None
    below: float | None = None
    at_most: float | None = None
    above: float | None = None
    at_least: float | None = None
    max_age: Duration | None = None
    norm: bool = False

    @field_validator("equals", "not_equals", "below", "at_most", "above", "at_least", mode="before")
    @classmethod
    def _units(cls, value: Any) -> Any:
        return any_quantity(value)

    @model_validator(mode="after")
    def _some_test(self) -> ConditionParams:
        if not self.model_fields_set.intersection(_TESTS):
            raise ValueError(f"give at least one test: {', '.join(_TESTS)}")
        return self


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


class Condition(Leaf):
    kind = "condition"
    Params = ConditionParams
    params: ConditionParams

    @classmethod
    def reads(cls, params: ConditionParams) -> list[str]:
        return [params.key]

    def update(self) -> py_trees.common.Status:
        passed, self.feedback_message = check_blackboard(self.params, self.bb, self.ctx)
        return py_trees.common.Status.SUCCESS if passed else py_trees.common.Status.FAILURE
