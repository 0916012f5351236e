"""Circle-point kinematic calibration ([CirclePoint], after Sklar): simulate the measurement, identify
the Denavit–Hartenberg / Hayati–Mirmirani parameters from it.

Each joint ``j`` is turned alone through ``points[j]`` stops while a laser-tracker reflector on link
``j`` is measured; the points lie on a circle about the joint's axis. A least-squares plane through
them gives the axis direction ``S_j`` (the normal), a circle fitted in that plane (algebraic start,
Gauss–Newton refinement of the geometric distances) a point on the axis (the centre). Each axis is
the Plücker line ``(S_j, S0_j = centre × S_j)``; from consecutive lines follow the link parameters
in the conventions of :mod:`orbitree.skills.kinematics`
(``T_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i) Ry(beta_i)``):

* a plain DH link takes the common normal of axes ``i`` and ``i + 1`` (skew lines; ``a = 0`` when
  they intersect; the normal through the previous origin when they are parallel, ``d`` nominal);
* a Hayati–Mirmirani link (nominally parallel axes, ``hm`` in the table) keeps ``d`` nominal (0):
  the next origin is where axis ``i + 1`` crosses the plane normal to axis ``i`` through the
  previous origin, and ``beta = atan2(S_k·x, cos beta)`` is the tilt of axis ``i + 1`` out of it.

``d1`` and ``theta1`` come from the robot-to-tracker transform (the base frame in tracker
coordinates). The last link's parameters are not observable from axes (nothing locates the
flange along or about axis n): they stay nominal, as do ``d`` of HM links and ``beta`` of DH links.
The direction of each ``S_j`` and of each common normal is the nominal model's, and identified
angles are wrapped to within 180 deg of their nominal values (``theta5 = 180`` would otherwise
jump between -180 and 180).

Arrays carry a leading batch axis (one entry per Monte Carlo iteration). Geometry is in SI (metres,
radians); :func:`identify` returns the 30 parameters ``d1..d6, theta1..theta6, a1..a6,
alpha1..alpha6, beta1..beta6`` in mm and degrees, ``theta`` being the offset added to the joint
reading.

The plane and circle fits and the Plücker lines are in :mod:`orbitree.skills.axis_fit` (re-exported
here); this module holds the parameters' names, the link parameters from axes, the identification
and the simulated measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from orbitree.skills.axis_fit import (
    GAUSS_NEWTON_STEPS,
    NEARLY_PARALLEL_DEG,
    PARALLEL_SINE,
    Axis,
    _dot,
    _unit,
    fit_axis,
    fit_circle,
    fit_plane,
    line_point,
    line_relation,
    plucker,
)
from orbitree.skills.kinematics import DHTable, link_frames, link_transform

KINDS = ("d", "theta", "a", "alpha", "beta")
UNITS = {"d": "mm", "theta": "deg", "a": "mm", "alpha": "deg", "beta": "deg"}
ERROR_TERMS = ("dx", "dy", "dz", "ex", "ey")  # joint error motions: translations (m), tilts (rad)

__all__ = [
    "ERROR_TERMS",
    "GAUSS_NEWTON_STEPS",
    "KINDS",
    "NEARLY_PARALLEL_DEG",
    "PARALLEL_SINE",
    "UNITS",
    "Axis",
    "JointErrors",
    "Link",
    "Measurement",
    "check_model",
    "fit_axis",
    "fit_circle",
    "fit_plane",
    "identified_names",
    "identify",
    "identify_measurement",
    "line_point",
    "line_relation",
    "link_from_axes",
    "nominal_axes",
    "nominal_parameters",
    "parameter_names",
    "plucker",
    "simulate",
    "unit_of",
]


def parameter_names(n_joints: int = 6) -> tuple[str, ...]:
    """``('d1', ..., 'd6', 'theta1', ..., 'beta6')``: kinds in the thesis's order, then joints."""
    return tuple(f"{kind}{i}" for kind in KINDS for i in range(1, n_joints + 1))


