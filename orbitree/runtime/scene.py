"""What the web view's 3-D scene draws, written into the mission log so a replay shows the same.

Static (once, the header's ``scene``): every robot's kinematics (DH table), base pose, tool
(``tcp2flange`` and the parts drawn on it), camera (mount, image size, intrinsics) and wrist
sensor; every body of the world (targets, their tables) as a pose and a list of simple parts.
Dynamic (a tick record's ``scene``, at most ``SCENE_HZ`` times a second of mission time, and only
what changed): joint angles, true body poses (simulation), estimated target poses, the contact
force at each tool, the hooks' state and, for orbit missions, each target's position in the
servicer's LVLH frame.

A part is one of (lengths in m, poses ``[x, y, z, qx, qy, qz, qw]`` in the body's frame)::

    {"shape": "box", "size": [sx, sy, sz], "pose": P, "color": "#rrggbb"}
    {"shape": "cylinder", "radius": r, "z": [z0, z1], "pose": P, "color": ...}   # along local z
    {"shape": "prism", "outline": [[x, y], ...], "z": [z0, z1], "pose": P, "color": ...}
    {"shape": "sphere", "radius": r, "pose": P, "color": ...}
    {"shape": "polygon", "points": [[x, y, z], ...], "color": ...}               # flat, filled
    {"shape": "axes", "size": s, "pose": P}

A body is ``{"name", "kind", "pose", "parts"}`` (``kind``: ``target``, ``fixture``, ...); a new
kind of target (a satellite with pads, spinning) needs a new ``parts`` list here, not new code in
the page, and its motion is its pose in the ticks' ``scene.body``.

A tick record's ``scene`` (every field optional, each a map by robot or body name)::

    {"q": {"arm": [6 rad]}, "body": {"sirom": P}, "est": {"sirom": P}, "f": {"arm": [fx, fy, fz]},
     "latch": {"arm": "CLOSED"}, "rel": {"sirom": [x, y, z]}}

``body`` and ``est`` are world-frame poses (``est``: the perception's ``pose_base`` through the
observing arm's base), ``f`` the wrist sensor's force in the world frame (N), ``rel`` the
``/orbit/relative/<target>`` keys (m, LVLH: x radial, y along-track, z orbit normal).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import py_trees
from scipy.spatial.transform import Rotation

from orbitree.language.keys import ORBIT_RELATIVE_GLOB, robot_key, target_key
from orbitree.skills import kinematics as kin

SCENE_HZ = 25.0
"""Scene samples per second of mission time (the web view updates 20 times a second)."""
Q_STEP = 1e-5  # rad: joints that moved less are not logged again (12 µm at the UR10e's reach)
POSE_STEP = 1e-5  # m and rad: bodies that moved less are not logged again
FORCE_STEP = 0.1  # N

TABLE_COLOR, PASSIVE_COLOR, ACTIVE_COLOR, MARKER_COLOR = "#c9c2b4", "#9aa4b1", "#d8a23a", "#15171c"
STEM_COLOR, CAMERA_COLOR = "#5f6b7a", "#2b3340"
SATELLITE_COLOR, PAD_COLOR = "#c8a951", "#3d6fb0"  # gold foil, the Velcro pads


def pose7(matrix: np.ndarray) -> list[float]:
    """(4, 4) pose as ``[x, y, z, qx, qy, qz, qw]``, rounded to 0.1 mm and 1e-6."""
    m = np.asarray(matrix, dtype=float)
    quat = Rotation.from_matrix(m[:3, :3]).as_quat()
    if quat[3] < 0:
        quat = -quat
    return [*(round(float(v), 5) for v in m[:3, 3]), *(round(float(v), 6) for v in quat)]


def _ring(radius: float, count: int, first_deg: float) -> list[list[float]]:
    angles = np.radians(first_deg + np.arange(count) * 360.0 / count)
    return [[round(radius * math.cos(a), 6), round(radius * math.sin(a), 6)] for a in angles]


IDENTITY = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def _at(x: float = 0.0, y: float = 0.0, z: float = 0.0, yaw_deg: float = 0.0) -> list[float]:
    quat = Rotation.from_euler("z", yaw_deg, degrees=True).as_quat()
    return [x, y, z, *(round(float(v), 6) for v in quat)]


# ------------------------------------------------------------------------------ geometry
def sirom_passive_parts(board: Any | None = None) -> list[dict[str, Any]]:
    """The passive SIROM in its board frame (``orbitree.skills.contact_geometry``: a 12-gon prism
    54 mm across its apothem, 25 mm deep behind the face), with its marker board printed on it."""
    circumradius = 0.054 / math.cos(math.radians(15.0))
    parts: list[dict[str, Any]] = [
        {"shape": "prism", "outline": _ring(circumradius, 12, 15.0), "z": [-0.025, 0.0], "pose": IDENTITY,
         "color": PASSIVE_COLOR},
        {"shape": "cylinder", "radius": 0.04, "z": [-0.05, -0.025], "pose": IDENTITY, "color": STEM_COLOR},
    ]
    if board is not None:
        for corners in np.asarray(board.corners):
            points = [[round(float(c[0]), 5), round(float(c[1]), 5), 0.0005] for c in corners]
            parts.append({"shape": "polygon", "points": points, "color": MARKER_COLOR})
    return parts


def sirom_active_parts() -> list[dict[str, Any]]:
    """The active SIROM in the TCP frame: a 12-gon of circumradius 60 mm, 30 mm behind the face,
    and its three guide petals 12 mm proud at 0, 120 and 240 degrees."""
    parts: list[dict[str, Any]] = [
        {"shape": "prism", "outline": _ring(0.06, 12, 15.0), "z": [-0.03, 0.0], "pose": IDENTITY,
         "color": ACTIVE_COLOR},
    ]
    for angle in (0.0, 120.0, 240.0):
        a = math.radians(angle)
        parts.append({"shape": "box", "size": [0.003, 0.02, 0.012],
                      "pose": _at(0.056 * math.cos(a), 0.056 * math.sin(a), 0.006, angle), "color": ACTIVE_COLOR})
    return parts


def satellite_parts(mass: float, inertia: np.ndarray, fixtures: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A satellite in its body frame: the box of uniform density with its mass and principal
    moments (sides ``sqrt(6 (I_j + I_k - I_i) / m)``, turned to the principal axes), its body axes
    (so its spin shows) and each fixture as a thin disc on the pad's frame (z: the pad's normal).
    The spec gives no shape, so the box is the honest picture of what the dynamics know."""
    moments, axes = np.linalg.eigh(np.asarray(inertia, dtype=float))
    if np.linalg.det(axes) < 0:
        axes[:, 0] = -axes[:, 0]
    total = float(np.sum(moments))
    sides = [math.sqrt(max(6.0 * (total - 2.0 * float(m)) / mass, 1e-6)) for m in moments]
    frame = pose7(np.block([[axes, np.zeros((3, 1))], [np.zeros((1, 3)), np.ones((1, 1))]]))
    parts: list[dict[str, Any]] = [
        {"shape": "box", "size": [round(v, 4) for v in sides], "pose": frame, "color": SATELLITE_COLOR},
        {"shape": "axes", "size": round(0.6 * max(sides), 3), "pose": IDENTITY},
    ]
    for fixture in fixtures.values():
        pad = pose7(fixture.pose.matrix())
        parts.append({"shape": "cylinder", "radius": round(float(fixture.radius), 4), "z": [0.0, 0.01],
                      "pose": pad, "color": PAD_COLOR})
    return parts


