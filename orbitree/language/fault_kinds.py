"""The models of the fault kinds a mission's ``faults:`` may declare: what every fault has
(``FaultBase``: ``at`` or ``when``, ``for``), the arm's faults (``RobotFault``: ``robot``) and one
pydantic model per kind with its parameters, the table of kinds (``FAULT_MODELS``,
``FAULT_KINDS``) and the kinds that need a camera or a force/torque sensor.

What each kind does, and the schedule's timing, are in the docstring of
:mod:`orbitree.language.fault_spec`, which validates a ``faults:`` entry by its ``kind`` against
these models (and re-exports them), and checks the schedule against the mission.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orbitree.language.quantities import AngularSpeed, Duration, Force, PoseField, Speed, Torque

STATUSES = ("RUNNING", "SUCCESS", "FAILURE", "INVALID")


class FaultBase(BaseModel):
    """What every fault has: when it starts and how long it lasts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instantaneous: ClassVar[bool] = False  # happens once: 'for' does not apply

    at: Duration | None = Field(None, ge=0.0, description="mission time at which the fault starts")
    when: str | None = Field(
        None,
        description="event that starts it: '<node name or kind> <STATUS>' (RUNNING, SUCCESS, FAILURE, "
        "INVALID), e.g. 'approach RUNNING'",
    )
    duration: Duration | None = Field(
        None, gt=0.0, alias="for", description="how long it lasts (default: to the end of the run)"
    )

    @field_validator("when")
    @classmethod
    def _event(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = value.rsplit(None, 1)
        if len(parts) != 2 or parts[1].upper() not in STATUSES:
            raise ValueError(
                f"expected '<node name or kind> <STATUS>' with STATUS one of {', '.join(STATUSES)}, "
                f"e.g. 'approach RUNNING', got {value!r}"
            )
        return f"{parts[0].strip()} {parts[1].upper()}"

    @model_validator(mode="after")
    def _one_trigger(self) -> FaultBase:
        if (self.at is None) == (self.when is None):
            got = "both" if self.at is not None else "neither"
            raise ValueError(
                f"give exactly one of 'at' (a time, e.g. 'at: 5 s') or 'when' (an event, e.g. "
                f"'when: approach RUNNING'), got {got}"
            )
        if self.instantaneous and self.duration is not None:
            raise ValueError(f"{self.kind} happens once: 'for' does not apply")
        return self

    @property
    def when_node(self) -> str | None:
        return self.when.rsplit(None, 1)[0] if self.when else None

    @property
    def when_status(self) -> str | None:
        return self.when.rsplit(None, 1)[1] if self.when else None

    def trigger(self) -> str:
        return f"when {self.when}" if self.when is not None else f"at {self.at:g} s"

    def params(self) -> dict[str, Any]:
        """The kind's own parameters (and robot / target), JSON-ready, in SI."""
        return self.model_dump(mode="json", exclude={"kind", "at", "when", "duration"})


class RobotFault(FaultBase):
    robot: str | None = Field(None, description="the arm (default: the mission's only robot)")


class CameraDropoutFault(RobotFault):
    """The camera delivers no frames."""

    kind: Literal["camera_dropout"]


class MarkerOcclusionFault(RobotFault):
    """Markers are hidden in every frame."""

    kind: Literal["marker_occlusion"]
    markers: list[int] = Field(min_length=1, description="ArUco ids of the hidden markers")


class PoseNoiseFault(RobotFault):
    """Gaussian noise on the detected marker corners, before PnP."""

    kind: Literal["pose_noise"]
    sigma_px: float = Field(gt=0.0, description="standard deviation per pixel coordinate")


class CameraLatencyFault(RobotFault):
    """Frames arrive late (with their own stamps)."""

    kind: Literal["camera_latency"]
    delay: Duration = Field(gt=0.0, description="age of the frames delivered")


class FtBiasFault(RobotFault):
    """A constant offset on the wrist force/torque readings (TCP frame)."""

    kind: Literal["ft_bias"]
    force: tuple[Force, Force, Force] = Field((0.0, 0.0, 0.0), description="[fx, fy, fz] added")
    torque: tuple[Torque, Torque, Torque] = Field((0.0, 0.0, 0.0), description="[tx, ty, tz] added")


class FtSpikeFault(RobotFault):
    """One force reading off by ``magnitude`` (a glitch of the sensor)."""

    instantaneous: ClassVar[bool] = True
    kind: Literal["ft_spike"]
    magnitude: Force = Field(gt=0.0, description="size of the spike")
    axis: tuple[float, float, float] | None = Field(
        None, description="direction in the TCP frame (normalised; default: random from the seed)"
    )

    @field_validator("axis")
    @classmethod
    def _nonzero(cls, value: tuple[float, float, float] | None) -> tuple[float, float, float] | None:
        if value is not None and not np.linalg.norm(value) > 0.0:
            raise ValueError("axis must not be the zero vector")
        return value


class FtDropoutFault(RobotFault):
    """The F/T sensor stops delivering: readings are stale."""

    kind: Literal["ft_dropout"]


class ProtectiveStopFault(RobotFault):
    """The arm's controller enters a protective stop."""

    kind: Literal["protective_stop"]


class RobotDisconnectFault(RobotFault):
    """The connection to the arm is lost (reconnects when 'for' ends)."""

    kind: Literal["robot_disconnect"]


class CommandLatencyFault(RobotFault):
    """Commands reach the arm late."""

    kind: Literal["command_latency"]
    delay: Duration = Field(gt=0.0, description="delay of every command")


class TickOverrunFault(FaultBase):
    """Ticking a node takes longer than it should."""

    kind: Literal["tick_overrun"]
    node: str = Field(description="name (or else kind) of the node whose tick overruns")
    delay: Duration = Field(gt=0.0, description="extra time per tick")


class TargetBumpedFault(FaultBase):
    """The target is knocked out of place (simulation only): pushed along ``offset`` at a finite
    speed with a finite force, so a tool in its way holds it back (``SimWorld.push_target``)."""

    instantaneous: ClassVar[bool] = True
    kind: Literal["target_bumped"]
    target: str | None = Field(None, description="the target (default: the mission's only target)")
    offset: PoseField = Field(description="motion of the target, in its own frame")
    speed: Speed = Field(0.1, gt=0.0, description="how fast the bump moves the target")
    angular_speed: AngularSpeed = Field(
        math.radians(20.0), gt=0.0, description="how fast the bump turns the target"
    )
    force: Force = Field(
        50.0, gt=0.0, description="the most the bump pushes with: a tool holding the target back "
        "with more stops it short of the offset",
    )


class LatchFailureFault(RobotFault):
    """The docking hooks do not close."""

    kind: Literal["latch_failure"]


class StateSensorDropoutFault(FaultBase):
    """A satellite's state sensor (``targets.<name>.state_sensor``) stops delivering messages."""

    kind: Literal["state_sensor_dropout"]
    target: str | None = Field(
        None, description="the satellite (default: the mission's only target with a state_sensor)")


FAULT_MODELS: tuple[type[FaultBase], ...] = (
    CameraDropoutFault,
    MarkerOcclusionFault,
    PoseNoiseFault,
    CameraLatencyFault,
    FtBiasFault,
    FtSpikeFault,
    FtDropoutFault,
    ProtectiveStopFault,
    RobotDisconnectFault,
    CommandLatencyFault,
    TickOverrunFault,
    TargetBumpedFault,
    LatchFailureFault,
    StateSensorDropoutFault,
)
FAULT_KINDS: dict[str, type[FaultBase]] = {
    get_args(cls.model_fields["kind"].annotation)[0]: cls for cls in FAULT_MODELS
}
CAMERA_KINDS = frozenset({"camera_dropout", "marker_occlusion", "pose_noise", "camera_latency"})
FT_KINDS = frozenset({"ft_bias", "ft_spike", "ft_dropout"})
