"""Orbit mechanics for servicing missions: Keplerian elements, TLEs (SGP4), the LVLH frame,
Clohessy–Wiltshire relative motion and the gravity-gradient torque.

SI units throughout: metres, seconds, radians, kg·m². Frames: ECI is an Earth-centred inertial
frame; :func:`sgp4_state` returns TEME (the frame SGP4 works in, close to but not the same as
J2000/GCRS: convert before mixing with other ephemerides). LVLH here is the frame of the
on-orbit servicing simulation of Ramón, Pomares and Felicetti [OnOrbitROS]: x radial (away from
the Earth), y along-track, z along the orbit normal (the angular momentum).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable

import numpy as np
from scipy.integrate import solve_ivp

from orbitree.skills.se3 import check_vector

MU_EARTH = 3.986004418e14  # m³/s², the Earth's gravitational parameter (IERS / WGS-84)
KEPLER_TOLERANCE = 1e-12  # rad, on the eccentric anomaly


# ------------------------------------------------------------------------------ Kepler


def solve_kepler(mean_anomaly: float, e: float) -> float:
    """Eccentric anomaly E (rad) with ``E - e sin E = M``, by Newton's method to 1e-12 rad."""
    if not 0.0 <= e < 1.0:
        raise ValueError(f"eccentricity must be in [0, 1) for an ellipse, got {e}")
    m = math.remainder(mean_anomaly, 2.0 * math.pi)
    big_e = m if e < 0.8 else math.copysign(math.pi, m) if m else 0.0
    for _ in range(60):
        step = (big_e - e * math.sin(big_e) - m) / (1.0 - e * math.cos(big_e))
        big_e -= step
        if abs(step) < KEPLER_TOLERANCE:
            return big_e
    raise RuntimeError(f"Kepler's equation did not converge (M = {mean_anomaly}, e = {e})")


def true_from_eccentric(big_e: float, e: float) -> float:
    return 2.0 * math.atan2(math.sqrt(1.0 + e) * math.sin(big_e / 2), math.sqrt(1.0 - e) * math.cos(big_e / 2))


def eccentric_from_true(nu: float, e: float) -> float:
    return 2.0 * math.atan2(math.sqrt(1.0 - e) * math.sin(nu / 2), math.sqrt(1.0 + e) * math.cos(nu / 2))


def _perifocal_to_eci(i: float, raan: float, argp: float) -> np.ndarray:
    """Rotation (3, 3) R3(-raan) R1(-i) R3(-argp): perifocal axes to ECI."""
    cr, sr, ci, si, ca, sa = (math.cos(raan), math.sin(raan), math.cos(i), math.sin(i),
                              math.cos(argp), math.sin(argp))
    return np.array([
        [cr * ca - sr * sa * ci, -cr * sa - sr * ca * ci, sr * si],
        [sr * ca + cr * sa * ci, -sr * sa + cr * ca * ci, -cr * si],
        [sa * si, ca * si, ci],
    ])


def kepler_to_state(a: float, e: float, i: float, raan: float, argp: float, nu: float,
                    mu: float = MU_EARTH) -> tuple[np.ndarray, np.ndarray]:
    """ECI position (3,) m and velocity (3,) m/s of an elliptic orbit's point at true anomaly ``nu``.

    ``a`` semi-major axis (m), ``e`` eccentricity in [0, 1), ``i`` inclination, ``raan`` right
    ascension of the ascending node, ``argp`` argument of periapsis, ``nu`` true anomaly (rad).
    """
    if a <= 0.0 or not 0.0 <= e < 1.0:
        raise ValueError(f"an elliptic orbit needs a > 0 and 0 <= e < 1, got a = {a}, e = {e}")
    p = a * (1.0 - e * e)
    r_pf = p / (1.0 + e * math.cos(nu)) * np.array([math.cos(nu), math.sin(nu), 0.0])
    v_pf = math.sqrt(mu / p) * np.array([-math.sin(nu), e + math.cos(nu), 0.0])
    rotation = _perifocal_to_eci(i, raan, argp)
    return rotation @ r_pf, rotation @ v_pf


