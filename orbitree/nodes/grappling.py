"""What the grapple leaves (``track``, ``grapple``, ``despin``, ``dock_pull``, ``release``) share:
the target's model from the mission, the tool's frame on a pad, the state estimate carried
forward, the wrist reading as a force on the body, and the run summary's ``grapple`` record.

Frames: ``world`` is the mission's frame (the satellite's pose, the arms' ``base``); each arm
commands in its own base frame (``base2world`` from ``robots.<name>.base``). A tool meets a pad
with its z axis against the pad's normal: ``tool2world = pad2world · TOOL_ON_PAD`` (a half turn
about x). The wrist sensor reads the force on the tool, TCP axes; the arm applies its opposite
on the body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import py_trees
from pydantic import Field as PydField
from scipy.spatial.transform import Rotation

from orbitree.language.keys import robot_key, target_key
from orbitree.language.params import NodeParams
from orbitree.language.quantities import Duration, Force
from orbitree.nodes.motion import MotionLeaf
from orbitree.skills import grapple as gr
from orbitree.skills import grasp as gp

TOOL_ON_PAD = np.diag([1.0, -1.0, -1.0, 1.0])
"""tool2pad at contact: the tool's z into the pad (a half turn about the pad's x)."""
Status = py_trees.common.Status
RPM = 60.0 / (2.0 * np.pi)
GIMBAL_MOBILITY = np.hstack([np.zeros((3, 3)), np.eye(3)])
"""A gimbal's pivot takes any net force: only moments move the mockup (``orbitree.skills.grasp``)."""


@dataclass(frozen=True)
class PadModel:
    """A fixture as the mission declares it: ``pad2body`` (4, 4) and its contact figures."""

    pad2body: np.ndarray
    radius: float
    stiffness: float
    engage_force: float
    hold_force: float


@dataclass(frozen=True)
class TargetModel:
    """The satellite's model from ``targets.<name>`` (a priori knowledge, as the seed's object model)."""

    mass: float
    inertia: np.ndarray  # (3, 3) kg·m², body frame
    mount: str  # gimbal | free
    pads: dict[str, PadModel]
    spin_axis: np.ndarray  # (3,) body frame: a gimbal's bearing axis

    @classmethod
    def of(cls, ctx: Any, target: str) -> TargetModel:
        spec = ctx.targets.get(target)
        if spec is None or getattr(spec, "kind", None) != "satellite":
            raise RuntimeError(f"target {target!r} is not a satellite of this mission")
        pads = {name: PadModel(f.pose.matrix(), f.radius, f.stiffness, f.engage_force, f.hold_force)
                for name, f in spec.fixtures.items()}
        axis = np.array(spec.spin.axis if spec.spin is not None else (0.0, 0.0, 1.0), float)
        return cls(float(spec.mass), spec.inertia_matrix(), spec.mount, pads, axis / np.linalg.norm(axis))

    def pad(self, fixture: str) -> PadModel:
        if fixture not in self.pads:
            raise RuntimeError(f"no fixture {fixture!r} on the target (fixtures: {', '.join(self.pads)})")
        return self.pads[fixture]

    def mobility(self) -> np.ndarray | None:
        return GIMBAL_MOBILITY if self.mount == "gimbal" else None


def estimate_of(message: Any) -> gr.StateEstimate:
    """A ``StateEstimate`` from a ``/target/<name>/state`` message (``TargetState``)."""
    return gr.StateEstimate.of(message.stamp, message.position, message.quaternion, message.velocity,
                               message.angular_velocity)