def unit_of(name: str) -> str:
    return UNITS[name.rstrip("0123456789")]


def identified_names(table: DHTable) -> tuple[str, ...]:
    """The parameters the axes determine; the others keep their nominal values: every parameter of
    the last link, ``d`` of Hayati–Mirmirani links and ``beta`` of DH links."""
    n = table.n_joints
    out = []
    for kind in KINDS:
        for i in range(n - 1):
            if (kind == "d" and table.hm[i]) or (kind == "beta" and not table.hm[i]):
                continue
            out.append(f"{kind}{i + 1}")
    return tuple(out)


def nominal_parameters(table: DHTable) -> dict[str, float]:
    """The table's 5 n parameters by name, lengths in mm and angles in degrees."""
    columns = {"d": table.d, "theta": table.theta_offset, "a": table.a, "alpha": table.alpha, "beta": table.beta}
    out = {}
    for kind, values in columns.items():
        scale = 1e3 if UNITS[kind] == "mm" else 180.0 / np.pi
        out |= {f"{kind}{i + 1}": float(v) * scale for i, v in enumerate(values)}
    return out


# ------------------------------------------------------------------------------- angles


def _wrap_near(angle: np.ndarray, reference: float) -> np.ndarray:
    """``angle`` moved by whole turns to within pi of ``reference`` (radians)."""
    return reference + np.mod(angle - reference + np.pi, 2.0 * np.pi) - np.pi


# ------------------------------------------------------------------------------- link parameters


class Link(NamedTuple):
    """One link's parameters (SI, batched) and the frame it ends in (origin and x axis)."""

    d: np.ndarray
    theta: np.ndarray  # angle from the previous x axis to this link's common normal, about S_j
    a: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    origin: np.ndarray  # (..., 3) on axis k
    x: np.ndarray  # (..., 3) unit, normal to axis k


def link_from_axes(
    s_j: np.ndarray, m_j: np.ndarray, s_k: np.ndarray, m_k: np.ndarray,
    origin: np.ndarray, x_prev: np.ndarray, x_nominal: np.ndarray,
    *, hayati: bool, d_nominal: float = 0.0,
) -> Link:
    """The link between axis ``j`` (``s_j, m_j``: Plücker, unit direction) and the next axis ``k``.

    ``origin`` (..., 3) is the previous frame's origin (on axis j, or near it for the base frame);
    ``x_prev`` (..., 3) its x axis, normal to ``s_j``; ``x_nominal`` (3,) the nominal direction of
    this link's x axis, which fixes the sign of the common normal. ``hayati`` selects the
    Hayati–Mirmirani construction (``d = d_nominal``, tilt ``beta``); otherwise DH's common
    normal, with the parallel case (no unique normal) taking the one at ``d = d_nominal``.
    """
    p_j = line_point(s_j, m_j, origin)
    p_k = line_point(s_k, m_k, p_j)
    if hayati:
        foot_j = p_j + d_nominal * s_j
        # axis k meets the plane through foot_j normal to axis j
        foot_k = p_k + (_dot(s_j, foot_j - p_k) / _dot(s_j, s_k))[..., None] * s_k
        x = _signed_unit(foot_k - foot_j, x_nominal, s_j)
        beta = np.arcsin(np.clip(_dot(s_k, x), -1.0, 1.0))
    else:
        normal = np.cross(s_j, s_k)
        sine2 = _dot(normal, normal)
        parallel = sine2 < PARALLEL_SINE**2
        safe = np.where(parallel, 1.0, sine2)
        w, b = p_j - p_k, _dot(s_j, s_k)
        dj, dk = _dot(s_j, w), _dot(s_k, w)
        foot_j = p_j + ((b * dk - dj) / safe)[..., None] * s_j
        foot_k = p_k + ((dk - b * dj) / safe)[..., None] * s_k
        x = normal / np.sqrt(safe)[..., None]
        x = np.where((_dot(x, x_nominal) < 0.0)[..., None], -x, x)
        if np.any(parallel):
            par_j = p_j + d_nominal * s_j
            par_k = line_point(s_k, m_k, par_j)
            par_x = _signed_unit(par_k - par_j, x_nominal, s_j)
            foot_j = np.where(parallel[..., None], par_j, foot_j)
            foot_k = np.where(parallel[..., None], par_k, foot_k)
            x = np.where(parallel[..., None], par_x, x)
        beta = np.zeros(np.shape(b))
    d = _dot(foot_j - origin, s_j)
    a = _dot(foot_k - foot_j, x)
    theta = np.arctan2(_dot(np.cross(x_prev, x), s_j), _dot(x_prev, x))
    alpha = np.arctan2(_dot(s_k, np.cross(x, s_j)), _dot(s_k, s_j))
    x_next = _unit(x - _dot(x, s_k)[..., None] * s_k)  # Ry(beta) turns x out of the plane normal to S_j
    return Link(d, theta, a, alpha, beta, foot_k, x_next)


