"""Loading a mission: YAML -> overrides -> validated header -> checked node tree -> writer check.

``load_mission`` either returns a ``Mission`` ready to build, or raises ``MissionError`` with
every problem it found as ``file:line:col: message``. Nothing is built and nothing moves until
the whole mission is known to be good.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orbitree.drivers.calibration_io import CalibrationFileError, load_intrinsics, load_mount
from orbitree.drivers.kinematics_io import load_kinematics
from orbitree.language.bare_numbers import bare_numbers
from orbitree.language.errors import Diagnostic, MissionError
from orbitree.language.fault_spec import FaultSpec, SubstituteSpec, fault_diagnostics
from orbitree.language.keys import FAULTS_ACTIVE, SAFETY_VIOLATIONS, key_dimension
from orbitree.language.orbit_spec import OrbitSpec
from orbitree.language.params import TreeRef
from orbitree.language.parser import NodeSpec, Parser, Scope, pydantic_diagnostics
from orbitree.language.quantities import BlackboardKey, Duration, Frequency, SIValue
from orbitree.language.registry import Registry
from orbitree.language.source import Source, load_file, load_value
from orbitree.language.units import dimension_of
from orbitree.language.world_spec import RobotSpec, SafetySpec, TargetSpec, start_configuration


class RecordSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keys: list[str] = Field(
        ["/*"], description="glob patterns of blackboard keys written to the log when they change"
    )


class ViewSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keys: list[str] = Field(["/*"], description="glob patterns of keys shown by live views")


class MissionModel(BaseModel):
    """The top level of a mission file."""

    model_config = ConfigDict(extra="forbid")

    mission: str = Field(min_length=1, description="mission name, used in logs and summaries")
    description: str = ""
    # upper bounds: a tick costs tens of microseconds at the least, and the run keeps one timing
    # per tick; 10 kHz is 20x the UR e-Series RTDE rate, a week of mission time a long campaign
    rate_hz: Frequency = Field(125.0, gt=0.0, le=10_000.0, description="tick rate of the executive")
    max_duration: Duration = Field(
        600.0, gt=0.0, le=7 * 86_400.0, description="mission time after which the run is halted and fails"
    )
    seed: int = Field(0, description="seed of the run's random generator (--seed overrides)")
    blackboard: dict[BlackboardKey, SIValue] = Field(
        {}, description="initial blackboard values (quantities with units are stored in SI)"
    )
    robots: dict[str, RobotSpec] = Field({}, description="arms, each with its camera and F/T sensor")
    targets: dict[str, TargetSpec] = Field({}, description="targets: a SIROM interface carrying a marker board, "
                                           "or a satellite (kind: satellite)")
    orbit: OrbitSpec | None = Field(None, description="sim: the target's orbit (kepler or tle), the epoch and "
                                    "the servicer's position in the target's LVLH frame")
    phases: list[str] | None = Field(
        None, description="names of the nodes timed as the mission's phases (summary phase_s)"
    )
    safety: SafetySpec = Field(SafetySpec(), description="limits checked after every tick, and the recovery")
    record: RecordSpec = RecordSpec()
    view: ViewSpec = ViewSpec()
    tree: TreeRef
    subtrees: dict[str, TreeRef] = Field({}, description="named subtrees, used as 'subtree: name'")
    faults: list[FaultSpec] = Field([], description="fault schedule: {at | when, kind, for, ...} (see README)")
    substitute: list[SubstituteSpec] = Field(
        [], description="leaves replaced by stubs: {match | kind, status, after}"
    )


@dataclass
class Mission:
    model: MissionModel
    root: NodeSpec
    file: Path
    source: Source
    writers: dict[str, list[str]] = field(default_factory=dict)
    recovery: NodeSpec | None = None  # the tree run after a safety violation (safety.recovery)
    warnings: list[Diagnostic] = field(default_factory=list)  # accepted, but probably not meant

    @property
    def name(self) -> str:
        return self.model.mission

    def nodes(self) -> list[NodeSpec]:
        """Every node of the mission tree, then of the recovery tree."""
        recovery = list(self.recovery.walk()) if self.recovery is not None else []
        return [*self.root.walk(), *recovery]


def apply_override(data: dict[str, Any], source: Source, assignment: str) -> list[Diagnostic]:
    """Apply one ``--set KEY=VALUE`` (VALUE parsed as YAML) to the raw mission data."""
    label = f"--set {assignment}"
    key, sep, text = assignment.partition("=")
    if not sep or not key:
        return [Diagnostic(label, 1, 1, "expected KEY=VALUE, e.g. --set rate_hz=250")]
    try:
        value = load_value(text, label, len(key) + 2)
    except MissionError as exc:
        return exc.diagnostics
    parts: list[str | int] = [int(p) if p.isdigit() else p for p in key.split(".")]
    node: Any = data
    for depth, part in enumerate(parts[:-1]):
        nxt = _child(node, part)
        if nxt is None:
            if isinstance(node, dict) and isinstance(part, str):
                node[part] = nxt = {}
            else:
                where = ".".join(map(str, parts[: depth + 1]))
                return [Diagnostic(label, 1, 1, f"{where}: no such entry in the mission")]
        node = nxt
    last = parts[-1]
    if isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value
    elif isinstance(node, dict):
        node[str(last)] = value
    else:
        return [Diagnostic(label, 1, 1, f"{key}: no such entry in the mission")]
    source.overrides[tuple(parts)] = label
    return []


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, dict):
        return node.get(str(part))
    if isinstance(node, list) and isinstance(part, int) and part < len(node):
        return node[part]
    return None


def load_mission(
    path: str | Path, overrides: list[str] | tuple[str, ...], registry: Registry
) -> Mission:
    """Load, check and return a mission, or raise ``MissionError`` listing every problem."""
    file = Path(path)
    data, source = load_file(file)
    if not isinstance(data, dict):
        raise MissionError(
            [source.at((), f"a mission is a mapping of keys, got {type(data).__name__}")]
        )
    errors: list[Diagnostic] = []
    for assignment in overrides:
        errors.extend(apply_override(data, source, assignment))
    if errors:
        raise MissionError(errors)
    try:
        model = MissionModel.model_validate(data)
    except ValidationError as exc:
        errors.extend(pydantic_diagnostics(exc, source, (), "", model=MissionModel))
        if "tree" not in data or not isinstance(data.get("subtrees", {}), dict):
            raise MissionError(errors) from None
        model = None
    parser = Parser(registry, file)
    scope = Scope(data.get("subtrees") or {}, source, file.resolve())
    root = parser.node(data["tree"], ("tree",), scope, "")
    recovery = None
    safety = data.get("safety")
    if isinstance(safety, dict) and isinstance(safety.get("recovery"), str):
        recovery = parser.node({"subtree": safety["recovery"]}, ("safety", "recovery"), scope, "")
    for name, raw in scope.subtrees.items():  # report mistakes in unused subtrees too
        if (id(scope), name) not in parser.expanded:
            parser.node(raw, ("subtrees", name), scope, "", default_name=name)
    errors.extend(parser.errors)
    if errors or root is None or model is None:
        raise MissionError(errors)
    mission = Mission(model, root, file, source, recovery=recovery)
    top = [source.at(where, f"warning: {message}") for where, message in bare_numbers(MissionModel, data, ())]
    mission.warnings = sorted({*top, *parser.warnings})
    check_references(mission)
    check_space(mission)
    check_conditions(mission)
    check_hardware(mission)
    check_calibration_files(mission)
    check_faults(mission)
    mission.writers = check_writers(mission)
    return mission


def check_references(mission: Mission) -> None:
    """Robots and targets named by leaves must be declared in 'robots:' / 'targets:'."""
    declared = {"robot": mission.model.robots, "target": mission.model.targets}
    errors = []
    for spec in mission.nodes():
        for field_name, names in declared.items():
            wanted = getattr(spec.params, field_name, None)
            if isinstance(wanted, str) and wanted not in names:
                known = ", ".join(names) or "none"
                errors.append(
                    spec.source.at(
                        (*spec.path, spec.kind, field_name),
                        f"{spec.node_path}: {field_name} {wanted!r} is not declared in "
                        f"'{field_name}s:' (declared: {known})",
                    )
                )
    names = {spec.name for spec in mission.root.walk()}
    for i, phase in enumerate(mission.model.phases or ()):
        if phase not in names:
            errors.append(mission.source.at(("phases", i), f"phases: no node is named {phase!r}"))
    targets = mission.model.targets
    for name, robot in mission.model.robots.items():
        if robot.start is None:
            continue
        where = ("robots", name, "start", "target")
        if robot.start.target not in targets:
            known = ", ".join(targets) or "none"
            errors.append(mission.source.at(
                where, f"robots.{name}.start: target {robot.start.target!r} is not declared in "
                f"'targets:' (declared: {known})"))
            continue
        try:
            start_configuration(robot, targets)
        except ValueError as error:
            errors.append(mission.source.at(("robots", name, "start", "offset"), f"robots.{name}.start: {error}"))
    if errors:
        raise MissionError(errors)


def check_space(mission: Mission) -> None:
    """The orbit names a declared target; a satellite's state sensor and the orbit drive simulated
    worlds only."""
    model, errors = mission.model, []
    if model.orbit is not None and model.orbit.target not in model.targets:
        known = ", ".join(model.targets) or "none"
        errors.append(mission.source.at(("orbit", "target"), f"orbit.target {model.orbit.target!r} is not "
                                        f"declared in 'targets:' (declared: {known})"))
    hardware = any(spec.driver != "sim" for spec in model.robots.values())
    for name, robot in model.robots.items():
        if robot.start_tcp is not None and robot.start is None:
            try:
                start_configuration(robot, model.targets)
            except ValueError as error:
                errors.append(mission.source.at(("robots", name, "start_tcp"), f"robots.{name}: {error}"))
    for name, target in model.targets.items():
        if hardware and target.kind == "satellite":
            errors.append(mission.source.at(("targets", name, "kind"), f"targets.{name}: a satellite target is "
                                            "simulated; a mission with a hardware arm has no simulated world"))
    if errors:
        raise MissionError(errors)


def check_conditions(mission: Mission) -> None:
    """A condition's threshold written with a unit must measure what its key holds
    (``at_most: 30 mm`` against a force was a silent FAILURE at run time)."""
    errors: list[Diagnostic] = []
    for spec in mission.nodes():
        if spec.kind == "condition":
            params, written, where = spec.params, spec.written, (*spec.path, spec.kind)
        elif spec.kind == "guard":
            params, where = spec.params.condition, (*spec.path, spec.kind, "condition")
            written = spec.written.get("condition") if isinstance(spec.written.get("condition"), dict) else {}
        else:
            continue
        wanted = key_dimension(params.key)
        if wanted is None:
            continue
        for test in ("equals", "not_equals", "below", "at_most", "above", "at_least"):
            got = dimension_of(written.get(test))
            if got is None or got == wanted:
                continue
            expected = _a(wanted) if wanted else "a plain number (no unit)"
            errors.append(spec.source.at((*where, test), f"{spec.node_path}: {test}: {written[test]!r} is "
                                         f"{_a(got)}, but {params.key} holds {expected}"))
    if errors:
        raise MissionError(errors)


def _a(dimension: str) -> str:
    words = dimension.replace("_", " ")
    return ("an " if words[0] in "aeiou" else "a ") + words


def check_hardware(mission: Mission) -> None:
    """What a real arm's drivers need, checked before anything connects: a mission is all
    simulated or all hardware; a hardware arm's camera is a real one with a calibration file that
    reads; no hardware latch driver exists, so a hardware arm has no ``latch:``."""
    robots = mission.model.robots
    errors: list[Diagnostic] = []
    drivers = {spec.driver for spec in robots.values()}
    if "ur" in drivers and len(drivers) > 1:
        name = next(n for n, spec in robots.items() if spec.driver == "ur")
        errors.append(mission.source.at(("robots", name, "driver"), f"robots.{name}: a mission drives either "
                                        "simulated robots or hardware, not both"))
    for name, spec in robots.items():
        if spec.driver == "ur-emulated" and spec.camera is not None and spec.camera.driver != "sim":
            errors.append(mission.source.at(("robots", name, "camera"), f"robots.{name}.camera: an "
                                            "'ur-emulated' arm moves in the simulated world; its camera is "
                                            "a simulated one (driver: sim)"))
        if spec.driver != "ur":
            continue
        where = ("robots", name)
        if spec.latch is not None:
            errors.append(mission.source.at((*where, "latch"), f"robots.{name}.latch: there is no hardware "
                                            "latch driver; remove 'latch:' to run on a UR arm (the capture "
                                            "and latch leaves need a simulated arm)"))
        camera = spec.camera
        if camera is None:
            continue
        if camera.driver != "cv":
            errors.append(mission.source.at((*where, "camera"), f"robots.{name}.camera: a 'ur' arm needs a real "
                                            "camera: camera: {driver: cv, device: 0, calibration: camera.yaml}"))
            continue
        try:
            load_intrinsics(calibration_path(mission.file.parent, camera.calibration or ""))
        except CalibrationFileError as error:
            errors.append(mission.source.at((*where, "camera", "calibration"), f"robots.{name}.camera: {error}"))
    if errors:
        raise MissionError(errors)


def check_calibration_files(mission: Mission) -> None:
    """Calibration files a mission names read and hold what they must, before anything is built:
    a simulated camera's ``calibration`` (a hardware one's is checked with the hardware), a
    ``mount`` given as a file (its ``cam2tcp``: 4x4, a rotation), an arm's ``kinematics``."""
    errors: list[Diagnostic] = []
    folder = mission.file.parent
    for name, spec in mission.model.robots.items():
        checks = []
        camera = spec.camera
        if camera is not None and camera.calibration and spec.driver == "sim":
            checks.append((("camera", "calibration"), camera.calibration, load_intrinsics))
        if camera is not None and isinstance(camera.mount, str):
            checks.append((("camera", "mount"), camera.mount, load_mount))
        if spec.kinematics:
            checks.append((("kinematics",), spec.kinematics, load_kinematics))
        for where, file, load in checks:
            try:
                load(calibration_path(folder, file))
            except CalibrationFileError as error:
                label = ".".join(("robots", name, *where))
                errors.append(mission.source.at(("robots", name, *where), f"{label}: {error}"))
    if errors:
        raise MissionError(errors)


