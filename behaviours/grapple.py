"""``grapple``: after contact, comply with the pad (COMPLY), press the tool's Velcro on, hold it.

YAML::

    - grapple:
        robot: left
        target: mockup
        fixture: pad_left
        press: 30 N              # the preload that engages the Velcro
        hold: 100 ms             # pressed at the pad's engage force this long: held
        partners: [right]        # succeed only once these arms hold theirs too (same revolution)
        wait: 1 s                # how long to wait for them
        max_force: 60 N          # stop and fail at two readings in a row above it

The force servoing of [JPL] (eq. 6): ``tool = W_T_sat · sat_T_pad · COMPLY``, the pad's frame
predicted from the last state estimate before contact (new estimates are not taken: their
noise would jerk a tool stuck to the pad) and ``COMPLY`` a small transform in the pad's axes,
started at the tool's offset from the predicted pad at contact and moved every tick by the
integral of the wrist force error (``orbitree.skills.grapple.comply_step``: time constant ``settle``
of the error per tick against the pad's stiffness, dead band over the sensor's noise), so the
prediction's error is taken up and kept once the forces are nulled. The target force is
``press`` into the pad until the mean force along the pad's normal over ``hold`` reaches the
pad's ``engage_force`` (``targets.<t>.fixtures.<f>.engage_force``): the Velcro is on; the
preload is then let go (target zero force). It writes ``/grapple/<robot>/held`` and, when
``partners`` all hold theirs, succeeds with its last command running on (``despin`` takes
over in the same tick). Ended any other way (failed, or halted because the other arm missed its
pad), the tool lets go of the pad (``release``) before the arm stops. FAILURE: no engagement
within ``timeout``, a partner not holding within ``wait``, or the force over ``max_force``.
Writes ``/grapple/<robot>/force`` (the force the arm pushes the body with, world, N).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import py_trees
from pydantic import Field
from scipy.spatial.transform import Rotation

from orbitree.language.keys import robot_key, target_key
from orbitree.language.quantities import Duration, Force
from orbitree.nodes.grappling import TOOL_ON_PAD, GrappleRecord, Predictor, TargetModel, base_of, force_on_body
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills import grapple as gr

Status = py_trees.common.Status


class GrappleParams(MotionParams):
    target: str
    fixture: str
    press: Force = Field(30.0, gt=0.0, description="preload along the pad's normal until the Velcro engages")
    hold: Duration = Field(0.1, ge=0.0, description="pressed at the engage force this long: held")
    settle: Duration = Field(0.03, gt=0.0, description="COMPLY: time constant of the force loop (the share of the "
                            "error removed per tick is tick/settle, at most 0.3)")
    dead_band: Force = Field(4.0, ge=0.0, description="COMPLY: force errors under this are not integrated")
    partners: list[str] = Field([], description="arms that must hold their pads too before this succeeds")
    wait: Duration = Field(1.0, ge=0.0, description="how long to wait for the partners")
    max_force: Force = Field(60.0, gt=0.0, description="stop and fail at two readings in a row above this")
    timeout: Duration = Field(2.0, gt=0.0, description="fail if the Velcro has not engaged by then")


class Grapple(MotionLeaf):
    kind = "grapple"
    Params = GrappleParams
    params: GrappleParams

    @classmethod
    def reads(cls, params: GrappleParams) -> list[str]:
        keys = [target_key(params.target, "state"), robot_key(params.robot, "tcp_pose"),
                robot_key(params.robot, "wrench")]
        return keys + [f"/grapple/{p}/held" for p in params.partners]

    @classmethod
    def writes(cls, params: GrappleParams) -> list[str]:
        return [f"/grapple/{params.robot}/held", f"/grapple/{params.robot}/force"]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        self.model = TargetModel.of(self.ctx, self.params.target)
        self.pad = self.model.pad(self.params.fixture)
        self.base2world = base_of(self.device)
        k = self.pad.stiffness
        gain = gr.comply_gain(k, self.ctx.period, min(0.3, self.ctx.period / self.params.settle))
        self.comply_params = (gain, gain, gain, 1e-3, 1e-3, 1e-3)

    def start(self) -> Status:
        self.predictor = Predictor(self.model.inertia)
        if not self.predictor.update(self.read(target_key(self.params.target, "state"))):
            self.feedback_message = "no state of the target"
            return Status.FAILURE
        pad = self._pad()
        offset = np.linalg.solve(pad, self._tool() @ np.linalg.inv(TOOL_ON_PAD))
        rotvec = Rotation.from_matrix(offset[:3, :3]).as_rotvec()
        self.comply = gr.ComplyState(np.concatenate([offset[:3, 3], rotvec]))
        self._law(self.params.press)
        self.readings: deque[np.ndarray] = deque(maxlen=max(1, round(self.params.hold / self.ctx.period)))
        self.held_t: float | None = None
        self.over = 0
        self.deadline = self.ctx.now + self.params.timeout
        self.write(f"/grapple/{self.params.robot}/held", False)
        self.record = GrappleRecord.of(self.ctx)
        # ended any way but held (failed, halted because the other arm missed), the tool lets go:
        # an arm stopped while stuck to a spinning pad would be dragged
        self.commanded("tool", self._let_go, "let go of the pad")
        return Status.RUNNING

    def running(self) -> Status:
        p = self.params
        tool = self._tool()
        wrench = self.read(self.robot_key("wrench"))
        fresh = self.ctx.age(self.robot_key("wrench")) == 0.0
        felt = TOOL_ON_PAD[:3, :3] @ np.asarray(wrench[:3], float)  # pad axes: pressing reads +z
        self.write(f"/grapple/{p.robot}/force", force_on_body(wrench, tool))
        if fresh:
            self.readings.append(felt)
            self.over = self.over + 1 if np.linalg.norm(felt) > p.max_force else 0
        self.record.truth(self.ctx, p.target)
        if self.over >= 2:
            self.feedback_message = f"force {np.linalg.norm(felt):.0f} N over {p.max_force:g} N: stopped"
            self.ctx.event("grapple_force_limit", node=self.name, robot=p.robot)
            return Status.FAILURE
        if self.held_t is None:
            mean = np.mean(self.readings, axis=0)
            if len(self.readings) == self.readings.maxlen and mean[2] >= self.pad.engage_force:
                self.held_t = self.ctx.now
                self._law(0.0)  # the Velcro holds: let the preload go
                self.write(f"/grapple/{p.robot}/held", True)
            elif self.ctx.now >= self.deadline:
                self.feedback_message = f"the Velcro did not engage in {p.timeout:g} s"
                return Status.FAILURE
        if self.held_t is not None:
            waiting = [a for a in p.partners if not self.read(f"/grapple/{a}/held", False)]
            if not waiting:
                self.comply = gr.comply_step(self.comply, self._error(felt), self.ctx.period, self.law)
                self._servo(self._command())
                self.finished("arm")  # its last command runs on; despin takes over this tick
                self.finished("tool")
                self.feedback_message = "held"
                return Status.SUCCESS
            if self.ctx.now - self.held_t > p.wait:
                self.feedback_message = f"held, but {', '.join(waiting)} not within {p.wait:g} s"
                return Status.FAILURE
        if fresh:
            self.comply = gr.comply_step(self.comply, self._error(felt), self.ctx.period, self.law)
        self._servo(self._command())
        self.feedback_message = f"complying, {felt[2]:.1f} N on the pad" + (", held" if self.held_t else "")
        return Status.RUNNING

    # -- helpers -----------------------------------------------------------------------------------
    def _let_go(self) -> None:
        world = self.ctx.world
        if world is not None and hasattr(world, "release_tool"):
            world.release_tool(self.params.robot)
            self.ctx.command(self.params.robot, "release_tool", target=self.params.target)

    def _law(self, press: float) -> None:
        self.law = gr.ComplyParams(gain=self.comply_params, target_wrench=(0.0, 0.0, press, 0.0, 0.0, 0.0),
                                   force_dead_band=self.params.dead_band, torque_dead_band=1e9)

    def _error(self, felt: np.ndarray) -> np.ndarray:
        return np.concatenate([felt, np.zeros(3)])

    def _pad(self, ahead: float = 0.0) -> np.ndarray:
        return self.predictor.pad(self.ctx.now, self.pad.pad2body, ahead)

    def _command(self) -> np.ndarray:
        return self._pad(self.ctx.period) @ gr.comply_transform(self.comply) @ TOOL_ON_PAD

    def _tool(self) -> np.ndarray:
        return self.base2world @ self.read(self.robot_key("tcp_pose"))

    def _servo(self, tool2world: np.ndarray) -> None:
        self.robot.servo_l(np.linalg.solve(self.base2world, tool2world))
        self.commanded("arm", self.robot.stop)
