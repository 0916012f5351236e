"""Parameters of mission nodes: the base every node's model extends, the control nodes' models
(composites, decorators, subtree and include) and the condition tests shared by ``condition`` and
``guard``. Pure pydantic: the loader validates a mission against them and the JSON Schema is
generated from them, without building a tree.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from orbitree.language.quantities import AnyUnit, BlackboardKey, Duration, Frequency, any_quantity
from orbitree.language.units import QUANTITY_PATTERN
from orbitree.skills.capture import ENVELOPES


def _known_envelope(name: str) -> str:
    if name not in ENVELOPES:
        close = difflib.get_close_matches(name, list(ENVELOPES), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"unknown capture envelope {name!r}; {hint}known: {', '.join(sorted(ENVELOPES))}")
    return name


# A capture envelope by name, resolved at load (an unknown one was a KeyError at tick 0).
EnvelopeName = Annotated[
    str, AfterValidator(_known_envelope),
    WithJsonSchema({"type": "string", "enum": sorted(ENVELOPES), "description": "a capture envelope"}),
]


class NodeParams(BaseModel):
    """Parameters every node accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    name: str | None = None


CONDITION_TESTS = ("exists", "equals", "not_equals", "below", "at_most", "above", "at_least", "max_age")


# A threshold: a number, or a quantity with a unit of any dimension (the loader checks that it
# measures what the key holds); the schema says so, as the loader accepts it.
Threshold = Annotated[
    float,
    AnyUnit(),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string", "pattern": QUANTITY_PATTERN}],
                    "description": "a number, or '<number> <unit>' in the dimension of the key's values"}),
]


class ConditionParams(NodeParams):
    key: BlackboardKey
    exists: bool | None = None
    equals: Any = None
    not_equals: Any = None
    below: Threshold | None = None
    at_most: Threshold | None = None
    above: Threshold | None = None
    at_least: Threshold | None = None
    max_age: Duration | None = None
    norm: bool = False

    @field_validator("equals", "not_equals", "below", "at_most", "above", "at_least", mode="before")
    @classmethod
    def _units(cls, value: Any) -> Any:
        return any_quantity(value)

    @model_validator(mode="after")
    def _some_test(self) -> ConditionParams:
        if not self.model_fields_set.intersection(CONDITION_TESTS):
            raise ValueError(f"give at least one test: {', '.join(CONDITION_TESTS)}")
        return self



# A child node; the schema generator replaces this marker by a reference to the TreeNode union.
TREE_NODE_MARKER = "x-orbitree-tree-node"
TreeRef = Annotated[Any, WithJsonSchema({TREE_NODE_MARKER: True})]


class CompositeParams(NodeParams):
    reactive: bool = Field(False, description="re-tick earlier children every tick (no memory)")
    children: list[TreeRef] = Field(min_length=1)


class ParallelParams(NodeParams):
    policy: Literal["all", "one", "selected"] = Field(
        "all", description="succeed when all, any one, or the selected children succeed"
    )
    synchronise: bool = Field(True, description="do not re-tick children that already succeeded")
    selected: list[str] = Field([], description="child names for policy 'selected'")
    children: list[TreeRef] = Field(min_length=1)


class RetryParams(NodeParams):
    attempts: int = Field(ge=1, description="total attempts before failing")
    child: TreeRef


class RepeatParams(NodeParams):
    count: int = Field(ge=-1, description="successes needed; -1 repeats forever")
    child: TreeRef

    @field_validator("count")
    @classmethod
    def _nonzero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("count must be -1 (forever) or at least 1, got 0")
        return value


class TimeoutParams(NodeParams):
    duration: Duration = Field(gt=0.0)
    child: TreeRef


class InverterParams(NodeParams):
    child: TreeRef


class OneShotParams(NodeParams):
    on: Literal["success", "completion"] = Field(
        "success", description="latch after the first success, or after any completion"
    )
    child: TreeRef


class RateLimitParams(NodeParams):
    hz: Frequency = Field(gt=0.0, description="maximum rate at which the child is ticked")
    child: TreeRef


class GuardParams(NodeParams):
    condition: ConditionParams
    child: TreeRef


class SubtreeParams(NodeParams):
    ref: str = Field(description="name of an entry of 'subtrees'")


class IncludeParams(NodeParams):
    file: str = Field(description="YAML file holding 'tree' (and optionally 'subtrees')")


CONTROL_PARAMS: dict[str, type[NodeParams]] = {
    "sequence": CompositeParams,
    "fallback": CompositeParams,
    "parallel": ParallelParams,
    "retry": RetryParams,
    "repeat": RepeatParams,
    "timeout": TimeoutParams,
    "inverter": InverterParams,
    "one_shot": OneShotParams,
    "rate_limit": RateLimitParams,
    "guard": GuardParams,
    "subtree": SubtreeParams,
    "include": IncludeParams,
}
SHORTHAND: dict[str, str] = {
    "sequence": "children",
    "fallback": "children",
    "parallel": "children",
    "subtree": "ref",
    "include": "file",
}
CONTROL_DOCS: dict[str, str] = {
    "sequence": "tick children in order; fail at the first failure (memory unless reactive)",
    "fallback": "tick children in order; succeed at the first success (memory unless reactive)",
    "parallel": "tick all children every tick; succeed by policy all / one / selected",
    "retry": "re-run the child after a failure, up to 'attempts' tries in all",
    "repeat": "re-run the child after each success until 'count' successes (-1: forever)",
    "timeout": "fail and halt the child if it is still running after 'duration'",
    "inverter": "swap the child's SUCCESS and FAILURE",
    "one_shot": "run the child to completion once; afterwards return its final status",
    "rate_limit": "tick the child at most 'hz' times a second",
    "guard": "tick the child while 'condition' holds; halt it and fail when it stops holding",
    "subtree": "insert the named entry of 'subtrees'",
    "include": "insert the 'tree' of another YAML file (path relative to this file)",
}
COMPOSITES = ("sequence", "fallback", "parallel")
DECORATORS = ("retry", "repeat", "timeout", "inverter", "one_shot", "rate_limit", "guard")
