"""``capture``: close the docking hooks, only inside the capture envelope, complying while they pull.

YAML::

    - capture: {robot: arm, target: sirom, envelope: sirom}
    - capture: {robot: arm, target: sirom, comply: {damping: [8000, 8000, 8000, 160, 160, 160]}}
    - capture: {robot: arm, target: sirom, comply: null}     # hold the arm still instead

The envelope error (``orbitree.skills.capture``: the TCP's offset from its docked pose, in the
target frame, mm and deg) is computed from the arm's pose and the latest vision estimate of the
target. Inside the envelope the wrist sensor is zeroed (the arm is still and clear of contact at
the aim pose, as UR programs zero it before a force task; ``zero_ft: false`` skips it), the
hooks are closed and, as the SIROM paper couples under force control, the arm complies
(``comply``, ``orbitree.nodes.compliance``: the admittance law on the filtered wrist wrench, sent
as ``speed_l``) while the hooks pull the interfaces together and the guide petals centre them.
The leaf runs until the latch reports CLOSED (SUCCESS; the arm is stopped) or FAULT (the hooks
jammed or closed on nothing; the latch's reason, when it gives one, is the feedback) or
``timeout`` passes (FAILURE); failed or halted before CLOSED, it reopens them. At two wrist
readings in a row above ``comply.max_force`` the arm stops and the capture fails: the compliance
is not holding the contact. Outside the envelope the hooks are not touched and the leaf fails at
once, naming the axes out of range. The error is written to ``/capture/error`` and to the run
summary (``final_error``, ``in_capture_envelope``; ``capture_peak_force_n``, the largest filtered
wrist force while the hooks closed; ``capture_failed``, why the hooks did not close); in the
simulated world the summary also gets the error against ground truth (``final_error_true``,
``in_capture_envelope_true``), which the leaf never acts on.
"""

from __future__ import annotations

import py_trees
from pydantic import Field

from orbitree.drivers.interfaces import LatchState
from orbitree.language.keys import robot_key, target_key
from orbitree.language.params import EnvelopeName
from orbitree.language.quantities import Duration
from orbitree.nodes.compliance import AdmittanceLoop, Compliance
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills.capture import ENVELOPES, EnvelopeError, envelope_error, violated_axes
from orbitree.skills.se3 import vector_norm

Status = py_trees.common.Status


class CaptureParams(MotionParams):
    target: str
    envelope: EnvelopeName = Field("sirom", description="capture envelope to check")
    timeout: Duration = Field(5.0, gt=0.0, description="give up if the hooks have not closed")
    comply: Compliance | None = Field(
        default_factory=Compliance, description="admittance while the hooks close (null: hold the arm still)")
    zero_ft: bool = Field(True, description="zero the wrist sensor before closing the hooks")


class Capture(MotionLeaf):
    kind = "capture"
    Params = CaptureParams
    params: CaptureParams

    @classmethod
    def reads(cls, params: CaptureParams) -> list[str]:
        keys = [target_key(params.target, "pose_base"), robot_key(params.robot, "tcp_pose")]
        return keys + ([robot_key(params.robot, "wrench")] if params.comply is not None else [])

    @classmethod
    def writes(cls, params: CaptureParams) -> list[str]:
        return ["/capture/error", "/capture/inside"]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        self.latch = self.require_latch()
        self.envelope = ENVELOPES[self.params.envelope]
        comply = self.params.comply
        self.loop = None if comply is None else AdmittanceLoop.from_params(comply, self.ctx.period)

    def start(self) -> Status:
        target = self.read(target_key(self.params.target, "pose_base"))
        error = envelope_error(self.read(self.robot_key("tcp_pose")), target.matrix)
        outside = violated_axes(self.envelope, error)
        self._record(error, inside=not outside)
        if outside:
            self.feedback_message = f"outside the capture envelope on {', '.join(outside)}"
            return Status.FAILURE
        if self.params.zero_ft:
            self.robot.zero_ft()
        self.latch.close()
        self.commanded("hooks", self.latch.open, "reopened")  # reopened unless they close
        self.deadline = self.ctx.now + self.params.timeout
        self.peak_force = 0.0
        if self.loop is not None:
            self.loop.reset()
        return Status.RUNNING

    def running(self) -> Status:
        state = self.latch.state()
        if state == LatchState.CLOSED:
            self.finished("hooks")
            self.feedback_message = "hooks closed"
            return Status.SUCCESS
        if state == LatchState.FAULT or self.ctx.now >= self.deadline:
            reason = getattr(getattr(self.latch, "inner", None), "fault", None)
            return self._failed(f"hooks did not close ({reason or state.name.lower()})")
        self.feedback_message = f"hooks {state.name.lower()}"
        if self.loop is not None:
            return self._comply()
        return Status.RUNNING

    def _comply(self) -> Status:
        comply = self.params.comply
        assert comply is not None and self.loop is not None
        key = self.robot_key("wrench")
        fresh = self.ctx.age(key) == 0.0
        force = self.loop.sense(self.read(key), self.read(self.robot_key("tcp_pose")), fresh)
        magnitude = vector_norm(force[:3])
        if self.loop.ready:  # until the window is full, one spike could be all it holds
            self.peak_force = max(self.peak_force, magnitude)
            self.ctx.summary["capture_peak_force_n"] = round(self.peak_force, 3)
        if self.loop.overloaded(comply.max_force, fresh):
            self.ctx.event("contact_force_limit", node=self.name, force_n=round(self.loop.raw_force, 3))
            return self._failed(f"contact force {self.loop.raw_force:.0f} N over {comply.max_force:g} N while the "
                                "hooks closed: the compliance does not hold this contact; stopped")
        self.speed_l(self.loop.step(), comply.acceleration)
        self.feedback_message += f", |F| = {magnitude:.1f} N"
        return Status.RUNNING

    def _failed(self, why: str) -> Status:
        self.feedback_message = why
        self.ctx.summary["capture_failed"] = why
        return Status.FAILURE

    def _record(self, error: EnvelopeError, inside: bool) -> None:
        """The error on the blackboard and in the summary; in simulation also against ground truth."""
        self.write("/capture/error", error.as_dict())
        self.write("/capture/inside", inside)
        self.ctx.summary["final_error"] = {k: round(v, 4) for k, v in error.as_dict().items()}
        self.ctx.summary["in_capture_envelope"] = inside
        world = self.ctx.world
        if world is not None:  # for reports only: the leaf never acts on ground truth
            truth = envelope_error(world.tool_pose(self.params.robot), world.target_pose(self.params.target))
            self.ctx.summary["final_error_true"] = {k: round(v, 4) for k, v in truth.as_dict().items()}
            self.ctx.summary["in_capture_envelope_true"] = not violated_axes(self.envelope, truth)