def calibration_path(mission_dir: Path, calibration: str) -> Path:
    """A camera calibration file named in a mission: relative paths start at the mission's folder."""
    path = Path(calibration).expanduser()
    return path if path.is_absolute() else mission_dir / path


def check_faults(mission: Mission) -> None:
    """'faults:' and 'substitute:' must name nodes, robots and targets the mission has."""
    errors = fault_diagnostics(mission.model, mission.root, mission.source)
    if errors:
        raise MissionError(errors)


def check_writers(mission: Mission) -> dict[str, list[str]]:
    """Every key a node reads must be written by a driver, a leaf or an initial value."""
    writers: dict[str, list[str]] = {
        key: ["initial blackboard"] for key in mission.model.blackboard
    }
    for name, robot in mission.model.robots.items():
        for key in robot.keys(name):
            writers.setdefault(key, []).append(f"robot {name}")
    if mission.model.robots:
        writers.setdefault(SAFETY_VIOLATIONS, []).append("safety monitor")
    for key, writer in space_keys(mission.model).items():
        writers.setdefault(key, []).append(writer)
    writers.setdefault(FAULTS_ACTIVE, []).append("fault injector")
    readers: list[tuple[NodeSpec, str]] = []
    for spec in mission.nodes():
        for key in _node_writes(spec):
            writers.setdefault(key, []).append(spec.name)
        readers.extend((spec, key) for key in _node_reads(spec))
    errors = [
        spec.source.at(
            (*spec.path, spec.kind),
            f"{spec.node_path}: reads {key}, which nothing writes (no driver, leaf or initial "
            f"'blackboard:' value provides it)",
            key=True,
        )
        for spec, key in readers
        if key not in writers
    ]
    if errors:
        raise MissionError(errors)
    return writers


