"""``log``: write a message to the mission log (and the terminal view), then succeed.

YAML::

    - log: target found
    - log: {message: "docking force {/robot/arm/wrench}", level: warning, keys: [/robot/arm/wrench]}

``{/some/key}`` in the message is replaced by that key's value; list such keys in ``keys`` so
the loader can check something writes them.
"""

from __future__ import annotations

import re
from typing import ClassVar, Literal

import py_trees
from pydantic import Field, model_validator

from orbitree.language.params import NodeParams
from orbitree.language.quantities import BlackboardKey
from orbitree.nodes.leaf import Leaf

_PLACEHOLDER = re.compile(r"\{(/[A-Za-z0-9_/]+)\}")


class LogParams(NodeParams):
    message: str
    level: Literal["debug", "info", "warning", "error"] = "info"
    keys: list[BlackboardKey] = Field(default_factory=list)

    @model_validator(mode="after")
    def _placeholders_declared(self) -> LogParams:
        missing = sorted(set(_PLACEHOLDER.findall(self.message)) - set(self.keys))
        if missing:
            raise ValueError(f"message uses {', '.join(missing)}: list them in 'keys'")
        return self


class LogMessage(Leaf):
    kind = "log"
    Params = LogParams
    shorthand: ClassVar[str | None] = "message"
    params: LogParams

    @classmethod
    def reads(cls, params: LogParams) -> list[str]:
        return list(params.keys)

    def update(self) -> py_trees.common.Status:
        text = _PLACEHOLDER.sub(lambda m: repr(self.read(m.group(1))), self.params.message)
        self.ctx.event("log", level=self.params.level, node=self.name, message=text)
        self.feedback_message = text
        return py_trees.common.Status.SUCCESS
