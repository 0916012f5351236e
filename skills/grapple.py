"""Following a spinning target's grapple pad and complying once in contact, after the JPL dual-arm
grappling of a spinning satellite [JPL].

* **State estimate**: the vision message of [JPL] (time tag, pose, velocities) as
  :class:`StateEstimate`; it arrives every ``T`` seconds (about 0.5 s in the seed) and is already
  old when it arrives (the latency).
* **Seed tracking** (:func:`seed_tracking_start`, :func:`seed_tracking_step`): at each arrival the
  pad's frame is predicted, ``Δ`` (tool → goal) computed, and every control sample moves the
  commanded tool by ``δ = Δ·τ/T``, so the tool reaches the goal as the next state arrives.
  Aimed at the pad's frame at the arrival (as the seed does) it lags by about ``T``; aimed at the
  frame one ``T`` later it leads no more than the chord of the arc.
* **Rigid-body prediction** (:func:`predict_body`, :func:`predicted_pad`): the latest estimate
  integrated (Euler's equations with the inertia, :mod:`orbitree.skills.rigid_body`) from its time
  tag to the control sample, plus a ``lookahead`` for the arm's own delay; it continues its last
  result, so a tick costs one short RK4 step, not an integration from the time tag.
* **COMPLY** (:func:`comply_step`, :func:`comply_transform`): the small transform appended after
  the pad, ``tool = W_T_sat · sat_T_pad · COMPLY`` [JPL eq. 6–7], moved each sample by the integral
  of the wrench error, clamped, and left where it is once the error is nulled.

Frames: ``world`` is the arms' common frame; ``body`` the target's centre-of-mass frame; a pad's
frame has its z axis along the pad's outward normal (towards the tool that will grapple it).
Twists are ``[v, ω]``, wrenches ``[f, τ]`` (:mod:`orbitree.skills.se3`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.skills import rigid_body as rb
from orbitree.skills.se3 import check_pose, check_vector, pose_error

Sextuple = tuple[float, float, float, float, float, float]


def _positive(value: float, name: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


# ------------------------------------------------------------------------------ state estimate


@dataclass(frozen=True)
class StateEstimate:
    """A time-tagged rigid-body state as the seed's vision sends it.

    ``t`` (s, mission clock): when the measured images were taken, not when the message arrived;
    ``body2world`` (4, 4): the centre-of-mass frame; ``twist`` (6,): the centre of mass's velocity
    (m/s) and the angular velocity (rad/s), both in world axes.
    """

    t: float
    body2world: np.ndarray
    twist: np.ndarray

    @classmethod
    def of(cls, t: float, position: np.ndarray, quaternion: np.ndarray, velocity: np.ndarray,
           angular_velocity: np.ndarray) -> StateEstimate:
        """From the message's parts: ``position`` (3,) m, ``quaternion`` (4,) scalar-last body →
        world (normalised here), ``velocity`` (3,) m/s and ``angular_velocity`` (3,) rad/s, world."""
        if not math.isfinite(t):
            raise ValueError(f"t must be finite, got {t}")
        quat = check_vector(quaternion, 4, "quaternion")
        if abs(np.linalg.norm(quat) - 1.0) > 1e-3:
            raise ValueError(f"quaternion must be unit (within 1e-3), got norm {np.linalg.norm(quat):.6f}")
        pose = np.eye(4)
        pose[:3, :3] = Rotation.from_quat(quat).as_matrix()
        pose[:3, 3] = check_vector(position, 3, "position")
        twist = np.concatenate([check_vector(velocity, 3, "velocity"),
                                check_vector(angular_velocity, 3, "angular_velocity")])
        return cls(float(t), pose, twist)

    def __post_init__(self) -> None:
        object.__setattr__(self, "body2world", check_pose(self.body2world, "body2world"))
        object.__setattr__(self, "twist", check_vector(self.twist, 6, "twist"))


# ------------------------------------------------------------------------------ rigid-body prediction


@dataclass(frozen=True)
class BodyPrediction:
    """An estimate carried forward to time ``t``: attitude and body-frame rate (``attitude``),
    centre-of-mass ``position`` and ``velocity`` (3,) world; ``source_t`` is the time tag of the
    estimate it came from (a new estimate restarts the prediction)."""

    t: float
    attitude: rb.AttitudeState
    position: np.ndarray
    velocity: np.ndarray
    source_t: float

    def body2world(self) -> np.ndarray:
        """The predicted centre-of-mass frame (4, 4)."""
        pose = np.eye(4)
        pose[:3, :3] = self.attitude.attitude.as_matrix()
        pose[:3, 3] = self.position
        return pose


def predict_body(estimate: StateEstimate, inertia: np.ndarray, now: float, previous: BodyPrediction | None = None,
                 dt: float = 0.01, torque: rb.TorqueFn | None = None) -> BodyPrediction:
    """The body at ``now`` (s) from ``estimate``, through Euler's equations with ``inertia`` (3, 3,
    body frame, kg·m²) and an optional body torque; the centre of mass moves at constant velocity.

    When ``previous`` came from the same estimate and is not later than ``now``, it is continued
    (steps of at most ``dt``) instead of integrating again from the time tag. ``now`` may precede
    the time tag (a backward integration).
    """
    _positive(dt, "dt")
    if not math.isfinite(now):
        raise ValueError(f"now must be finite, got {now}")
    if previous is not None and previous.source_t == estimate.t and previous.t <= now:
        start = previous
    else:
        rotation = Rotation.from_matrix(estimate.body2world[:3, :3])
        w_body = rotation.inv().apply(estimate.twist[3:])
        start = BodyPrediction(estimate.t, rb.AttitudeState.of(estimate.t, rotation, w_body),
                               estimate.body2world[:3, 3].copy(), estimate.twist[:3].copy(), estimate.t)
    horizon = now - start.t
    attitude = start.attitude if horizon == 0.0 else rb.propagate(start.attitude, inertia, horizon, dt, torque)
    return BodyPrediction(float(now), attitude, start.position + start.velocity * horizon, start.velocity,
                          start.source_t)


def predicted_pad(prediction: BodyPrediction, inertia: np.ndarray, pad2body: np.ndarray, lookahead: float = 0.0,
                  dt: float = 0.01) -> np.ndarray:
    """pad2world (4, 4) ``lookahead`` seconds after ``prediction`` (torque-free over the lookahead).

    ``pad2body`` (4, 4): the pad in the body frame. The lookahead compensates the delay between
    the command and the arm being there (a control period plus the servo's lag); it is not stored.
    """
    pad = check_pose(pad2body, "pad2body")
    if not math.isfinite(lookahead):
        raise ValueError(f"lookahead must be finite, got {lookahead}")
    if lookahead == 0.0:
        return prediction.body2world() @ pad
    ahead = rb.propagate(prediction.attitude, inertia, lookahead, _positive(dt, "dt"))
    pose = np.eye(4)
    pose[:3, :3] = ahead.attitude.as_matrix()
    pose[:3, 3] = prediction.position + prediction.velocity * lookahead
    return pose @ pad


def standoff(pad2world: np.ndarray, distance: float) -> np.ndarray:
    """The goal frame (4, 4) ``distance`` m out along the pad's normal (its z axis): the seed's
    stand-off, faked in [JPL] by a tool 100 mm longer than it is and shortened to contact."""
    if not math.isfinite(distance):
        raise ValueError(f"distance must be finite, got {distance}")
    goal = check_pose(pad2world, "pad2world").copy()
    goal[:3, 3] += distance * goal[:3, 2]
    return goal


# ------------------------------------------------------------------------------ seed tracking


@dataclass(frozen=True)
class SeedTracking:
    """The seed's interpolation between state arrivals: the commanded tool frame (4, 4, world)
    and the step ``δ`` added to it every control sample: ``step`` (6,) = [translation (m),
    rotation vector (rad)], world axes."""

    commanded2world: np.ndarray
    step: np.ndarray


def seed_tracking_start(tool2world: np.ndarray, goal2world: np.ndarray, state_period: float,
                        control_period: float) -> SeedTracking:
    """At a state arrival: ``Δ`` from the tool's frame (4, 4, measured from the joints) to the goal
    (4, 4), and ``δ = Δ·τ/T`` with ``τ = control_period`` and ``T = state_period`` (s) [JPL]."""
    ratio = _positive(control_period, "control_period") / _positive(state_period, "state_period")
    tool = check_pose(tool2world, "tool2world")
    return SeedTracking(tool.copy(), pose_error(tool, goal2world) * ratio)


def seed_tracking_step(tracking: SeedTracking) -> SeedTracking:
    """One control sample: the commanded frame moved by ``δ`` (translation added, rotation applied
    about a fixed world axis, so ``T/τ`` samples land exactly on the goal). If the next state is
    late the tool keeps moving at the same rate, as the seed's law does."""
    pose = tracking.commanded2world.copy()
    pose[:3, 3] += tracking.step[:3]
    pose[:3, :3] = Rotation.from_rotvec(tracking.step[3:]).as_matrix() @ pose[:3, :3]
    return SeedTracking(pose, tracking.step)


# ------------------------------------------------------------------------------ COMPLY


def _sextuple(values: Sextuple, name: str, positive: bool) -> Sextuple:
    out = tuple(float(v) for v in values)
    if len(out) != 6 or not all(math.isfinite(v) for v in out):
        raise ValueError(f"ComplyParams.{name} must be 6 finite numbers, got {out}")
    if positive and min(out) <= 0.0:
        raise ValueError(f"ComplyParams.{name} must be > 0 on every axis, got {out}")
    return out  # type: ignore[return-value]


@dataclass(frozen=True)
class ComplyParams:
    """The integral force law, per pad axis, translation first.

    ``gain`` (m/(N·s), rad/(N·m·s)) > 0; ``limit`` (m, rad) > 0 bounds each offset;
    ``target_wrench`` (N, N·m): the wrench the tool should feel (a preload presses the pad);
    dead bands (N, N·m) >= 0: errors under them (by norm) are not integrated, so sensor noise does
    not walk the transform once the forces are nulled.
    Against a contact of stiffness ``k``, ``k·gain·dt`` is the fraction of the error removed per
    sample: below 1 the error decays monotonically, at 2 it diverges (:func:`comply_gain`).
    """

    gain: Sextuple
    limit: Sextuple = (0.05, 0.05, 0.05, 0.2, 0.2, 0.2)
    target_wrench: Sextuple = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    force_dead_band: float = 0.0
    torque_dead_band: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "gain", _sextuple(self.gain, "gain", True))
        object.__setattr__(self, "limit", _sextuple(self.limit, "limit", True))
        object.__setattr__(self, "target_wrench", _sextuple(self.target_wrench, "target_wrench", False))
        for key in ("force_dead_band", "torque_dead_band"):
            value = float(getattr(self, key))
            if not math.isfinite(value) or value < 0.0:
                raise ValueError(f"ComplyParams.{key} must be finite and >= 0, got {value}")
            object.__setattr__(self, key, value)