def tool_parts(tcp2flange: np.ndarray, active_interface: bool) -> list[dict[str, Any]]:
    """What the arm carries, in the flange frame: a stem from the flange to the tool (and the
    active interface at the TCP when the arm docks), or a small disc at the TCP."""
    tool = np.asarray(tcp2flange, dtype=float)
    reach = float(np.linalg.norm(tool[:3, 3]))
    parts: list[dict[str, Any]] = []
    if reach > 1e-3:
        # the stem along the flange's z to the tool's depth, then the interface in the TCP frame
        depth = float(tool[2, 3]) - (0.03 if active_interface else 0.0)
        if depth > 1e-3:
            parts.append({"shape": "cylinder", "radius": 0.04, "z": [0.0, round(depth, 5)], "pose": IDENTITY,
                          "color": STEM_COLOR})
    tcp = pose7(tool)
    if active_interface:
        for part in sirom_active_parts():
            parts.append({**part, "pose": _compose(tcp, part["pose"])})
    else:
        parts.append({"shape": "cylinder", "radius": 0.03, "z": [-0.01, 0.0], "pose": tcp, "color": ACTIVE_COLOR})
    parts.append({"shape": "axes", "size": 0.05, "pose": tcp})
    return parts


def _compose(a: list[float], b: list[float]) -> list[float]:
    ra, rb = Rotation.from_quat(a[3:]), Rotation.from_quat(b[3:])
    xyz = ra.apply(b[:3]) + np.asarray(a[:3])
    quat = (ra * rb).as_quat()
    return [*(round(float(v), 6) for v in xyz), *(round(float(v), 6) for v in quat)]


def _matrix_of(pose: Any) -> np.ndarray | None:
    """A pose field (``Pose`` with ``matrix()``) or a (4, 4) array, else None."""
    if pose is None:
        return None
    if hasattr(pose, "matrix"):
        return np.asarray(pose.matrix(), dtype=float)
    array = np.asarray(pose, dtype=float)
    return array if array.shape == (4, 4) else None


