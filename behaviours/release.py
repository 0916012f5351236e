"""``release``: let go of the pad an arm's grappling tool holds.

YAML::

    - release: {robot: left, target: mockup}

For a safe abort after a grapple: the tool's hold on the pad (the Velcro of the seed's grappling
tool) is let go, so the arm can back off (``retract``) without pulling the target. In the
simulated world this is ``SimWorld.release_tool``; a mission with hardware arms has no model of
the grappling tool's gripper yet, and the leaf fails saying so. SUCCESS at once (also when the
tool held nothing); ``/grapple/<robot>/held`` becomes false.
"""

from __future__ import annotations

import py_trees

from orbitree.nodes.motion import MotionLeaf, MotionParams

Status = py_trees.common.Status


class ReleaseParams(MotionParams):
    target: str


class Release(MotionLeaf):
    kind = "release"
    Params = ReleaseParams
    params: ReleaseParams

    @classmethod
    def writes(cls, params: ReleaseParams) -> list[str]:
        return [f"/grapple/{params.robot}/held"]

    def start(self) -> Status:
        world = self.ctx.world
        if world is None or not hasattr(world, "release_tool"):
            self.feedback_message = "no grappling-tool gripper on this arm (simulated worlds only)"
            return Status.FAILURE
        count = world.release_tool(self.params.robot)
        self.ctx.command(self.params.robot, "release_tool", target=self.params.target)
        self.write(f"/grapple/{self.params.robot}/held", False)
        self.feedback_message = f"let go of {count} pad(s)"
        return Status.SUCCESS
