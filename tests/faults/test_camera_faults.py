"""Camera faults through the whole chain: sim camera -> FaultyCamera -> executive -> perceive.

The mission of ``tests/behaviours/test_perceive.py``: the arm at home looks straight down at the
SIROM board 0.3 m below; ``perceive`` runs at 0.25 s on the 10 Hz frame of 0.2 s.
"""

from __future__ import annotations

import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive

MISSION = """
mission: perceive-faults
rate_hz: 50
robots:
  arm:
    camera: {mount: {xyz: [0, 0, 0]}, fps: 10 Hz, IDEAL}
targets:
  sirom: {pose: {xyz: [-0.6914, -0.1742, 0.3768], rpy: [0, 0, 0]}}
tree:
  sequence:
    - wait: 0.25 s
    - perceive: {name: look, robot: arm, target: sirom, max_reprojection_px: 5}
faults:
  - FAULT
"""


# the faults' own effects on an ideal camera (no latency or stamp error, no calibration errors)
IDEAL = ", ".join(f"{name}: 0" for name in (
    "exposure", "latency", "stamp_jitter", "focal_error", "principal_point_error", "distortion_error",
    "mount_error", "mount_angle_error", "print_scale_error", "marker_error", "marker_angle_error"))


def look(tmp_path, fault):
    path = tmp_path / "m.yaml"
    path.write_text(MISSION.replace("FAULT", fault).replace("IDEAL", IDEAL))
    executive = Executive(load_mission(path))
    result = executive.run()
    return result, executive.tree.behaviours[2]


def test_camera_dropout_leaves_perceive_without_a_frame(tmp_path):
    result, perceive = look(tmp_path, "{at: 0 s, kind: camera_dropout}")
    assert result.status == "FAILURE"
    assert perceive.read("/target/sirom/last_seen") is None


def test_marker_occlusion_leaves_perceive_the_other_markers(tmp_path):
    result, perceive = look(tmp_path, "{at: 0 s, kind: marker_occlusion, markers: [1]}")
    assert result.status == "SUCCESS"
    assert perceive.read("/target/sirom/pose_base").markers == (0, 2)


def test_pose_noise_reaches_the_estimate(tmp_path):
    plain, perceive = look(tmp_path, "{at: 10 s, kind: pose_noise, sigma_px: 1.5}")  # never starts
    clean = perceive.read("/target/sirom/pose_base").reprojection_error_px
    result, perceive = look(tmp_path, "{at: 0 s, kind: pose_noise, sigma_px: 1.5}")
    assert plain.status == result.status == "SUCCESS"
    noisy = perceive.read("/target/sirom/pose_base").reprojection_error_px
    assert clean < 0.2 and noisy == pytest.approx(1.22 * 1.5, rel=0.5)


def test_camera_latency_stamps_the_estimate_with_the_old_frame(tmp_path):
    result, perceive = look(tmp_path, "{at: 0 s, kind: camera_latency, delay: 100 ms}")
    assert result.status == "SUCCESS"
    assert perceive.read("/target/sirom/last_seen") == pytest.approx(0.1)  # the 10 Hz frame of 0.1 s