# ------------------------------------------------------------------------------ header
def scene_header(model: Any, drivers: Mapping[str, Any], world: Any = None) -> dict[str, Any]:
    """The static scene of a mission (``model``: the validated mission; ``drivers`` by name)."""
    from orbitree.skills.board_model import BOARDS

    robots: dict[str, Any] = {}
    for name, spec in model.robots.items():
        table = kin.UR10E
        base = _matrix_of(getattr(spec, "base", None))
        tool = spec.tool.matrix()
        entry: dict[str, Any] = {
            "model": spec.model,
            "base": pose7(base if base is not None else np.eye(4)),
            "dh": {"d": list(table.d), "a": list(table.a), "alpha": list(table.alpha),
                   "theta_offset": list(table.theta_offset)},
            "q0": [round(float(v), 6) for v in spec.q0],
            "tool": pose7(tool),
            "parts": tool_parts(tool, spec.latch is not None),
            "ft": bool(spec.ft),
        }
        if spec.camera is not None:
            device = drivers.get(name)
            # the mount the estimator uses: the device read it (a pose, or a calibration file's cam2tcp)
            mount = getattr(device, "cam2tcp", None)
            if mount is None:
                mount = spec.camera.mount_matrix()
            camera: dict[str, Any] = {"mount": pose7(np.asarray(mount)), "width": spec.camera.width,
                                      "height": spec.camera.height}
            intrinsics = getattr(getattr(device, "camera", None), "intrinsics", None)
            if intrinsics is not None:
                k = np.asarray(intrinsics.camera_matrix, dtype=float)
                camera.update(width=int(intrinsics.width), height=int(intrinsics.height),
                              k=[round(float(v), 4) for v in k.ravel()],
                              dist=[float(v) for v in np.asarray(intrinsics.dist_coeffs).ravel()])
            elif spec.camera.driver == "sim":
                f, w, h = spec.camera.focal_px, spec.camera.width, spec.camera.height
                camera["k"] = [f, 0.0, (w - 1) / 2, 0.0, f, (h - 1) / 2, 0.0, 0.0, 1.0]
            entry["camera"] = camera
        robots[name] = entry
    bodies: list[dict[str, Any]] = []
    truth = getattr(world, "targets", None) or {}
    satellites = getattr(world, "satellites", None) or {}
    for name, target in model.targets.items():
        if target.kind == "satellite":
            pose = satellites[name].pose() if name in satellites else target.pose.matrix()
            bodies.append({"name": name, "kind": "satellite", "pose": pose7(pose),
                           "parts": satellite_parts(float(target.mass), target.inertia_matrix(), target.fixtures)})
            continue
        board = BOARDS[target.board]() if target.board in BOARDS else None
        pose = truth.get(name)
        pose = target.pose.matrix() if pose is None else pose
        bodies.append({"name": name, "kind": "target", "board": target.board, "pose": pose7(pose),
                       "parts": sirom_passive_parts(board)})
    boards = [b for b in bodies if b["kind"] == "target"]
    if boards and world is not None:
        # the module carrying the passive interface stands on a table (the sim world's is 5 cm
        # below the lowest target); drawn 0.5 m square under each target, top at that height
        low = min(body["pose"][2] for body in boards) - 0.05
        for body in boards:
            x, y = body["pose"][:2]
            bodies.append({"name": f"{body['name']} table", "kind": "fixture", "pose": _at(x, y, low),
                           "parts": [{"shape": "box", "size": [0.5, 0.5, 0.04], "pose": _at(z=-0.02),
                                      "color": TABLE_COLOR}]})
    return {"frame": "world", "rate_hz": SCENE_HZ, "robots": robots, "bodies": bodies,
            "truth": world is not None}


