"""Blackboard key paths, built in one place.

Every key a driver, a leaf, the executive or a view uses is spelt here, so a rename cannot leave a
reader behind and the loader's writer check, the log and the plots agree on names.
"""

from __future__ import annotations

import fnmatch

ROBOT_STATE = ("q", "tcp_pose", "tcp_twist", "protective_stop")  # written for every arm, every tick
SERVO_ERROR = "/servo/error"  # PBVS error (6,), m and rad
SERVO_ERROR_NORM = "/servo/error_norm"
SERVO_GAIN = "/servo/gain"
SERVO_FAILURE = "/servo/failure"  # why the last approach failed: "unreachable" (or "" once started)
SEARCH_RESUME_Q = "/search/resume_q"  # joints where an interrupted search resumes
FAULTS_ACTIVE = "/faults/active"
SAFETY_VIOLATIONS = "/safety/violations"
ROBOT_WRENCH_GLOB = "/robot/*/wrench"
ROBOT_IMAGE_GLOB = "/robot/*/image"
TARGET_POSE_CAM_GLOB = "/target/*/pose_cam"
# orbit missions: a target's position relative to the servicer in the servicer's LVLH frame, m,
# and its velocity, m/s ([x, y, z, vx, vy, vz]; x radial away from the Earth, y along-track, z
# orbit normal, as orbitree.skills.orbit; written by orbitree.runtime.space, with /range and
# /range_rate under it): drawn by the web view's LVLH panel
ORBIT_RELATIVE_GLOB = "/orbit/relative/*"
ORBIT_TIME_UTC = "/orbit/time_utc"  # ISO 8601 UTC text of the tick (epoch + mission time)
SERVICER = "servicer"  # the body the arms stand on, in /orbit/<body>/...
ORBIT_BODY_STATE = ("r_eci", "v_eci", "lvlh")  # per body: m, m/s (inertial: ECI or TEME), LVLH axes (3, 3)
SATELLITE_STATE = ("spin_rate",)  # written for every satellite target, every tick (truth)


# What the values under core keys measure, as their writers define them: a condition's threshold
# on such a key must be written in that dimension ("" = a plain number or a flag: no unit at all).
# Keys not listed (a mission's own) take any unit.
KEY_DIMENSIONS: tuple[tuple[str, str], ...] = (
    ("/robot/*/wrench", "force"),  # its norm is compared: forces dominate it
    ("/robot/*/q", "angle"),
    ("/robot/*/protective_stop", ""),
    ("/target/*/visible", ""),
    ("/target/*/last_seen", "time"),
    (SERVO_GAIN, ""),
    (SEARCH_RESUME_Q, "angle"),
    ("/target/*/spin_rate", "angular_speed"),  # |ω| of a satellite, rad/s
    ("/target/*/gg_torque", "torque"),  # gravity-gradient torque, body frame, N·m
    ("/orbit/relative/*/range_rate", "speed"),  # d|r|/dt, m/s
    ("/orbit/relative/*/range", "length"),  # |r|, m
    ("/orbit/relative/*", "length"),  # (6,) position m, velocity m/s: compare /range, a norm mixes them
    ("/orbit/*/r_eci", "length"),
    ("/orbit/*/v_eci", "speed"),
    ("/orbit/*/lvlh", ""),
)


def key_dimension(key: str) -> str | None:
    """The dimension of the values written under ``key`` (see ``KEY_DIMENSIONS``), or None."""
    return next((dim for pattern, dim in KEY_DIMENSIONS if fnmatch.fnmatchcase(key, pattern)), None)


def robot_key(robot: str, name: str) -> str:
    """``/robot/<robot>/<name>``: ``q``, ``tcp_pose``, ``tcp_twist``, ``wrench``, ``image``, ``latch``…"""
    return f"/robot/{robot}/{name}"


def target_key(target: str, name: str) -> str:
    """``/target/<target>/<name>``: ``pose_cam``, ``pose_base``, ``visible``, ``last_seen``…"""
    return f"/target/{target}/{name}"


def robot_of_wrench_key(key: str) -> str | None:
    """The arm whose wrench ``key`` is (``/robot/arm/wrench`` -> ``arm``), else None."""
    parts = key.split("/")
    if len(parts) == 4 and parts[0] == "" and parts[1] == "robot" and parts[3] == "wrench" and parts[2]:
        return parts[2]
    return None


def orbit_key(body: str, name: str) -> str:
    """``/orbit/<body>/<name>``: ``r_eci``, ``v_eci``, ``lvlh`` of a target or the ``servicer``."""
    return f"/orbit/{body}/{name}"


def orbit_relative_key(target: str, name: str = "") -> str:
    """``/orbit/relative/<target>``: the target's position and velocity (6,) in the servicer's LVLH
    frame; with ``name``: ``range`` (m), ``range_rate`` (m/s)."""
    return f"/orbit/relative/{target}" + (f"/{name}" if name else "")
def circle_points_key(robot: str, joint: int) -> str:
    """``/calibration/<robot>/joint<j>``: a joint's sweep for a kinematic calibration (``sweep_joint``)."""
    return f"/calibration/{robot}/joint{joint}"
