"""The JSON Schema (`orbitree schema`, what editors check missions with) and the loader accept and
reject the same node parameters. Cases are generated from the parameter models: for every node
kind, a valid body, then every field (and every field of a nested parameter model) set in turn to
each value of a pool of typical mistakes and near misses, and an unknown key added.

Not compared, because the loader checks them after the parameters and a schema cannot say them:
``children``/``child`` (each child is a node, checked as a node), cross-field rules (a condition
needs a test; ``repeat.count`` may not be 0; a parallel's ``selected`` must name children) and
bounds other than the sign of a quantity written with a unit.
"""

from __future__ import annotations

import copy
import typing
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from orbitree.behaviours.catalogue import default_registry, mission_schema
from orbitree.language.bare_numbers import lax_scalars
from orbitree.language.params import CONTROL_PARAMS

SAMPLES: dict[str, Any] = {  # a valid value for each required field, by name
    "robot": "arm", "target": "sirom", "key": "/a/b", "value": 1, "message": "hi", "action": "open",
    "ref": "s", "file": "f.yaml", "duration": "1 s", "hz": "10 Hz", "attempts": 2, "count": 2,
    "condition": {"key": "/a", "exists": True}, "force": "25 N", "torque": "3 Nm",
    "sweep": {"center": [-0.65, 0.0], "size": [0.5, 0.8], "height": "0.55 m", "spacing": "0.3 m"},
    "children": [{"wait": "1 s"}], "child": {"wait": "1 s"},
    "robots": ["left", "right"], "fixture": "pad_left", "fixtures": ["pad_left", "pad_right"],
    "dock": {"xyz": [0, 0, 0.4], "rpy": [0, 0, 90]},
    "dir": "views", "output": "out.yaml", "look_at": [-0.7, -0.1, 0.0], "joint": 2, "swept": "80 deg",
}
POOL: list[Any] = [
    True, 0, -1, 2, 1.5, -0.5, 1e6, "x", "3 s", "5 mm", "-2 mm", "0 N", "0.0 s", "20 deg/s", "10 Hz",
    "1 rpm", "3", [], [1, 2, 3], [0.1, 0.2], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], {}, {"a": 1}, None, "open",
    "sirom", "/a/b",
]
NOT_COMPARED = {"children", "child"}
CROSS_FIELD = {("repeat", "count", 0)}  # the model refuses 0 ('forever' is -1); the schema's range allows it


def _kinds() -> dict[str, type[BaseModel]]:
    kinds = dict(CONTROL_PARAMS)
    kinds.update({kind: leaf.Params for kind, leaf in default_registry().leaves.items()})
    return kinds


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in typing.get_args(annotation) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _base(model: type[BaseModel]) -> dict[str, Any]:
    body: dict[str, Any] = {"exists": True} if "exists" in model.model_fields else {}  # a condition's test
    for name, field in model.model_fields.items():
        if field.is_required():
            body[field.alias or name] = copy.deepcopy(SAMPLES[name])
    return body


def _cases(kind: str, model: type[BaseModel]):
    base = _base(model)
    yield "valid", base
    yield "unknown key", {**base, "no_such_parameter": 1}
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key in NOT_COMPARED:
            continue
        for value in POOL:
            if not any((kind, key) == (k, f) and value == v for k, f, v in CROSS_FIELD):
                yield f"{key}={value!r}", {**base, key: value}
        nested = _model_of(field.annotation)
        if nested is None:
            continue
        inner_base = base.get(key) if isinstance(base.get(key), dict) else _base(nested)
        for inner, inner_field in nested.model_fields.items():
            inner_key = inner_field.alias or inner
            for value in POOL:
                yield f"{key}.{inner_key}={value!r}", {**base, key: {**inner_base, inner_key: value}}


@pytest.fixture(scope="module")
def validators() -> dict[str, jsonschema.protocols.Validator]:
    schema = mission_schema()
    return {kind: jsonschema.Draft202012Validator({"$ref": f"#/$defs/{kind}_node", "$defs": schema["$defs"]})
            for kind in _kinds()}


@pytest.mark.parametrize("kind", sorted(_kinds()))
def test_schema_and_loader_accept_and_reject_the_same_parameters(kind, validators):
    model = _kinds()[kind]
    disagreements = []
    count = 0
    for case, body in _cases(kind, model):
        count += 1
        by_schema = validators[kind].is_valid(body)
        try:  # as the loader's parser checks a node's parameters
            by_loader = not list(lax_scalars(model, body, ())) and bool(model.model_validate(body))
        except ValidationError:
            by_loader = False
        if by_schema != by_loader:
            disagreements.append(f"{case}: schema {'accepts' if by_schema else 'rejects'}, "
                                 f"loader {'accepts' if by_loader else 'rejects'}")
    assert count > len(model.model_fields)  # the cases were generated
    assert disagreements == [], f"{kind}: " + "; ".join(disagreements[:12])
