"""``dock_pull``: two arms holding a despun satellite bring it to the docking fixture, nulling the
internal force between them.

YAML::

    - dock_pull:
        robots: [left, right]
        target: mockup
        fixtures: [pad_left, pad_right]
        dock: {xyz: [0, 0, 0.4], rpy: [0, 0, 90]}    # the body's pose when docked, world frame
        duration: 4 s          # at least this long (a minimum-jerk path; longer if speed or max_force ask)
        speed: 50 mm/s         # peak speeds of the path
        angular_speed: 10 deg/s
        max_force: 15 N        # per arm: what the path's accelerations may ask (the body's mass and inertia)
        tolerance: {position: 5 mm, angle: 2 deg}
        max_internal: 8 N      # docked only with the internal force under this
        hold: 300 ms

"Once the satellite mockup is stopped, it is pulled to the docking fixture. Active force control
is used to nullify the force built up due to the dual-arm coordinated motion" [JPL]. The body's
pose at the start is taken from the first arm's tool (the tools hold the pads; the second arm's
offset from its pad goes into its COMPLY transform; a gimbal's pivot is where the state puts it), the
reference moves to ``dock`` on a
minimum-jerk path (position and rotation together) no shorter than what keeps the force the
path's acceleration asks of each arm under ``max_force``: the peak wrench ``[m·a, I·α]`` of the
body's mass and inertia (world axes at the start), distributed over the grasp
(``orbitree.skills.despin.min_jerk_duration``; turning a 7087 kg·m² body 25° in 10 s would ask
100 N of each arm at 0.9 m), the
tools follow their pads on it, and the COMPLY integrators null the internal force (for a gimbal's
mockup, the net force on its pivot too). A gimbal-mounted target only turns: a ``dock`` whose
position is not the pivot's fails at once. SUCCESS when the path has ended, both tools are
within ``tolerance`` of their commands (the body is where the reference says) and the internal
force, from the mean of the wrist readings over ``hold`` (one UR10e reading scatters by 5 N per axis),
is under ``max_internal`` for ``hold``; it sets the summary's ``grapple.docked``.
FAILURE, both arms stopped: a force over ``abort_force``, an arm in a protective stop, or not
docked ``timeout`` after the path's end.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import py_trees
from pydantic import BaseModel, ConfigDict, Field
from scipy.spatial.transform import Rotation, Slerp

from orbitree.language.quantities import Angle, AngularSpeed, Duration, Force, Length, PoseField, Speed
from orbitree.nodes.grappling import TOOL_ON_PAD, DualArmLeaf, DualArmParams, internal_force
from orbitree.skills import despin as ds
from orbitree.skills import grapple as gr
from orbitree.skills import grasp as gp

Status = py_trees.common.Status


class Tolerance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    position: Length = Field(0.005, gt=0.0)
    angle: Angle = Field(float(np.radians(2.0)), gt=0.0)


class DockPullParams(DualArmParams):
    dock: PoseField = Field(description="the body's pose (centre of mass, axes) when docked, world frame")
    duration: Duration = Field(4.0, gt=0.0, description="the path takes at least this long")
    speed: Speed = Field(0.05, gt=0.0, description="peak linear speed of the path")
    angular_speed: AngularSpeed = Field(float(np.radians(10.0)), gt=0.0, description="peak rotation rate")
    max_force: Force = Field(15.0, gt=0.0, description="per arm: the most the path's acceleration may ask "
                             "(sets the duration from the body's mass and inertia)")
    tolerance: Tolerance = Tolerance()
    max_internal: Force = Field(8.0, gt=0.0, description="docked only with the internal force under this")
    hold: Duration = Field(0.3, ge=0.0, description="docked conditions held this long")
    timeout: Duration = Field(3.0, gt=0.0, description="after the path's end, fail if not docked by then")


def minimum_jerk(s: float) -> float:
    """The minimum-jerk blend 10s³ − 15s⁴ + 6s⁵ of ``s`` in [0, 1] (peak rate 1.875)."""
    s = min(max(s, 0.0), 1.0)
    return min(1.0, s**3 * (10.0 - 15.0 * s + 6.0 * s * s))  # rounding may pass 1 by an ulp


class DockPull(DualArmLeaf):
    kind = "dock_pull"
    Params = DockPullParams
    params: DockPullParams

    def begin(self) -> Status:
        p = self.params
        first = self._tools()[0]
        self.start_pose = first @ np.linalg.inv(TOOL_ON_PAD) @ np.linalg.inv(self.pads[0].pad2body)
        if self.model.mount == "gimbal" and self.predictor.estimate is not None:
            # the pivot does not move: where the state puts it (a held tool stands its tether's stretch
            # and its COMPLY offset, millimetres, off its pad; the body it implies is that far off)
            self.start_pose[:3, 3] = self.predictor.estimate.body2world[:3, 3]
        self.goal = p.dock.matrix()
        shift = float(np.linalg.norm(self.goal[:3, 3] - self.start_pose[:3, 3]))
        if self.model.mount == "gimbal" and shift > p.tolerance.position:
            self.feedback_message = (f"the dock is {shift * 1e3:.0f} mm off the gimbal's pivot: a gimbal-mounted "
                                     "target only turns")
            return Status.FAILURE
        rotation = Rotation.from_matrix(self.goal[:3, :3] @ self.start_pose[:3, :3].T).as_rotvec()
        turn = float(np.linalg.norm(rotation))
        self.t0 = self.ctx.now
        start = self.start_pose
        centre = start[:3, 3]
        points = np.array([(start @ pad.pad2body)[:3, 3] - centre for pad in self.pads])
        grasp = gp.make_grasp(points, length=0.0, mobility=self.model.mobility())
        inertia = start[:3, :3] @ self.model.inertia @ start[:3, :3].T
        self.force_span = ds.min_jerk_duration(grasp, self.model.mass, inertia, self.goal[:3, 3] - centre,
                                               rotation, p.max_force)
        self.span = max(p.duration, 1.875 * shift / p.speed, 1.875 * turn / p.angular_speed, self.force_span)
        self.record.fields["dock_pull_s"] = round(self.span, 3)
        self.slerp = Slerp([0.0, 1.0], Rotation.from_matrix([self.start_pose[:3, :3], self.goal[:3, :3]]))
        self.calm_since: float | None = None
        self.history: deque[np.ndarray] = deque(maxlen=max(1, round(p.hold / self.ctx.period)))
        self.feedback_message = f"pulling {shift * 1e3:.0f} mm and {np.degrees(turn):.0f} deg in {self.span:.1f} s"
        return Status.RUNNING

    def body(self, t: float) -> np.ndarray:
        s = minimum_jerk((t - self.t0) / self.span)
        pose = np.eye(4)
        pose[:3, :3] = self.slerp([s]).as_matrix()[0]
        pose[:3, 3] = (1.0 - s) * self.start_pose[:3, 3] + s * self.goal[:3, 3]
        return pose

    def check(self, forces: np.ndarray) -> Status | None:
        p = self.params
        end = self.t0 + self.span
        self.history.append(forces)
        if self.ctx.now < end:
            self.feedback_message = f"pulling, {self.ctx.now - self.t0:.1f} of {self.span:.1f} s"
            return None
        body = self.body(self.ctx.now)
        points = np.array([(body @ pad.pad2body)[:3, 3] - body[:3, 3] for pad in self.pads])
        # the mean over the hold: one reading of a UR10e's wrist scatters by 5 N per axis
        internal = internal_force(points, np.mean(self.history, axis=0), self.model.mobility())
        tools = self._tools()
        errors = []
        for i, pad in enumerate(self.pads):
            command = body @ pad.pad2body @ gr.comply_transform(self.comply[i]) @ TOOL_ON_PAD
            errors.append(float(np.linalg.norm(command[:3, 3] - tools[i][:3, 3])))
        placed = max(errors) < p.tolerance.position
        if placed and internal < p.max_internal:
            self.calm_since = self.ctx.now if self.calm_since is None else self.calm_since
            if self.ctx.now - self.calm_since >= p.hold - 1e-9:
                self.record.fields["docked"] = True
                self._truth()
                self.feedback_message = f"docked, internal force {internal:.1f} N"
                return Status.SUCCESS
        else:
            self.calm_since = None
        if self.ctx.now > end + p.timeout:
            self.feedback_message = f"not docked: tools {max(errors) * 1e3:.1f} mm off, internal {internal:.1f} N"
            return Status.FAILURE
        self.feedback_message = f"settling: internal {internal:.1f} N"
        return None

    def _truth(self) -> None:
        """The docked body's error against the dock, ground truth (reports only)."""
        world = self.ctx.world
        if world is None or self.params.target not in getattr(world, "satellites", {}):
            return
        truth = world.satellites[self.params.target].pose()
        error = np.linalg.norm(truth[:3, 3] - self.goal[:3, 3])
        angle = Rotation.from_matrix(truth[:3, :3] @ self.goal[:3, :3].T).magnitude()
        self.record.fields["dock_error_true"] = {"position_mm": round(float(error) * 1e3, 3),
                                                "angle_deg": round(float(np.degrees(angle)), 3)}