def propagate_kepler(a: float, e: float, i: float, raan: float, argp: float, nu0: float, t: float,
                     mu: float = MU_EARTH) -> tuple[np.ndarray, np.ndarray]:
    """The two-body state ``t`` seconds after the element set's epoch (true anomaly ``nu0``)."""
    n = math.sqrt(mu / a**3)
    big_e0 = eccentric_from_true(nu0, e)
    m = big_e0 - e * math.sin(big_e0) + n * t
    nu = true_from_eccentric(solve_kepler(m, e), e)
    return kepler_to_state(a, e, i, raan, argp, nu, mu)


def mean_motion(a: float, mu: float = MU_EARTH) -> float:
    """n = sqrt(μ / a³), rad/s."""
    return math.sqrt(mu / a**3)


# ------------------------------------------------------------------------------ TLE / SGP4


def check_tle(line1: str, line2: str, *, checksum: bool = True) -> None:
    """ValueError naming what is wrong with a two-line element set: line numbers, length (69
    columns), the satellite number the two lines share, the modulo-10 checksum of each line."""
    for number, line in ((1, line1), (2, line2)):
        check_tle_line(number, line, checksum=checksum)
    if line1[2:7] != line2[2:7]:
        raise ValueError(f"the TLE's lines name two satellites: {line1[2:7]!r} and {line2[2:7]!r}")


def check_tle_line(number: int, line: str, *, checksum: bool = True) -> None:
    """ValueError naming what is wrong with line ``number`` (1 or 2) of a TLE (see :func:`check_tle`)."""
    if len(line) != 69:
        raise ValueError(f"TLE line {number} has {len(line)} columns, a TLE line has 69")
    if not line.startswith(f"{number} "):
        raise ValueError(f"TLE line {number} must start with '{number} ', got {line[:2]!r}")
    total = sum(int(c) if c.isdigit() else 1 if c == "-" else 0 for c in line[:68])
    if checksum and (not line[68].isdigit() or total % 10 != int(line[68])):
        raise ValueError(f"TLE line {number}: checksum {line[68]!r} should be {total % 10} (column 69)")


def sgp4_state(
    line1: str, line2: str, when: dt.datetime, *, checksum: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """TEME position (3,) m and velocity (3,) m/s at UTC time ``when`` from a two-line element set.

    The frame is TEME (true equator, mean equinox), SGP4's own; WGS-72 constants, as TLEs are
    fitted with them. Raises ValueError for a malformed TLE or a propagation error (decayed
    satellite, eccentricity out of range), naming SGP4's error. ``checksum=False`` accepts lines
    whose modulo-10 checksums are wrong (synthetic test sets), nothing else.
    """
    from sgp4.api import SGP4_ERRORS, WGS72, Satrec, jday

    check_tle(line1, line2, checksum=checksum)
    try:
        satellite = Satrec.twoline2rv(line1, line2, WGS72)
    except (ValueError, IndexError) as error:
        raise ValueError(f"not a two-line element set: {error}") from None
    if when.tzinfo is None:
        raise ValueError("give the time as an aware UTC datetime (tzinfo=datetime.UTC)")
    utc = when.astimezone(dt.UTC)
    jd, fr = jday(utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second + utc.microsecond * 1e-6)
    code, r_km, v_kms = satellite.sgp4(jd, fr)
    if code != 0:
        raise ValueError(f"SGP4 error {code}: {SGP4_ERRORS[code]}")
    return np.array(r_km) * 1e3, np.array(v_kms) * 1e3


def tle_epoch(line1: str, line2: str) -> dt.datetime:
    """The UTC epoch of a two-line element set."""
    from sgp4.api import WGS72, Satrec

    satellite = Satrec.twoline2rv(line1, line2, WGS72)
    days = (satellite.jdsatepoch - 2440587.5) + satellite.jdsatepochF  # since the Unix epoch
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=days)