def comply_gain(stiffness: float, dt: float, fraction: float = 0.3) -> float:
    """The gain (m/(N·s) or rad/(N·m·s)) that removes ``fraction`` of the wrench error per sample
    of ``dt`` s against a contact of ``stiffness`` (N/m or N·m/rad): ``fraction/(stiffness·dt)``."""
    if not 0.0 < fraction < 2.0:
        raise ValueError(f"fraction must be in (0, 2) for a stable loop, got {fraction}")
    return fraction / (_positive(stiffness, "stiffness") * _positive(dt, "dt"))


@dataclass(frozen=True)
class ComplyState:
    """The COMPLY offset ``[δx, δy, δz, δθx, δθy, δθz]`` (6,) in pad axes, m and rad."""

    offset: np.ndarray

    @classmethod
    def zero(cls) -> ComplyState:
        return cls(np.zeros(6))


def comply_step(state: ComplyState, wrench: np.ndarray, dt: float, params: ComplyParams) -> ComplyState:
    """One sample of the integral law: ``δ ← clamp(δ + dt·K·(F − F_target), ±limit)``.

    ``wrench`` (6,): what the tool feels from the pad (the sensor's reading at the pad point, pad
    axes; pushing into the pad along −z reads +f_z). The offset moves along the felt force, so the
    tool yields until the error is nulled, then stays. Clamping is the anti-windup: at the bound
    the integral stops growing, and it leaves the bound as soon as the error changes sign.
    """
    error = check_vector(wrench, 6, "wrench") - params.target_wrench
    if np.linalg.norm(error[:3]) < params.force_dead_band:
        error[:3] = 0.0
    if np.linalg.norm(error[3:]) < params.torque_dead_band:
        error[3:] = 0.0
    limit = np.asarray(params.limit)
    offset = np.clip(state.offset + _positive(dt, "dt") * np.asarray(params.gain) * error, -limit, limit)
    return ComplyState(offset)