def _signed_unit(v: np.ndarray, nominal: np.ndarray, s_j: np.ndarray) -> np.ndarray:
    """``v`` normalised and turned along ``nominal``; the nominal direction (made normal to ``s_j``)
    where ``v`` vanishes (coincident axes: any normal will do)."""
    length = np.linalg.norm(v, axis=-1, keepdims=True)
    fallback = _unit(nominal - _dot(nominal, s_j)[..., None] * s_j)
    out = np.where(length > 1e-15, v / np.where(length > 1e-15, length, 1.0), fallback)
    return np.where((_dot(out, nominal) < 0.0)[..., None], -out, out)


def nominal_axes(table: DHTable, q: np.ndarray, robot2tracker: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nominal joint axes' directions ``z_0..z_{n-1}`` and frames' x axes ``x_0..x_n``, (n, 3) and
    (n + 1, 3), in tracker coordinates at joints ``q`` (rad)."""
    frames = robot2tracker @ link_frames(table, q)[:-1]
    return frames[:-1, :3, 2], frames[:, :3, 0]


def identify(
    axes: Sequence[Axis], table: DHTable, q: np.ndarray, robot2tracker: np.ndarray
) -> dict[str, np.ndarray]:
    """The 5 n parameters (mm, deg; each (...)) from the n measured joint axes.

    ``axes[j]`` is axis ``j + 1`` in tracker coordinates, located with the arm at joints ``q`` (n,)
    rad (each joint rests where its own sweep ended); ``table`` is the nominal model (which joints
    are Hayati–Mirmirani, the directions of axes and normals, and the parameters no axis shows);
    ``robot2tracker`` (4, 4) the base frame in tracker coordinates (gives ``d1`` and ``theta1``).
    """
    n = table.n_joints
    if len(axes) != n:
        raise ValueError(f"need {n} axes (one per joint), got {len(axes)}")
    z_nom, x_nom = nominal_axes(table, np.asarray(q, dtype=float), robot2tracker)
    lines = []
    for axis, z in zip(axes, z_nom, strict=True):
        flip = np.where(_dot(axis.direction, z) < 0.0, -1.0, 1.0)[..., None]
        lines.append((axis.direction * flip, axis.moment * flip))
    s_1 = lines[0][0]
    origin = np.broadcast_to(robot2tracker[:3, 3], s_1.shape)
    x_prev = _unit(x_nom[0] - _dot(x_nom[0], s_1)[..., None] * s_1)
    columns: dict[str, list[np.ndarray]] = {kind: [] for kind in KINDS}
    for i in range(n - 1):
        link = link_from_axes(*lines[i], *lines[i + 1], origin, x_prev, x_nom[i + 1],
                              hayati=table.hm[i], d_nominal=table.d[i])
        columns["d"].append(link.d if not table.hm[i] else np.full(link.d.shape, table.d[i]))
        columns["theta"].append(_wrap_near(link.theta - q[i], table.theta_offset[i]))
        columns["a"].append(link.a)
        columns["alpha"].append(_wrap_near(link.alpha, table.alpha[i]))
        columns["beta"].append(link.beta)
        origin, x_prev = link.origin, link.x
    shape = np.shape(s_1)[:-1]
    for kind, values in zip(KINDS, (table.d, table.theta_offset, table.a, table.alpha, table.beta), strict=True):
        columns[kind].append(np.full(shape, values[n - 1]))  # the flange: not observable from axes
    out = {}
    for kind, values in columns.items():
        scale = 1e3 if UNITS[kind] == "mm" else 180.0 / np.pi
        out |= {f"{kind}{i + 1}": value * scale for i, value in enumerate(values)}
    return out


def check_model(table: DHTable, q: np.ndarray) -> list[tuple[int, str]]:
    """Problems of the nominal model at joints ``q`` (rad), as (joint index, sentence): a DH joint whose
    axis and the next are (nearly) parallel needs Hayati–Mirmirani, and an HM joint needs them so."""
    frames = link_frames(table, np.asarray(q, dtype=float))
    problems = []
    for i in range(table.n_joints - 1):
        (s_j, m_j), (s_k, m_k) = (plucker(f[:3, 2], f[:3, 3]) for f in (frames[i], frames[i + 1]))
        relation = line_relation(s_j, m_j, s_k, m_k)
        parallel = relation in ("parallel", "nearly parallel", "coincident")
        if parallel and not table.hm[i]:
            problems.append((i, f"joint {i + 1}: axes {i + 1} and {i + 2} are {relation}, so DH's d is "
                                "ill-conditioned; give the joint a beta (Hayati–Mirmirani)"))
        if table.hm[i] and not parallel:
            problems.append((i, f"joint {i + 1}: axes {i + 1} and {i + 2} are {relation}, not parallel: "
                                "Hayati–Mirmirani (beta) is for nominally parallel axes"))
    return problems


# ------------------------------------------------------------------------------- the measurement


@dataclass(frozen=True)
class JointErrors:
    """Error motions of each joint about its nominal rotation ([CirclePoint]'s ``Err``): per joint and
    term ``dx, dy, dz`` (m) and ``ex, ey`` (rad, tilts about the fixed x and y axes), the value
    ``amplitude · sin(2π/period · q + phase) + N(0, jitter²)`` at joint reading ``q`` (rad). Arrays
    (n, 5); ``period`` and ``phase`` in radians."""

    amplitude: np.ndarray
    period: np.ndarray
    phase: np.ndarray
    jitter: np.ndarray

    @property
    def active(self) -> bool:
        return bool(np.any(self.amplitude) or np.any(self.jitter))

    @property
    def random(self) -> bool:
        return bool(np.any(self.jitter))


@dataclass(frozen=True)
class Measurement:
    """The inputs of one circle-point measurement ([CirclePoint], Table 2), SI.

    ``q0`` (n,) rad: the joints at the start; joint ``j`` then turns alone from ``q0[j]`` through
    ``swept[j]`` in ``points[j]`` evenly spaced stops (both ends included) and stays at the last one.
    ``reflector`` (n, 3) m: the reflector on link ``j``, in the frame whose z is axis ``j`` (frame
    ``j - 1``, fixed while joint ``j`` turns) at the start of its sweep. ``robot2tracker`` (4, 4):
    the base frame in tracker coordinates; points are measured in the tracker frame with a Gaussian
    error per coordinate of ``noise_a + noise_b · L`` (m), ``L`` the distance from the tracker (m).
    """

    table: DHTable
    q0: np.ndarray
    swept: np.ndarray
    points: tuple[int, ...]
    reflector: np.ndarray
    robot2tracker: np.ndarray = field(default_factory=lambda: np.eye(4))
    noise_a: float = 0.0
    noise_b: float = 0.0
    errors: JointErrors | None = None

    @property
    def q_final(self) -> np.ndarray:
        """The joints where the axes are located: each joint at the end of its sweep."""
        return np.asarray(self.q0, dtype=float) + np.asarray(self.swept, dtype=float)

    def stops(self, j: int) -> np.ndarray:
        """Joint ``j``'s readings at its stops (rad), (points[j],)."""
        return self.q0[j] + np.linspace(0.0, self.swept[j], self.points[j])


def _error_transforms(errors: JointErrors, j: int, q: np.ndarray, rng: np.random.Generator | None,
                      batch: int) -> np.ndarray:
    """``Trans(dx, dy, dz) · Rx(ex) · Ry(ey)`` at each reading: (batch or 1, len(q), 4, 4)."""
    terms = errors.amplitude[j] * np.sin(2.0 * np.pi / errors.period[j] * q[:, None] + errors.phase[j])
    if rng is not None and errors.random:
        terms = terms + errors.jitter[j] * rng.standard_normal((batch, len(q), 5))
    else:
        terms = terms[None]
    dx, dy, dz, ex, ey = np.moveaxis(terms, -1, 0)
    cx, sx, cy, sy = np.cos(ex), np.sin(ex), np.cos(ey), np.sin(ey)
    out = np.zeros((*terms.shape[:-1], 4, 4))
    out[..., 0, :] = np.stack([cy, np.zeros_like(cy), sy, dx], axis=-1)
    out[..., 1, :] = np.stack([sx * sy, cx, -sx * cy, dy], axis=-1)
    out[..., 2, :] = np.stack([-cx * sy, sx, cx * cy, dz], axis=-1)
    out[..., 3, 3] = 1.0
    return out


def simulate(measurement: Measurement, rng: np.random.Generator | None, batch: int = 1) -> list[np.ndarray]:
    """Measured reflector positions, one (batch, points[j], 3) array per joint, tracker frame (m).

    With ``rng`` None: the exact points (no tracker noise, no jitter of the joint errors).
    """
    m, table = measurement, measurement.table
    errors = m.errors if m.errors is not None and m.errors.active else None
    frame = m.robot2tracker[None]  # (1 or batch, 4, 4): frame j - 1, the fixed frame of joint j
    out = []
    for j in range(table.n_joints):
        q = m.stops(j)
        turn = q - m.q0[j]
        c, s = np.cos(turn), np.sin(turn)
        px, py, pz = m.reflector[j]
        local = np.stack([c * px - s * py, s * px + c * py, np.full_like(c, pz), np.ones_like(c)], axis=-1)
        if errors is not None:
            moves = _error_transforms(errors, j, q, rng, batch)
            local = np.matmul(moves, local[..., None])[..., 0]  # (1 or batch, N, 4)
            rest = moves[:, -1]  # the joint stays at its last stop, with that stop's error
        else:
            local = local[None]
            rest = np.eye(4)[None]
        out.append(np.matmul(frame[:, None], local[..., None])[..., :3, 0])
        link = link_transform(table.d[j], q[-1] + table.theta_offset[j], table.a[j], table.alpha[j], table.beta[j])
        frame = np.matmul(np.matmul(frame, rest), link)
    if rng is None:
        return out
    noisy = []
    for exact in out:
        exact = np.broadcast_to(exact, (batch, *exact.shape[1:]))
        # the tracker sits at the origin of its own frame: L is the point's distance from it
        sigma = m.noise_a + m.noise_b * np.linalg.norm(exact, axis=-1, keepdims=True)
        noisy.append(exact + sigma * rng.standard_normal(exact.shape))
    return noisy


def identify_measurement(measurement: Measurement, points: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Fit the axes of ``points`` (from :func:`simulate`) and identify the parameters (mm, deg)."""
    z_nom, _ = nominal_axes(measurement.table, measurement.q_final, measurement.robot2tracker)
    axes = [fit_axis(p, towards=z) for p, z in zip(points, z_nom, strict=True)]
    return identify(axes, measurement.table, measurement.q_final, measurement.robot2tracker)