def _node_reads(spec: NodeSpec) -> list[str]:
    if spec.leaf is not None:
        return spec.leaf.reads(spec.params)
    if spec.kind == "guard":
        return [spec.params.condition.key]
    return []


def _node_writes(spec: NodeSpec) -> list[str]:
    return spec.leaf.writes(spec.params) if spec.leaf is not None else []


def space_keys(model: MissionModel) -> dict[str, str]:
    """Keys the simulated world writes for satellite targets and the orbit, and their writer."""
    from orbitree.language.keys import (
        ORBIT_BODY_STATE,
        ORBIT_TIME_UTC,
        SATELLITE_STATE,
        SERVICER,
        orbit_key,
        orbit_relative_key,
        target_key,
    )

    out: dict[str, str] = {}
    satellites = [name for name, t in model.targets.items() if t.kind == "satellite"]
    for name in satellites:
        out.update({target_key(name, k): "satellite world" for k in SATELLITE_STATE})
        if model.targets[name].state_sensor is not None:
            out[target_key(name, "state")] = f"state sensor {name}"
    orbit = model.orbit
    if orbit is not None:
        out[ORBIT_TIME_UTC] = "orbit"
        for body in (orbit.target, SERVICER):
            out.update({orbit_key(body, k): "orbit" for k in ORBIT_BODY_STATE})
        for part in ("", "range", "range_rate"):
            out[orbit_relative_key(orbit.target, part)] = "orbit"
        out.update({target_key(name, "gg_torque"): "orbit" for name in satellites})
    return out
