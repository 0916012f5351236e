"""``identify_kinematics``: the arm's link parameters from its six joint sweeps; write the file.

YAML::

    - identify_kinematics: {robot: arm, output: calibration/kinematics.yaml}

Reads ``/calibration/<arm>/joint1`` .. ``joint6`` (``sweep_joint``, in order 1 to 6: each joint
rests at the end of its sweep, where the arm is now), fits each joint's axis (plane and circle,
``orbitree.skills.circle_point``) and identifies the Denavit–Hartenberg / Hayati–Mirmirani
parameters of the UR10e with joints 2 and 3 Hayati–Mirmirani, with the base in tracker
coordinates from the tracker's set-up (``d1`` and ``theta1`` need it). The last link (flange)
is not observable from axes and stays nominal. Writes ``output`` (``orbitree.drivers.kinematics_io``:
what ``robots.<arm>.kinematics`` reads; relative: the working directory). The run summary gets
``kinematic_calibration``: the identified parameters (mm, deg) and, in simulation, the arm as
built's (ground truth, for the report). SUCCESS when written.
"""

from __future__ import annotations

import numpy as np
import py_trees
from pydantic import Field

from orbitree.drivers.kinematics_io import save_kinematics
from orbitree.language.keys import circle_points_key, robot_key
from orbitree.language.params import NodeParams
from orbitree.nodes.leaf import Leaf
from orbitree.skills import circle_point as cp
from orbitree.skills import kinematics as kin

Status = py_trees.common.Status
MODEL = kin.UR10E_HM


def table_from_parameters(params: dict[str, float], nominal: kin.DHTable) -> kin.DHTable:
    """A link table from parameters by name in mm and degrees (``circle_point.identify``'s)."""
    n = nominal.n_joints
    columns = {}
    for kind, key in (("d", "d"), ("theta", "theta_offset"), ("a", "a"), ("alpha", "alpha"), ("beta", "beta")):
        scale = 1e-3 if cp.UNITS[kind] == "mm" else np.pi / 180.0
        columns[key] = tuple(float(params[f"{kind}{i + 1}"]) * scale for i in range(n))
    return kin.DHTable(**columns, hm=nominal.hm, name=f"{nominal.name} (calibrated)")


class IdentifyKinematicsParams(NodeParams):
    robot: str = Field(description="the arm swept")
    output: str = Field(description="kinematics file to write")


class IdentifyKinematics(Leaf):
    kind = "identify_kinematics"
    Params = IdentifyKinematicsParams
    params: IdentifyKinematicsParams

    @classmethod
    def reads(cls, params: IdentifyKinematicsParams) -> list[str]:
        return [robot_key(params.robot, "q"), *(circle_points_key(params.robot, j) for j in range(1, 7))]

    def setup(self, **kwargs: object) -> None:
        self.device = self.ctx.drivers[self.params.robot]
        if self.device.tracker is None:
            raise RuntimeError(f"identify_kinematics: robot {self.params.robot!r} has no laser_tracker")

    def update(self) -> Status:
        sweeps = [self.read(circle_points_key(self.params.robot, j)) for j in range(1, 7)]
        if any(s is None for s in sweeps):
            self.feedback_message = "not every joint has been swept"
            return Status.FAILURE
        q_final = np.array([s["q"][-1] for s in sweeps])
        robot2tracker = self.device.tracker.robot2tracker
        z_nominal, _ = cp.nominal_axes(MODEL, q_final, robot2tracker)
        axes = [cp.fit_axis(np.asarray(s["points"])[None], towards=z)
                for s, z in zip(sweeps, z_nominal, strict=True)]
        identified = cp.identify(axes, MODEL, q_final, robot2tracker)
        found = {name: float(np.ravel(v)[0]) for name, v in identified.items()}
        table = table_from_parameters(found, MODEL)
        save_kinematics(self.params.output, table, method="circle point",
                        radii_m=[round(float(np.ravel(a.radius)[0]), 6) for a in axes])
        names = cp.identified_names(MODEL)
        summary = {"file": self.params.output, "identified": {k: round(found[k], 5) for k in names}}
        world = self.ctx.world
        robot = None if world is None else world.robots.get(self.params.robot)
        if robot is not None:  # ground truth, for the report
            truth = cp.nominal_parameters(robot.true_table)
            summary["truth"] = {k: round(truth[k], 5) for k in names}
        self.ctx.summary["kinematic_calibration"] = summary
        self.feedback_message = f"{len(summary['identified'])} parameters identified: {self.params.output}"
        return Status.SUCCESS
