"""``perceive``: estimate a target's pose from the arm's eye-in-hand camera.

YAML::

    - perceive: {robot: arm, target: sirom}                  # SUCCESS if seen, else FAILURE
    - parallel:
        policy: selected
        selected: [approach]
        children:
          - perceive: {robot: arm, target: sirom, continuous: true}   # keeps estimating
          - approach: {robot: arm, target: sirom}

Each new camera frame is searched for the target's marker board (``orbitree.skills.board``'s
``BoardTracker``: the last frame's markers aligned where the last pose and the arm's motion since
put them, else ArUco detection there, else on the whole image; corner refinement, planar PnP with
the ambiguity resolved by reprojection error and the predicted pose). The search runs beside the
tick, never in it (``orbitree.nodes.offload``): in a run paced by the wall clock (``--realtime``,
hardware) a worker thread takes the newest frame and its estimate is used from the first tick after
it is done; on the simulated clock the estimate is computed at once but becomes visible only
``processing_latency`` after the frame arrived (the time the robot's computer would take), so a run
stays the same for a seed whatever the host did. It writes ``/target/<target>/pose_cam`` (board in
the camera frame), ``pose_base`` (board in the robot base frame, through the camera mount and the
TCP pose of the same tick), ``visible`` and ``last_seen``. Between frames it keeps its last answer.
The base-frame pose uses the arm's pose at the frame's stamp (interpolated in a one-second history
of the arm's poses, one per tick), so a frame that arrives late is still placed right: a camera's
frames carry the instant they were taken, not the tick that reads them. When no new frame has come
for ``frame_timeout``, ``visible`` turns false. ``continuous: true`` makes it stay RUNNING (for use
beside a motion in a parallel); otherwise it is RUNNING while a frame's estimate is on its way,
then SUCCESS if the target was seen in the first frame it answers for, else FAILURE. """

from __future__ import annotations

import bisect
import math
from collections import deque
from operator import itemgetter

import numpy as np
import py_trees
from pydantic import Field

from orbitree.drivers.lazy_frame import LazyFrame
from orbitree.language.keys import robot_key, target_key
from orbitree.language.params import NodeParams
from orbitree.language.quantities import Duration
from orbitree.nodes.leaf import Leaf
from orbitree.nodes.messages import StampedPose
from orbitree.nodes.offload import Offload
from orbitree.skills.board import BoardPose, BoardTracker
from orbitree.skills.board_model import BOARDS, make_aruco_board
from orbitree.skills.se3 import interpolate_pose

TARGET_KEYS = ("pose_cam", "pose_base", "visible", "last_seen")  # what perception writes of a target
POSE_HISTORY_S = 1.0  # how far back frames may be placed with the arm's pose


class PerceiveParams(NodeParams):
    robot: str = Field(description="arm carrying the camera")
    target: str = Field(description="target to look for")
    continuous: bool = Field(False, description="stay RUNNING and keep estimating")
    max_reprojection_px: float = Field(2.0, gt=0.0, description="reject worse estimates")
    frame_timeout: Duration = Field(0.25, gt=0.0, description="no new frame for this long: not visible")
    processing_latency: Duration = Field(
        0.02, ge=0.0, description="simulated clock: a frame's estimate is visible this long after the frame "
        "arrives (the tracker's time per 720p frame on a 2-core computer, with margin); paced by the "
        "wall clock, when it is computed")