# ------------------------------------------------------------------------------ LVLH, CW


def lvlh_frame(r: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotation (3, 3) whose columns are the LVLH axes in ECI: x radial out, y along-track
    (completing the triad, along the velocity for a circular orbit), z the orbit normal."""
    r, v = check_vector(r, 3, "r"), check_vector(v, 3, "v")
    x = r / np.linalg.norm(r)
    z = np.cross(r, v)
    norm = np.linalg.norm(z)
    if norm == 0.0:
        raise ValueError("r and v are parallel: no orbit plane")
    z /= norm
    return np.column_stack([x, np.cross(z, x), z])


def relative_state(r_chief: np.ndarray, v_chief: np.ndarray, r_deputy: np.ndarray,
                   v_deputy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The deputy's position (m) and velocity (m/s) in the chief's rotating LVLH frame."""
    rotation = lvlh_frame(r_chief, v_chief)
    omega = np.cross(r_chief, v_chief) / float(np.dot(r_chief, r_chief))  # the frame's rate (ECI)
    dr = np.asarray(r_deputy, float) - r_chief
    dv = np.asarray(v_deputy, float) - v_chief - np.cross(omega, dr)
    return rotation.T @ dr, rotation.T @ dv


def cw_propagate(x0: np.ndarray, n: float, t: float) -> np.ndarray:
    """Clohessy–Wiltshire closed form: the relative state (6,) [x, y, z, ẋ, ẏ, ż] in LVLH (x radial,
    y along-track, z normal) after ``t`` seconds about a circular orbit of mean motion ``n``."""
    x, y, z, vx, vy, vz = check_vector(x0, 6, "x0")
    s, c = math.sin(n * t), math.cos(n * t)
    return np.array([
        (4 - 3 * c) * x + s / n * vx + 2 / n * (1 - c) * vy,
        6 * (s - n * t) * x + y - 2 / n * (1 - c) * vx + (4 * s - 3 * n * t) / n * vy,
        c * z + s / n * vz,
        3 * n * s * x + c * vx + 2 * s * vy,
        -6 * n * (1 - c) * x - 2 * s * vx + (4 * c - 3) * vy,
        -n * s * z + c * vz,
    ])


def two_body(mu: float = MU_EARTH) -> Callable[[float, np.ndarray], np.ndarray]:
    """The right-hand side of two-body motion for ``solve_ivp``: state (6,) r, v in ECI."""

    def rhs(_t: float, state: np.ndarray) -> np.ndarray:
        r = state[:3]
        return np.concatenate([state[3:], -mu * r / np.linalg.norm(r) ** 3])

    return rhs


def propagate_two_body(r: np.ndarray, v: np.ndarray, t: float, mu: float = MU_EARTH,
                       rtol: float = 1e-12, atol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Numerically integrated two-body motion (DOP853): the ECI state ``t`` seconds on."""
    solution = solve_ivp(two_body(mu), (0.0, t), np.concatenate([r, v]), method="DOP853", rtol=rtol, atol=atol)
    return solution.y[:3, -1], solution.y[3:, -1]


# ------------------------------------------------------------------------------ attitude


def gravity_gradient_torque(r_body: np.ndarray, inertia: np.ndarray, mu: float = MU_EARTH) -> np.ndarray:
    """Gravity-gradient torque (3,) N·m on a rigid body: ``3μ/|r|³ · r̂ × (I r̂)``.

    ``r_body`` (3,): the body's position from the Earth's centre expressed in the body frame;
    ``inertia`` (3, 3): its inertia tensor about the centre of mass in the same frame.
    """
    r = check_vector(r_body, 3, "r_body")
    inertia = np.asarray(inertia, float)
    if inertia.shape != (3, 3):
        raise ValueError(f"inertia must have shape (3, 3), got {inertia.shape}")
    distance = float(np.linalg.norm(r))
    unit = r / distance
    return 3.0 * mu / distance**3 * np.cross(unit, inertia @ unit)