# ------------------------------------------------------------------------------ samples
class SceneSampler:
    """Takes the scene's dynamic part from the blackboard (and the sim world's ground truth) at
    most ``rate_hz`` times a second of mission time; ``sample`` returns what changed, or None."""

    def __init__(self, scene: dict[str, Any], world: Any = None, rate_hz: float = SCENE_HZ,
                 observers: Mapping[str, str] | None = None) -> None:
        self.scene = scene
        self.world = world
        self.interval = 1.0 / rate_hz
        self.robots = list(scene.get("robots", {}))
        self.bases = {name: _matrix_of_pose7(r["base"]) for name, r in scene.get("robots", {}).items()}
        self.targets = [b["name"] for b in scene.get("bodies", []) if b.get("kind") == "target"]
        # the arm whose camera estimates each target (its pose_base is in that arm's base frame)
        self.observers = dict(observers or {})
        self._keys = {
            "q": {r: robot_key(r, "q") for r in self.robots},
            "wrench": {r: robot_key(r, "wrench") for r in self.robots if scene["robots"][r].get("ft")},
            "tcp": {r: robot_key(r, "tcp_pose") for r in self.robots},
            "latch": {r: robot_key(r, "latch") for r in self.robots},
            "est": {t: target_key(t, "pose_base") for t in self.targets},
        }
        self._next = -math.inf
        self._last: dict[str, dict[str, Any]] = {}
        self._poses: dict[tuple[str, str], tuple[bytes, list[float]]] = {}  # pose7 of the last matrix seen

    def _pose7(self, field: str, name: str, matrix: np.ndarray) -> list[float]:
        """``pose7(matrix)``, computed again only when the matrix changed (a target at rest, an
        estimate between two frames)."""
        data = np.asarray(matrix, dtype=float).tobytes()
        cached = self._poses.get((field, name))
        if cached is not None and cached[0] == data:
            return cached[1]
        pose = pose7(matrix)
        self._poses[(field, name)] = (data, pose)
        return pose

    def sample(self, t: float, force: bool = False) -> dict[str, Any] | None:
        if t < self._next and not force:
            return None
        self._next = t + self.interval - 1e-9
        storage = py_trees.blackboard.Blackboard.storage
        out: dict[str, dict[str, Any]] = {}
        keys = self._keys
        for robot, key in keys["q"].items():
            q = storage.get(key)
            if q is not None:
                self._put(out, "q", robot, [round(float(v), 6) for v in np.asarray(q).ravel()[:6]], Q_STEP)
        for robot, key in keys["wrench"].items():
            wrench, tcp = storage.get(key), storage.get(keys["tcp"][robot])
            if wrench is not None and tcp is not None:
                force_world = self.bases[robot][:3, :3] @ np.asarray(tcp)[:3, :3] @ np.asarray(wrench)[:3]
                self._put(out, "f", robot, [round(float(v), 1) for v in force_world], FORCE_STEP)
        for robot, key in keys["latch"].items():
            latch = storage.get(key)
            if latch is not None:
                self._put(out, "latch", robot, str(latch), None)
        truth = getattr(self.world, "targets", None)
        if truth:
            for name, matrix in truth.items():
                self._put(out, "body", name, self._pose7("body", name, matrix), POSE_STEP)
        for name, satellite in (getattr(self.world, "satellites", None) or {}).items():
            self._put(out, "body", name, self._pose7("body", name, satellite.pose()), POSE_STEP)
        for target, key in keys["est"].items():
            estimate = storage.get(key)
            matrix = getattr(estimate, "matrix", None)
            if matrix is not None:
                robot = self.observers.get(target)
                base = self.bases.get(robot) if robot is not None else None
                world = matrix if base is None else base @ matrix
                self._put(out, "est", target, self._pose7("est", target, world), POSE_STEP)
        for key in [k for k in storage if k.startswith("/orbit/relative/")]:
            if fnmatch.fnmatchcase(key, ORBIT_RELATIVE_GLOB):
                position = lvlh_position(storage[key])
                if position is not None:
                    self._put(out, "rel", key.rsplit("/", 1)[1], position, 1e-3)
        return out or None

    def _put(self, out: dict[str, dict[str, Any]], field: str, name: str, value: Any, step: float | None) -> None:
        last = self._last.setdefault(field, {})
        previous = last.get(name)
        if previous is not None:
            if step is None:
                if previous == value:
                    return
            elif max(abs(a - b) for a, b in zip(previous, value, strict=True)) < step:
                return
        last[name] = value
        out.setdefault(field, {})[name] = value


def _matrix_of_pose7(pose: list[float]) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat(pose[3:]).as_matrix()
    m[:3, 3] = pose[:3]
    return m


def lvlh_position(value: Any) -> list[float] | None:
    """The position part of an ``/orbit/relative/<target>`` value: the first three numbers of
    an array (``[x, y, z]`` or ``[x, y, z, vx, vy, vz]``) or a mapping's ``position``; rounded to
    1 mm. None when it is neither."""
    if isinstance(value, Mapping):
        value = value.get("position")
    try:
        array = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        return None
    if array.size < 3 or not np.isfinite(array[:3]).all():
        return None
    return [round(float(v), 3) for v in array[:3]]


def observers_of(nodes: list[dict[str, Any]]) -> dict[str, str]:
    """target -> the arm whose ``perceive`` estimates it, from the header's nodes."""
    out: dict[str, str] = {}
    for node in nodes:
        params = node.get("params") or {}
        if node.get("kind") == "perceive" and isinstance(params.get("target"), str):
            out.setdefault(params["target"], params.get("robot"))
    return out