class Perceive(Leaf):
    kind = "perceive"
    Params = PerceiveParams
    params: PerceiveParams

    @classmethod
    def reads(cls, params: PerceiveParams) -> list[str]:
        return [robot_key(params.robot, "image"), robot_key(params.robot, "tcp_pose")]

    @classmethod
    def writes(cls, params: PerceiveParams) -> list[str]:
        return [target_key(params.target, k) for k in TARGET_KEYS]

    def setup(self, **kwargs: object) -> None:
        device = self.ctx.drivers[self.params.robot]
        if device.camera is None or device.cam2tcp is None:
            raise RuntimeError(f"robot {self.params.robot!r} has no camera")
        intr = device.camera.intrinsics
        self.camera_matrix, self.dist = intr.camera_matrix, intr.dist_coeffs
        self.cam2tcp = device.cam2tcp
        board_name = self.ctx.targets[self.params.target].board
        self.board = make_aruco_board(BOARDS[board_name]())
        self.tracker = BoardTracker(self.board, self.camera_matrix, self.dist)
        self.worker: Offload[tuple, BoardPose | None] = Offload(
            self._search, threaded=self.ctx.concurrent, latency=self.params.processing_latency,
            name=f"perceive {self.params.target}")
        self.keys = {k: target_key(self.params.target, k) for k in TARGET_KEYS}
        self.last_stamp = -math.inf
        self.last_frame_at = 0.0
        self.poses: deque[tuple[float, np.ndarray]] = deque()
        self.interpolated: dict[tuple[float, float, float], np.ndarray] = {}  # _pose_at's, by (stamp, t0, t1)
        self.visible = False
        self.seen: BoardPose | None = None  # the newest estimate, and the stamp of its frame
        self.seen_stamp = -math.inf
        self.write(self.keys["visible"], False)

    def initialise(self) -> None:
        self.answered = False  # single shot: done at the first estimate (or miss) published

    def terminate(self, new_status: py_trees.common.Status) -> None:
        if new_status == py_trees.common.Status.INVALID and hasattr(self, "worker"):
            self.worker.close()  # halted: the thread ends (a later submit starts it again)

    def update(self) -> py_trees.common.Status:
        tcp2base = self.read(robot_key(self.params.robot, "tcp_pose"))
        self.poses.append((self.ctx.now, tcp2base))
        while len(self.poses) > 2 and self.poses[1][0] < self.ctx.now - POSE_HISTORY_S:
            self.poses.popleft()
        frame = self.read(robot_key(self.params.robot, "image"))
        if frame is not None and frame.stamp > self.last_stamp:
            self.last_stamp = frame.stamp
            self.last_frame_at = self.ctx.now
            self.worker.submit(self.ctx.now, frame.stamp, self._job(frame))
        elif self.visible and self.ctx.now - self.last_frame_at > self.params.frame_timeout:
            self.visible = False  # a camera that stopped delivering sees nothing
            self.write(self.keys["visible"], False)
            self.feedback_message = f"no frame for {self.ctx.now - self.last_frame_at:.2f} s"
        for done in self.worker.ready(self.ctx.now):
            self._publish(done.stamp, done.result)
        if self.params.continuous or (self.worker.pending and not self.answered):
            return py_trees.common.Status.RUNNING
        return py_trees.common.Status.SUCCESS if self.visible else py_trees.common.Status.FAILURE

    def _job(self, frame) -> tuple:
        """What the search needs, taken in the tick: the image, the pose predicted for it (the
        last estimate carried by the camera's motion since its frame) and the fault's noise."""
        prior = None
        if self.seen is not None and self.visible:
            then = self._pose_at(self.seen_stamp) @ self.cam2tcp
            now = self._pose_at(frame.stamp) @ self.cam2tcp
            prior = np.linalg.solve(now, then) @ self.seen.board2cam  # board2cam at the new frame
        noise = frame.meta.get("corner_noise_px", 0.0)  # the pose_noise fault (orbitree.language.fault_spec)
        # a frame made on demand goes as it is: the tracker asks it for the windows it reads
        image = frame if isinstance(frame, LazyFrame) else frame.image
        return image, prior, noise, frame.meta.get("corner_noise_seed")

    def _search(self, job: tuple) -> BoardPose | None:
        """The tracker on one frame (beside the tick: touches nothing but the tracker)."""
        image, prior, noise, seed = job
        return self.tracker.update(image, prior, corner_noise_px=noise,
                                   rng=np.random.default_rng(seed) if noise else None)

    def _pose_at(self, stamp: float) -> np.ndarray:
        """The arm's TCP pose at ``stamp``: interpolated between the two ticks around it (the
        oldest kept, or the newest, outside the history)."""
        k = bisect.bisect_left(self.poses, stamp, key=_TIME)  # no list of the times per call
        if k == 0:
            return self.poses[0][1]
        if k == len(self.poses):
            return self.poses[-1][1]
        (t0, a), (t1, b) = self.poses[k - 1], self.poses[k]
        if t1 <= t0:
            return b
        # a frame's pose is asked for when its search starts, when its estimate is published and
        # when the next frame's search starts: interpolated once (the two ticks around a stamp,
        # once both are kept, are the same ticks until they leave the history)
        key = (stamp, t0, t1)
        pose = self.interpolated.get(key)
        if pose is None:
            if len(self.interpolated) >= 8:
                self.interpolated.clear()
            pose = self.interpolated[key] = interpolate_pose(a, b, (stamp - t0) / (t1 - t0))
        return pose

    def _publish(self, stamp: float, found: BoardPose | None) -> None:
        self.answered = True
        if stamp < self.seen_stamp:
            return  # an older frame's estimate after a newer one's
        if found is None or found.reprojection_error_px > self.params.max_reprojection_px:
            self.visible = False
            self.write(self.keys["visible"], False)
            self.feedback_message = "target not seen" if found is None else "estimate rejected"
            return
        self.seen, self.seen_stamp = found, stamp
        # the arm's pose when the frame was taken (frames may arrive late: camera latency)
        tcp2base = self._pose_at(stamp)
        cam2base = tcp2base @ self.cam2tcp
        err, markers = found.reprojection_error_px, found.marker_ids
        self.write(self.keys["pose_cam"], StampedPose(found.board2cam, "camera", stamp, err, markers))
        board2base = cam2base @ found.board2cam
        self.write(self.keys["pose_base"], StampedPose(board2base, "base", stamp, err, markers))
        self.write(self.keys["visible"], True)
        self.write(self.keys["last_seen"], stamp)
        self.visible = True
        distance = float(np.linalg.norm(found.board2cam[:3, 3]))
        self.feedback_message = f"seen at {distance:.3f} m, markers {list(markers)}, {err:.2f} px"


_TIME = itemgetter(0)  # a pose's time in Perceive.poses
