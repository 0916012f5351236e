"""``capture``: close the docking hooks, but only when the TCP is inside the capture envelope.

YAML::

    - capture: {robot: arm, target: sirom, envelope: sirom}

The envelope error (``orbitree.skills.capture``: the TCP's offset from its docked pose, in the
target frame, mm and deg) is computed from the arm's pose and the latest vision estimate of the
target. Inside the envelope the hooks are closed and the leaf runs until the latch reports
CLOSED (SUCCESS) or FAULT / ``timeout`` (FAILURE); failed or halted before CLOSED, it reopens
them. Outside it the hooks are not touched and the leaf fails at once, naming the axes out of
range. The error is written to
``/capture/error`` and to the run summary (``final_error``, ``in_capture_envelope``); in the
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
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills.capture import ENVELOPES, EnvelopeError, envelope_error, violated_axes

Status = py_trees.common.Status


class CaptureParams(MotionParams):
    target: str
    envelope: EnvelopeName = Field("sirom", description="capture envelope to check")
    timeout: Duration = Field(5.0, gt=0.0, description="give up if the hooks have not closed")


class Capture(MotionLeaf):
    kind = "capture"
    Params = CaptureParams
    params: CaptureParams

    @classmethod
    def reads(cls, params: CaptureParams) -> list[str]:
        return [target_key(params.target, "pose_base"), robot_key(params.robot, "tcp_pose")]

    @classmethod
    def writes(cls, params: CaptureParams) -> list[str]:
        return ["/capture/error", "/capture/inside"]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        self.latch = self.require_latch()
        self.envelope = ENVELOPES[self.params.envelope]

    def start(self) -> Status:
        target = self.read(target_key(self.params.target, "pose_base"))
        error = envelope_error(self.read(self.robot_key("tcp_pose")), target.matrix)
        outside = violated_axes(self.envelope, error)
        self._record(error, inside=not outside)
        if outside:
            self.feedback_message = f"outside the capture envelope on {', '.join(outside)}"
            return Status.FAILURE
        self.latch.close()
        self.commanded("hooks", self.latch.open, "reopened")  # reopened unless they close
        self.deadline = self.ctx.now + self.params.timeout
        return Status.RUNNING

    def running(self) -> Status:
        state = self.latch.state()
        if state == LatchState.CLOSED:
            self.finished("hooks")
            self.feedback_message = "hooks closed"
            return Status.SUCCESS
        if state == LatchState.FAULT or self.ctx.now >= self.deadline:
            self.feedback_message = f"hooks did not close ({state.name.lower()})"
            return Status.FAILURE
        self.feedback_message = f"hooks {state.name.lower()}"
        return Status.RUNNING

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
