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


def circle_points_key(robot: str, joint: int) -> str:
    """``/calibration/<robot>/joint<j>``: a joint's sweep for a kinematic calibration (``sweep_joint``)."""
    return f"/calibration/{robot}/joint{joint}"
