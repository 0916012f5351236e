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
"""

from __future__ import annotations

import numpy as np
import py_trees
from pydantic import BaseModel, ConfigDict, Field

from orbitree.language.quantities import AngleDeg, AngularSpeed, Duration, Length
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills.search import resume_index, table_sweep

Status = py_trees.common.Status
RESUME_KEY = "/search/resume_q"


class Sweep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    center: tuple[Length, Length] = Field(description="centre of the table area (base frame)")
    size: tuple[Length, Length] = Field(description="width and depth of the area")
    height: Length = Field(description="camera height above the base frame origin")
    spacing: Length = Field(0.2, gt=0.0, description="distance between camera positions")


class SearchParams(MotionParams):
    target: str
    sweep: Sweep | list[tuple[AngleDeg, AngleDeg, AngleDeg, AngleDeg, AngleDeg, AngleDeg]]
    dwell: Duration = Field(0.3, ge=0.0)
    speed: AngularSpeed = Field(1.0, gt=0.0, description="joint speed of the sweep moves")
    acceleration: float = Field(2.0, gt=0.0, description="joint acceleration, rad/s²")
    resume: bool = Field(True, description="start from the configuration of the last search")


class Search(MotionLeaf):
    kind = "search"
    Params = SearchParams
    params: SearchParams

    @classmethod
    def reads(cls, params: SearchParams) -> list[str]:
        return [f"/target/{params.target}/visible", f"/robot/{params.robot}/q", RESUME_KEY]

    @classmethod
    def writes(cls, params: SearchParams) -> list[str]:
        return [RESUME_KEY]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        self.sweep: list[np.ndarray] | None = None

    def _configurations(self) -> list[np.ndarray]:
        sweep = self.params.sweep
        if isinstance(sweep, list):
            return [np.array(q) for q in sweep]
        spec = self.device.spec
        cam2tcp = self.device.cam2tcp if self.device.cam2tcp is not None else np.eye(4)
        return table_sweep(
            np.array(sweep.center), np.array(sweep.size), sweep.height, sweep.spacing,
            cam2tcp, spec.tool.matrix(), np.array(self.read(self.robot_key("q"))),
        )

    def initialise(self) -> None:
        if self.sweep is None:
            self.sweep = self._configurations()
        resume_q = self.read(RESUME_KEY) if self.params.resume else None
        self.index = resume_index(self.sweep, resume_q)
        self.dwell_until: float | None = None
        self._go()

    def _go(self) -> None:
        self.robot.move_j(self.sweep[self.index], self.params.speed, self.params.acceleration)
        self.moving = True
        self.feedback_message = f"configuration {self.index + 1}/{len(self.sweep)}"

    def update(self) -> Status:
        if self.read(f"/target/{self.params.target}/visible"):
            self.robot.stop()
            self.moving = False
            self.write(RESUME_KEY, np.array(self.read(self.robot_key("q"))))
            self.feedback_message = f"target seen at configuration {self.index + 1}"
            return Status.SUCCESS
        if not self.robot.motion_done():
            return Status.RUNNING
        if self.dwell_until is None:
            self.dwell_until = self.ctx.now + self.params.dwell
        if self.ctx.now < self.dwell_until - 1e-9:
            return Status.RUNNING
        self.dwell_until = None
        self.index += 1
        if self.index >= len(self.sweep):
            self.moving = False
            self.write(RESUME_KEY, None)
            self.feedback_message = "swept the whole area without seeing the target"
            return Status.FAILURE
        self._go()
        return Status.RUNNING