def comply_transform(state: ComplyState, first_order: bool = False) -> np.ndarray:
    """The COMPLY transform (4, 4) of [JPL] eq. 7. ``first_order=True`` gives the seed's matrix
    ``[[1, −δθz, δθy, δx], [δθz, 1, −δθx, δy], [−δθy, δθx, 1, δz], [0, 0, 0, 1]]`` (not exactly a
    rotation); the default replaces its rotation block with ``exp([δθ]×)``, equal to first order
    and a proper rotation, so the result can be composed and checked like any pose."""
    dx, dy, dz, ax, ay, az = check_vector(state.offset, 6, "offset")
    out = np.eye(4)
    out[:3, 3] = dx, dy, dz
    if first_order:
        out[:3, :3] = [[1.0, -az, ay], [az, 1.0, -ax], [-ay, ax, 1.0]]
    else:
        out[:3, :3] = Rotation.from_rotvec([ax, ay, az]).as_matrix()
    return out


# ------------------------------------------------------------------------------ approach timing


def facing_time(prediction: BodyPrediction, inertia: np.ndarray, pad2body: np.ndarray, toward: np.ndarray,
                after: float, horizon: float, dt: float = 0.02) -> tuple[float, float]:
    """When, between ``after`` and ``after + horizon`` (s, mission clock, ``after`` not before the
    prediction's time), the pad's normal points most nearly at ``toward`` (3,) m, world (an arm's
    base): the first local maximum of ``n̂ · (toward − p)/|toward − p|`` (torque-free body).
    Returns (time, that cosine); the best sample if the cosine only rises or falls over the horizon.
    The moment the seed's arms wait for: "the pads are facing the tools".
    """
    point = check_vector(toward, 3, "toward")
    _positive(horizon, "horizon")
    step = _positive(dt, "dt")
    if after < prediction.t - 1e-9:
        raise ValueError(f"after ({after}) precedes the prediction's time ({prediction.t})")
    state = rb.propagate(prediction.attitude, inertia, after - prediction.t, step) if after > prediction.t \
        else prediction.attitude
    pad = check_pose(pad2body, "pad2body")

    def score(attitude: rb.AttitudeState, t: float) -> float:
        rotation = attitude.attitude.as_matrix()
        position = prediction.position + prediction.velocity * (t - prediction.t) + rotation @ pad[:3, 3]
        normal = rotation @ pad[:3, 2]
        direction = point - position
        return float(normal @ direction / max(np.linalg.norm(direction), 1e-12))

    t = after
    best = (t, score(state, t))
    previous = best[1]
    rising = False
    for _ in range(max(1, math.ceil(horizon / step))):
        state = rb.step(state, inertia, step)
        t += step
        value = score(state, t)
        if value > best[1]:
            best = (t, value)
        if rising and value < previous:
            return t - step, previous
        rising = value > previous
        previous = value
    return best
