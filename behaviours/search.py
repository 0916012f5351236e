"""``search``: sweep the camera over the table until the target is seen.

YAML::

    - search:
        robot: arm
        target: sirom
        sweep: {center: [-0.7, 0.0], size: [0.6, 0.6], height: 0.6 m, spacing: 0.2 m}
        dwell: 300 ms              # pause at each configuration so the camera can look

or with explicit joint configurations (degrees unless units are given)::

        sweep: [[0, -90, 90, -90, -90, 0], [20, -90, 90, -90, -90, 0]]

The arm visits the configurations with joint moves; the leaf succeeds as soon as
``/target/<target>/visible`` turns true (a ``perceive`` leaf runs beside it), stopping the arm
and storing the configuration reached in ``/search/resume_q``. A later search resumes from
there (``resume: true``). It fails once the whole sweep has been covered without a sighting.

A table sweep is planned (inverse kinematics of every camera position) when the leaf first
runs: 60-200 ms of work. On the simulated clock it is done in that tick; in a run paced by the
wall clock (``--realtime``, hardware) it is done beside the tick (``orbitree.nodes.offload``),
the leaf RUNNING and the arm still meanwhile, so the loop keeps its period.
"""

from __future__ import annotations

import numpy as np
import py_trees
from pydantic import BaseModel, ConfigDict, Field

from orbitree.language.keys import SEARCH_RESUME_Q, robot_key
from orbitree.language.quantities import AngleDeg, AngularSpeed, Length
from orbitree.nodes.motion import WaypointLeaf, WaypointParams
from orbitree.nodes.offload import Offload
from orbitree.skills.search import resume_index, table_sweep

RESUME_KEY = SEARCH_RESUME_Q


class Sweep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    center: tuple[Length, Length] = Field(description="centre of the table area (base frame)")
    size: tuple[Length, Length] = Field(description="width and depth of the area")
    height: Length = Field(description="camera height above the base frame origin")
    spacing: Length = Field(0.2, gt=0.0, description="distance between camera positions")


class SearchParams(WaypointParams):
    sweep: Sweep | list[tuple[AngleDeg, AngleDeg, AngleDeg, AngleDeg, AngleDeg, AngleDeg]]
    speed: AngularSpeed = Field(1.0, gt=0.0, description="joint speed of the sweep moves")
    acceleration: float = Field(2.0, gt=0.0, description="joint acceleration, rad/s²")
    resume: bool = Field(True, description="start from the configuration of the last search")


class Search(WaypointLeaf):
    kind = "search"
    Params = SearchParams
    params: SearchParams

    @classmethod
    def reads(cls, params: SearchParams) -> list[str]:
        return [*super().reads(params), robot_key(params.robot, "q"), RESUME_KEY]

    @classmethod
    def writes(cls, params: SearchParams) -> list[str]:
        return [RESUME_KEY]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        self.sweep: list[np.ndarray] | None = None  # planned on the first run, kept for the next
        # a table sweep planned beside a wall-clock tick (see the module docstring)
        self.planner: Offload[np.ndarray, list[np.ndarray]] | None = None
        if self.ctx.concurrent and not isinstance(self.params.sweep, list):
            self.planner = Offload(self._configurations, threaded=True, name=f"{self.name} plan")
        self.planning = False

    def start(self) -> py_trees.common.Status:
        if self.sweep is None and self.planner is not None:
            if not self.planner.pending:
                self.planner.submit(self.ctx.now, self.ctx.now, np.array(self.read(self.robot_key("q"))))
            self.planning = True
            self.feedback_message = "planning the sweep"
            return py_trees.common.Status.RUNNING
        return super().start()

    def running(self) -> py_trees.common.Status:
        if self.planning:
            done = self.planner.ready(self.ctx.now) if self.planner is not None else []
            if not done:
                return py_trees.common.Status.RUNNING
            self.sweep, self.planning = done[-1].result, False
            return super().start()
        return super().running()

    def plan(self) -> tuple[list[np.ndarray], int]:
        if self.sweep is None:
            self.sweep = self._configurations(np.array(self.read(self.robot_key("q"))))
        resume_q = self.read(RESUME_KEY) if self.params.resume else None
        return self.sweep, resume_index(self.sweep, resume_q)

    def _configurations(self, q_seed: np.ndarray) -> list[np.ndarray]:
        """The sweep's joint configurations; ``q_seed`` (6,) starts the inverse kinematics."""
        sweep = self.params.sweep
        if isinstance(sweep, list):
            return [np.array(q) for q in sweep]
        spec = self.device.spec
        cam2tcp = self.device.cam2tcp if self.device.cam2tcp is not None else np.eye(4)
        return table_sweep(
            np.array(sweep.center), np.array(sweep.size), sweep.height, sweep.spacing,
            cam2tcp, spec.tool.matrix(), q_seed,
        )

    def go(self, index: int) -> None:
        self.move_j(self.waypoints[index], self.params.speed, self.params.acceleration)
        self.feedback_message = f"configuration {index + 1}/{len(self.waypoints)}"

    def seen(self) -> None:
        self.write(RESUME_KEY, np.array(self.read(self.robot_key("q"))))
        self.feedback_message = f"target seen at configuration {self.index + 1}"

    def missed(self) -> None:
        self.write(RESUME_KEY, None)
        self.feedback_message = "swept the whole area without seeing the target"
