"""Fault injection: a mission's ``faults:`` schedule and node substitution, as data (played by
:mod:`orbitree.faults.injector`).

A fault is declared in the mission (or with ``--set faults=[...]``)::

    faults:
      - {at: 12 s, kind: camera_dropout, for: 2 s}
      - {when: final approach RUNNING, kind: ft_bias, force: [0, 0, 8 N], for: 3 s}
      - {at: 5 s, kind: marker_occlusion, markers: [1], robot: arm}

Every fault has exactly one of ``at`` (mission time) or ``when`` (``"<node> <STATUS>"``: the
first time a node of that name, or else of that kind, changes to RUNNING, SUCCESS, FAILURE or
INVALID), optionally ``for`` (a duration; without it the fault lasts to the end of the run, and
the instantaneous kinds ``ft_spike`` and ``target_bumped`` take none), ``robot`` (faults of an
arm; default: the mission's only robot) or ``target`` (default: the only target), and the
parameters of its kind:

=================== ========================== ==============================================
kind                parameters                 effect (wrapper in ``orbitree.drivers.faulty``)
=================== ========================== ==============================================
camera_dropout      —                          ``camera.read()`` returns None: no frames
marker_occlusion    ``markers``: ids           those markers are painted over in every frame
                                               (found with the estimator's ArUco detector,
                                               filled with the surrounding grey level)
pose_noise          ``sigma_px``               Gaussian noise, sigma_px per coordinate, on the
                                               refined marker corners before PnP (frames carry
                                               it in ``meta``; ``perceive`` applies it)
camera_latency      ``delay``                  each frame is delivered ``delay`` after it was
                                               taken, with its own (old) stamp
ft_bias             ``force`` [N], ``torque``  the vectors are added to every wrench reading
                    [N·m] (TCP frame)
ft_spike            ``magnitude`` [N],         one reading gets a force of that magnitude
                    ``axis`` (optional)        along ``axis`` (TCP frame; default a random
                                               direction drawn from the run's seed)
ft_dropout          —                          the sensor stops delivering: the last wrench
                                               and its ``wrench_stamp`` repeat, so the
                                               blackboard key ``/robot/<arm>/wrench`` is not
                                               rewritten and goes stale
protective_stop     —                          a SimRobot enters a protective stop; another
                                               arm reports one and ignores motion commands;
                                               with ``for``, unlocked when it ends
robot_disconnect    —                          the arm is stopped (the RTDE watchdog), then
                                               every call raises ``DriverDisconnected``
                                               (the executive skips its readings; a leaf's
                                               command is lost and logged); calls work again
                                               when ``for`` ends (reconnection)
command_latency     ``delay``                  each command (stop included) reaches the arm
                                               ``delay`` after it was sent
tick_overrun        ``node``, ``delay``        ticking that node takes ``delay`` longer: on
                                               the wall clock it sleeps; on the simulated
                                               clock the world advances by ``delay`` while the
                                               tree does not command (once; with ``for``, at
                                               every tick of the node while active)
target_bumped       ``offset`` (pose),         the target is pushed by ``offset``, in its own
                    ``speed`` (0.1 m/s),       frame, moving at ``speed`` / ``angular_speed``
                    ``angular_speed``          with at most ``force``: a tool in its way holds
                    (20 deg/s), ``force``      it back and it stops short (when the push
                    (50 N)                     would have ended it rests where it got to);
                                               simulation only (on hardware a
                                               ``fault_not_injected`` event)
latch_failure       —                          ``close()`` does not reach the hooks; the latch
                                               reports CLOSING for its travel time, then FAULT
state_sensor_dropout ``target`` (default: the   a satellite's state sensor delivers no message:
                    only satellite with a      ``/target/<name>/state`` keeps its last message
                    ``state_sensor``)          (with its old stamp) and goes stale
=================== ========================== ==============================================

Timing. A fault with ``at`` starts at the first tick at or after that time, before the drivers
are read; a fault with ``when`` starts at the tick after the one in which the status changed.
``for`` ends it at the first tick at or after start + for. Each start and end is a ``fault``
event in the mission log (``fault`` = kind, ``phase`` = start or end, ``id`` = index in the
schedule, and the parameters, in SI) and each injected fault is one entry of the summary's
``faults``: ``{id, kind, start, end, trigger, params}``. Faults still active at the end of the
run end then. The blackboard key ``/faults/active`` holds the entries of the faults active now
(rewritten in the tick the set changes; instantaneous kinds are never in it), for conditions
and views.

Node substitution (``substitute:``) replaces leaves, chosen by a glob on their name (``match:
"pbvs*"``) or by kind (``kind: approach``), with a stub that stays RUNNING for ``after`` of
mission time and then returns ``status``: a tree can be run without its skills. Substitution
happens when the executive builds the tree, after the mission was checked as written (so the
writer check still sees the real leaves); stubs read and write no blackboard key, so a leaf that
reads what a stubbed leaf wrote finds nothing there. Each substituted node is a ``substituted``
event of the first tick.

This module holds the validation of a ``faults:`` entry by its kind (``FaultSpec``), the
``substitute:`` model and the checks of both against the mission; the models of the kinds are in
:mod:`orbitree.language.fault_kinds` (re-exported here).
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from orbitree.language.errors import Diagnostic
from orbitree.language.fault_kinds import (
    CAMERA_KINDS,
    FAULT_KINDS,
    FAULT_MODELS,
    FT_KINDS,
    STATUSES,
    CameraDropoutFault,
    CameraLatencyFault,
    CommandLatencyFault,
    FaultBase,
    FtBiasFault,
    FtDropoutFault,
    FtSpikeFault,
    LatchFailureFault,
    MarkerOcclusionFault,
    PoseNoiseFault,
    ProtectiveStopFault,
    RobotDisconnectFault,
    RobotFault,
    StateSensorDropoutFault,
    TargetBumpedFault,
    TickOverrunFault,
)
from orbitree.language.parser import NodeSpec
from orbitree.language.quantities import Duration

_EPS = 1e-9

__all__ = [
    "CAMERA_KINDS",
    "FAULT_KINDS",
    "FAULT_MODELS",
    "FT_KINDS",
    "STATUSES",
    "CameraDropoutFault",
    "CameraLatencyFault",
    "CommandLatencyFault",
    "FaultBase",
    "FaultSpec",
    "FtBiasFault",
    "FtDropoutFault",
    "FtSpikeFault",
    "LatchFailureFault",
    "MarkerOcclusionFault",
    "PoseNoiseFault",
    "ProtectiveStopFault",
    "RobotDisconnectFault",
    "RobotFault",
    "StateSensorDropoutFault",
    "SubstituteSpec",
    "TargetBumpedFault",
    "TickOverrunFault",
    "fault_diagnostics",
    "find_nodes",
    "resolve_name",
    "sensed_targets",
]


# --------------------------------------------------------------------------------------------
# the schedule as written (each kind's model: orbitree/language/fault_kinds.py)


def _one_fault(value: Any, handler: Callable[[Any], Any]) -> Any:
    """Validate one fault by its ``kind`` (errors located at the fault's own keys)."""
    if isinstance(value, FaultBase):
        return value
    known = ", ".join(FAULT_KINDS)
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "fault_type", "a fault is a mapping such as {at: 2 s, kind: camera_dropout, for: 1 s}"
        )
    kind = value.get("kind")
    if kind is None:
        raise PydanticCustomError("fault_kind", "missing 'kind' (one of: {known})", {"known": known})
    model = FAULT_KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        close = difflib.get_close_matches(str(kind), list(FAULT_KINDS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        error = PydanticCustomError(
            "fault_kind", "unknown fault kind {kind}; {hint}known kinds: {known}",
            {"kind": repr(kind), "hint": hint, "known": known},
        )
        raise ValidationError.from_exception_data(
            "fault", [InitErrorDetails(type=error, loc=("kind",), input=kind)]
        )
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ValidationError.from_exception_data(
            exc.title, [_located(err, kind, model, value) for err in exc.errors()]
        ) from None


def _located(err: Any, kind: str, model: type[FaultBase], value: dict) -> InitErrorDetails:
    """One error of a fault's parameters, said in terms of that fault kind.

    A missing parameter is reported at the fault itself (pydantic would place it nowhere) and
    an unknown one at its key, with the parameters the kind has.
    """
    loc = err["loc"]
    if err["type"] == "missing" and len(loc) == 1:
        message = f"{kind} needs {loc[0]!r}"
        return InitErrorDetails(type=PydanticCustomError("fault_missing", message), loc=(), input=value)
    if err["type"] == "extra_forbidden" and len(loc) == 1:
        known = [info.alias or name for name, info in model.model_fields.items() if name != "kind"]
        close = difflib.get_close_matches(str(loc[0]), known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        message = f"unknown key {loc[0]!r} for {kind}; {hint}expected one of: {', '.join(known)}"
        error = PydanticCustomError("fault_unknown_key", message)
        return InitErrorDetails(type=error, loc=(*loc, "[key]"), input=loc[0])
    return InitErrorDetails(type=PydanticCustomError(err["type"], err["msg"]), loc=loc, input=err["input"])


FaultSpec = Annotated[
    CameraDropoutFault
    | MarkerOcclusionFault
    | PoseNoiseFault
    | CameraLatencyFault
    | FtBiasFault
    | FtSpikeFault
    | FtDropoutFault
    | ProtectiveStopFault
    | RobotDisconnectFault
    | CommandLatencyFault
    | TickOverrunFault
    | TargetBumpedFault
    | LatchFailureFault
    | StateSensorDropoutFault,
    Field(discriminator="kind"),
    WrapValidator(_one_fault),
]
"""One entry of a mission's ``faults:``, validated by its ``kind``."""


class SubstituteSpec(BaseModel):
    """Replace leaves by a stub: ``{match: "pbvs*", status: SUCCESS, after: 1 s}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    match: str | None = Field(None, description="glob pattern on leaf names, e.g. 'pbvs*'")
    kind: str | None = Field(None, description="leaf kind to replace, e.g. 'approach'")
    status: Literal["SUCCESS", "FAILURE", "RUNNING"] = Field(
        "SUCCESS", description="what the stub returns after 'after'"
    )
    after: Duration = Field(0.0, ge=0.0, description="mission time the stub stays RUNNING first")

    @field_validator("status", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_selector(self) -> SubstituteSpec:
        if (self.match is None) == (self.kind is None):
            raise ValueError("give exactly one of 'match' (a glob on leaf names) or 'kind' (a leaf kind)")
        return self

    def matches(self, spec: NodeSpec) -> bool:
        if spec.leaf is None:
            return False
        if self.match is not None:
            return fnmatch.fnmatchcase(spec.name, self.match)
        return spec.kind == self.kind


# --------------------------------------------------------------------------------------------
# checks against the mission (called by the loader)


def find_nodes(specs: Sequence[NodeSpec], name: str) -> list[int]:
    """Ids (positions in ``specs``) of the nodes named ``name``, or else of kind ``name``."""
    named = [i for i, spec in enumerate(specs) if spec.name == name]
    return named or [i for i, spec in enumerate(specs) if spec.kind == name]


def resolve_name(wanted: str | None, declared: Sequence[str], what: str) -> tuple[str | None, str | None]:
    """(name, problem) of the robot or target a fault refers to."""
    if wanted is not None:
        if wanted in declared:
            return wanted, None
        return None, f"{what} {wanted!r} is not declared in '{what}s:' (declared: {', '.join(declared) or 'none'})"
    if len(declared) == 1:
        return declared[0], None
    if not declared:
        return None, f"needs a {what}, and the mission declares no '{what}s:'"
    return None, f"name the {what} ('{what}: ...'): the mission has several ({', '.join(declared)})"


def sensed_targets(targets: dict[str, Any]) -> list[str]:
    """Names of the targets with a ``state_sensor`` (what a state_sensor_dropout can act on)."""
    return [name for name, spec in targets.items() if getattr(spec, "state_sensor", None) is not None]


def fault_diagnostics(model: Any, root: NodeSpec, source: Any) -> list[Diagnostic]:
    """Problems of ``faults:`` and ``substitute:`` that need the whole mission to see.

    ``model`` is the validated mission model (its ``faults``, ``substitute``, ``robots`` and
    ``targets``), ``root`` the mission tree and ``source`` the mission file's positions.
    """
    nodes = list(root.walk())
    names = list(dict.fromkeys(spec.name for spec in nodes))
    errors: list[Diagnostic] = []

    def node_problem(name: str) -> str | None:
        if find_nodes(nodes, name):
            return None
        close = difflib.get_close_matches(name, names + [s.kind for s in nodes], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        shown = ", ".join(repr(n) for n in names[:12]) + (", ..." if len(names) > 12 else "")
        return f"no node named (or of kind) {name!r} in the tree; {hint}nodes: {shown}"

    for i, fault in enumerate(model.faults):
        where = f"faults[{i}] ({fault.kind})"
        if fault.when_node is not None and (problem := node_problem(fault.when_node)):
            errors.append(source.at(("faults", i, "when"), f"{where}: when: {problem}"))
        if isinstance(fault, TickOverrunFault) and (problem := node_problem(fault.node)):
            errors.append(source.at(("faults", i, "node"), f"{where}: node: {problem}"))
        if isinstance(fault, TargetBumpedFault):
            _, problem = resolve_name(fault.target, list(model.targets), "target")
            if problem:
                errors.append(source.at(("faults", i, "target"), f"{where}: {problem}"))
        if isinstance(fault, StateSensorDropoutFault):
            _, problem = resolve_name(fault.target, sensed_targets(model.targets), "target")
            if problem:
                problem = problem.replace("'targets:'", "'targets:' with a state_sensor")
                errors.append(source.at(("faults", i, "target") if fault.target else ("faults", i),
                                        f"{where}: {problem}"))
        if not isinstance(fault, RobotFault):
            continue
        robot, problem = resolve_name(fault.robot, list(model.robots), "robot")
        if problem or robot is None:
            errors.append(source.at(("faults", i, "robot"), f"{where}: {problem}"))
            continue
        spec = model.robots[robot]
        lacking = (
            "camera" if fault.kind in CAMERA_KINDS and spec.camera is None
            else "force/torque sensor (ft: false)" if fault.kind in FT_KINDS and not spec.ft
            else "latch" if fault.kind == "latch_failure" and spec.latch is None
            else None
        )
        if lacking:
            errors.append(source.at(("faults", i), f"{where}: robot {robot!r} has no {lacking}"))
    leaves = [spec for spec in nodes if spec.leaf is not None]  # the mission tree, not the recovery
    for i, sub in enumerate(model.substitute):
        if not any(sub.matches(spec) for spec in leaves):
            key = "match" if sub.match is not None else "kind"
            shown = ", ".join(dict.fromkeys(repr(s.name if key == "match" else s.kind) for s in leaves))
            errors.append(source.at(
                ("substitute", i, key),
                f"substitute[{i}]: {key} {getattr(sub, key)!r} matches no leaf (leaves: {shown})",
            ))
    return errors
