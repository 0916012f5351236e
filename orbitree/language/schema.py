"""The JSON Schema of mission files, generated from the parameter models of every node kind.

Editors that speak the YAML language server complete and check missions with it::

    # yaml-language-server: $schema=./orbitree-mission.schema.json
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel

from orbitree.language.loader import MissionModel
from orbitree.language.params import CONTROL_DOCS, CONTROL_PARAMS, SHORTHAND, TREE_NODE_MARKER
from orbitree.language.registry import Registry

REF = "#/$defs/{model}"


def _merge(defs: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(ref_template=REF)
    for name, body in schema.pop("$defs", {}).items():
        if name in defs and defs[name] != body:
            raise ValueError(f"two different models are both named {name!r} in the schema")
        defs[name] = body
    return schema


def mission_schema(registry: Registry) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    kinds: dict[str, type[BaseModel]] = dict(CONTROL_PARAMS)
    kinds.update({kind: cls.Params for kind, cls in registry.leaves.items()})
    alternatives = []
    for kind, params in kinds.items():
        def_name = f"{kind}_node"
        body = _merge(defs, params)
        defs[def_name] = body
        options: list[dict[str, Any]] = [{"$ref": REF.format(model=def_name)}]
        short = SHORTHAND.get(kind) or getattr(registry.leaves.get(kind), "shorthand", None)
        if short:
            options.append(body["properties"][short])
        if not body.get("required"):
            options.append({"type": "null"})
        leaf = registry.leaves.get(kind)
        description = CONTROL_DOCS.get(kind) or _first_line(sys.modules[leaf.__module__].__doc__)
        alternatives.append(
            {
                "type": "object",
                "properties": {kind: {"anyOf": options, "description": description}},
                "required": [kind],
                "additionalProperties": False,
            }
        )
    defs["TreeNode"] = {"description": "a node: one key naming its kind", "oneOf": alternatives}
    top = _merge(defs, MissionModel)
    top["$defs"] = defs
    top = _link_tree_nodes(top)
    top["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    top["title"] = "orbitree mission"
    return top


def _link_tree_nodes(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(TREE_NODE_MARKER):
            return {"$ref": REF.format(model="TreeNode")}
        return {k: _link_tree_nodes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_link_tree_nodes(v) for v in value]
    return value


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n")[0].replace("``", "'")