@dataclass
class Predictor:
    """The latest estimate carried to each tick (rigid body, with the inertia)."""

    inertia: np.ndarray
    estimate: gr.StateEstimate | None = None
    prediction: gr.BodyPrediction | None = None
    arrivals: int = 0

    def update(self, message: Any) -> bool:
        """Take a message; True when it is new."""
        if message is None or (self.estimate is not None and message.stamp <= self.estimate.t):
            return False
        self.estimate = estimate_of(message)
        self.prediction = None
        self.arrivals += 1
        return True

    def at(self, now: float) -> gr.BodyPrediction:
        assert self.estimate is not None
        self.prediction = gr.predict_body(self.estimate, self.inertia, now, self.prediction, dt=0.02)
        return self.prediction

    def pad(self, now: float, pad2body: np.ndarray, lookahead: float) -> np.ndarray:
        """pad2world (4, 4) predicted for ``now + lookahead``."""
        return gr.predicted_pad(self.at(now), self.inertia, pad2body, lookahead, dt=0.02)

    def spin(self) -> float:
        """|ω| of the latest estimate, rad/s."""
        assert self.estimate is not None
        return float(np.linalg.norm(self.estimate.twist[3:]))


def base_of(device: Any) -> np.ndarray:
    """base2world (4, 4) of an arm's device (identity when its spec says nothing)."""
    spec = getattr(device, "spec", None)
    return spec.base.matrix() if spec is not None and hasattr(spec, "base") else np.eye(4)


def force_on_body(wrench_tcp: np.ndarray, tcp2world: np.ndarray) -> np.ndarray:
    """(3,) N, world: what the arm pushes the body with, from its wrist reading (TCP axes)."""
    return -tcp2world[:3, :3] @ np.asarray(wrench_tcp, float)[:3]


def internal_force(points: np.ndarray, forces: np.ndarray, mobility: np.ndarray | None) -> float:
    """The largest internal force (N) of arms pushing the body with ``forces`` (n, 3) at ``points``
    (n, 3, from the centre of mass or the pivot): what does not move the body."""
    grasp = gp.make_grasp(points, length=0.0, mobility=mobility)
    _, internal = gp.split_wrenches(grasp, np.hstack([forces, np.zeros_like(forces)]))
    return float(np.linalg.norm(internal[:, :3], axis=1).max())


@dataclass
class GrappleRecord:
    """The summary's ``grapple`` entry, kept by the leaves: measured by the executive's leaves
    (contact, spin at contact from the estimate) and, in simulation, ground truth for the report
    (peak pad forces, internal force, final spin), which no leaf acts on."""

    fields: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, ctx: Any) -> GrappleRecord:
        record = ctx.summary.get("grapple")
        if record is None:
            record = ctx.summary["grapple"] = {
                "spin_at_contact_rpm": None, "final_spin_rpm": None, "contact_time_s": None,
                "revolutions_missed": 0, "peak_force_n": {}, "peak_internal_force_n": 0.0, "docked": False}
        return cls(record)

    def contact(self, now: float, spin: float) -> None:
        if self.fields["contact_time_s"] is None:
            self.fields["contact_time_s"] = round(now, 4)
            self.fields["spin_at_contact_rpm"] = round(spin * RPM, 4)

    def missed(self) -> None:
        self.fields["revolutions_missed"] += 1

    def truth(self, ctx: Any, target: str) -> None:
        """Peak pad forces per arm and the final spin, from the simulated world."""
        world = ctx.world
        if world is None or target not in getattr(world, "satellites", {}):
            return
        peaks = self.fields["peak_force_n"]
        for contact in world.pads.values():
            if contact.target == target:
                peaks[contact.robot] = round(max(peaks.get(contact.robot, 0.0), contact.peak_n), 3)
        self.fields["final_spin_rpm"] = round(world.satellites[target].spin() * RPM, 5)

    def internal_truth(self, ctx: Any, target: str, robots: tuple[str, ...], mobility: np.ndarray | None) -> None:
        world = ctx.world
        if world is None or target not in getattr(world, "satellites", {}):
            return
        body = world.satellites[target]
        contacts = [c for c in world.pads.values() if c.target == target and c.robot in robots and c.attached]
        if len(contacts) < 2:
            return
        centre = body.pose()[:3, 3]
        points = np.array([world.tcp_pose(c.robot)[:3, 3] - centre for c in contacts])
        forces = np.array([-c.force for c in contacts])  # on the body
        value = internal_force(points, forces, mobility)
        self.fields["peak_internal_force_n"] = round(max(self.fields["peak_internal_force_n"], value), 3)


