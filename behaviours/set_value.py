"""``set``: write a value to a blackboard key, then succeed.

YAML::

    - set: {key: /mission/phase, value: docking}
    - set: {key: /limits/force, value: 40 N}     # quantities with units are stored in SI

The value is any YAML data; a string such as ``40 N`` or ``350 mm`` is converted to SI.
"""

from __future__ import annotations

from typing import Any

import py_trees
from pydantic import field_validator

from orbitree.language.params import NodeParams
from orbitree.language.quantities import BlackboardKey, any_quantity
from orbitree.nodes.leaf import Leaf


class SetParams(NodeParams):
    key: BlackboardKey
    value: Any

    @field_validator("value", mode="before")
    @classmethod
    def _units(cls, value: Any) -> Any:
        return any_quantity(value)


class SetValue(Leaf):
    kind = "set"
    Params = SetParams
    params: SetParams

    @classmethod
    def writes(cls, params: SetParams) -> list[str]:
        return [params.key]

    def update(self) -> py_trees.common.Status:
        self.write(self.params.key, self.params.value)
        self.feedback_message = f"{self.params.key} = {self.params.value!r}"
        return py_trees.common.Status.SUCCESS