# ------------------------------------------------------------------------------ two arms, one body



class DualArmParams(NodeParams):
    robots: tuple[str, str] = PydField(description="the two arms holding the target")
    target: str = PydField(description="the satellite they hold")
    fixtures: tuple[str, str] = PydField(description="the pad each arm holds, in the order of 'robots'")
    comply_time: Duration = PydField(0.03, gt=0.0, description="internal-force COMPLY: time constant of the "
                                     "loop (share of the error removed per tick: tick/comply_time, at most 0.3)")
    dead_band: Force = PydField(4.0, ge=0.0, description="internal-force COMPLY: errors under this are kept")
    abort_force: Force = PydField(60.0, gt=0.0, description="stop and fail when an arm reads more, twice in a row")


class DualArmLeaf(MotionLeaf):
    """Two arms holding one body by its pads: the arms' tools follow a reference of the body's
    pose (``body(t)``, world) through each pad's frame and its COMPLY transform, the COMPLY
    integrators null the internal force only (``orbitree.skills.grasp.internal_comply_errors``)
    and a feed-forward force per arm (``feedforward(t)``, on the body, world) is added as the
    tether's stretch ``f/k``. Subclasses fill in ``begin`` (plan; may end the leaf), ``body``,
    ``feedforward`` and ``check`` (SUCCESS / FAILURE / None to go on)."""

    params: DualArmParams

    @classmethod
    def reads(cls, params: DualArmParams) -> list[str]:
        out = [target_key(params.target, "state")]
        for robot in params.robots:
            out += [robot_key(robot, "tcp_pose"), robot_key(robot, "wrench"), robot_key(robot, "protective_stop")]
        return out

    @classmethod
    def writes(cls, params: DualArmParams) -> list[str]:
        return [f"/grapple/{r}/force" for r in params.robots] + ["/grapple/internal_force"]

    def setup(self, **kwargs: object) -> None:
        names = self.params.robots
        if names[0] == names[1]:
            raise RuntimeError(f"{self.kind}: the two robots must differ, got {names}")
        self.devices = [self.ctx.drivers[n] for n in names]
        self.device, self.robot = self.devices[0], self.devices[0].robot
        self.arms = [d.robot for d in self.devices]
        self.bases = [base_of(d) for d in self.devices]
        self._started = {}
        self.model = TargetModel.of(self.ctx, self.params.target)
        self.pads = [self.model.pad(f) for f in self.params.fixtures]
        share = min(0.3, self.ctx.period / self.params.comply_time)  # the sensor lags 5 ms: a slow loop at 2 ms
        gains = [gr.comply_gain(p.stiffness, self.ctx.period, share) for p in self.pads]
        self.laws = [gr.ComplyParams(gain=(g, g, g, 1e-3, 1e-3, 1e-3), force_dead_band=self.params.dead_band,
                                     torque_dead_band=1e9) for g in gains]

    def begin(self) -> Status:
        raise NotImplementedError

    def body(self, t: float) -> np.ndarray:
        """The reference body2world (4, 4) at mission time ``t``."""
        raise NotImplementedError

    def feedforward(self, t: float) -> np.ndarray:
        """(2, 3) N, world: what each arm should push the body with at ``t``."""
        return np.zeros((2, 3))

    def check(self, forces: np.ndarray) -> Status | None:
        raise NotImplementedError

    # -- the lifecycle hooks -------------------------------------------------------------------------
    def start(self) -> Status:
        self.predictor = Predictor(self.model.inertia)
        self.predictor.update(self.read(target_key(self.params.target, "state")))
        self.record = GrappleRecord.of(self.ctx)
        self.over = 0
        status = self.begin()
        if status != Status.RUNNING:
            return status
        self.anchor()
        for name, arm in zip(self.params.robots, self.arms, strict=True):
            self.commanded(name, arm.stop)
        return Status.RUNNING

    def running(self) -> Status:
        p = self.params
        if any(self.read(robot_key(r, "protective_stop"), False) for r in p.robots):
            self.feedback_message = "an arm is in a protective stop"
            return Status.FAILURE
        tools = self._tools()
        wrenches = [self.read(robot_key(r, "wrench")) for r in p.robots]
        forces = np.array([force_on_body(w, tool) for w, tool in zip(wrenches, tools, strict=True)])
        for r, f in zip(p.robots, forces, strict=True):
            self.write(f"/grapple/{r}/force", f)
        fresh = all(self.ctx.age(robot_key(r, "wrench")) == 0.0 for r in p.robots)
        if fresh:
            self.over = self.over + 1 if np.linalg.norm(forces, axis=1).max() > p.abort_force else 0
        body = self.body(self.ctx.now)
        centre = body[:3, 3]
        pads = [body @ pad.pad2body for pad in self.pads]
        points = np.array([pad[:3, 3] - centre for pad in pads])
        grasp = gp.make_grasp(points, length=0.0, mobility=self.model.mobility())
        wrenches_body = np.hstack([forces - self.feedforward(self.ctx.now), np.zeros((2, 3))])
        self.write("/grapple/internal_force", internal_force(points, forces, self.model.mobility()))
        self.record.truth(self.ctx, p.target)
        self.record.internal_truth(self.ctx, p.target, p.robots, self.model.mobility())
        if self.over >= 2:
            self.feedback_message = f"force over {p.abort_force:g} N: stopped"
            self.ctx.event("grapple_force_limit", node=self.name)
            return Status.FAILURE
        status = self.check(forces)
        if status is not None:
            return status
        if fresh:
            errors = gp.internal_comply_errors(grasp, wrenches_body, np.array([pad[:3, :3] for pad in pads]))
            self.comply = [gr.comply_step(c, e, self.ctx.period, law)
                           for c, e, law in zip(self.comply, errors, self.laws, strict=True)]
        ahead = self.ctx.now + self.ctx.period
        body_next = self.body(ahead)
        push = self.feedforward(ahead)
        for i, (arm, pad) in enumerate(zip(self.arms, self.pads, strict=True)):
            goal = body_next @ pad.pad2body @ gr.comply_transform(self.comply[i]) @ TOOL_ON_PAD
            goal[:3, 3] += push[i] / pad.stiffness
            arm.servo_l(np.linalg.solve(self.bases[i], goal))
        return Status.RUNNING

    def held_pads(self, forces: np.ndarray) -> np.ndarray:
        """(2, 3) m, world: where the held pads are, from the arms' own kinematics: each tool's
        position less its tether's stretch (the arm pushes the body with ``forces`` (2, 3) by
        standing ``f/k`` past its pad)."""
        tools = self._tools()
        return np.array([tool[:3, 3] - f / pad.stiffness for tool, f, pad in zip(tools, forces, self.pads,
                                                                                   strict=True)])

    def anchor(self) -> None:
        """Start each arm's COMPLY transform at its tool's offset from its pad on the reference now."""
        body = self.body(self.ctx.now)
        self.comply = []
        for pad, tool in zip(self.pads, self._tools(), strict=True):
            offset = np.linalg.solve(body @ pad.pad2body, tool @ np.linalg.inv(TOOL_ON_PAD))
            self.comply.append(gr.ComplyState(np.concatenate(
                [offset[:3, 3], Rotation.from_matrix(offset[:3, :3]).as_rotvec()])))

    def _tools(self) -> list[np.ndarray]:
        return [base @ self.read(robot_key(r, "tcp_pose")) for base, r in zip(self.bases, self.params.robots,
                                                                              strict=True)]
