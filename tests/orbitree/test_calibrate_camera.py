"""Camera and hand-eye calibration as a mission and as a command, and calibration files checked
on load: the sim's lens and bracket as built come back (numbers), the file written is the one
``camera.calibration`` and ``camera.mount`` read, and bad files stop the loader with exit 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.cli import main
from orbitree.drivers.calibration_io import load_intrinsics, load_mount
from orbitree.runtime.executive import Executive

ROOT = Path(__file__).resolve().parents[2]
MISSION = ROOT / "missions" / "calibrate_camera.yaml"


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """The shipped mission run once (seed 1): its summary and the folder it wrote into."""
    folder = tmp_path_factory.mktemp("calib")
    mission = load_mission(MISSION, [f"tree.sequence.children.0.calibration_views.dir={folder}/images",
                                     f"tree.sequence.children.1.calibrate_camera.dir={folder}/images",
                                     f"tree.sequence.children.1.calibrate_camera.output={folder}/camera.yaml"])
    result = Executive(mission).run()
    assert result.status == "SUCCESS", result.reason
    return result.summary["camera_calibration"], folder


def test_the_mission_recovers_the_lens_as_built(calibrated):
    found, _ = calibrated
    truth = found["truth"]
    assert found["views_used"] == found["views"] == 12
    assert found["rms_px"] < 0.1
    for key in ("fx", "fy", "cx", "cy"):  # the nominal is 900 / 639.5 / 359.5: 2-3 px off
        assert abs(found[key] - truth[key]) < 0.5, (key, found[key], truth[key])
    assert abs(found["k1"] - truth["k1"]) < 0.005


def test_every_hand_eye_method_finds_the_bracket_as_built(calibrated):
    found, _ = calibrated
    nominal = found["nominal_mount_error"]  # 1.5 mm and 0.29 deg for seed 1
    assert nominal["mm"] > 1.0
    for method, error in found["mount_error"].items():
        # the arm's reported poses carry its (per-run) kinematic errors: a few tenths of a mm
        assert error["mm"] < 0.4 and error["deg"] < 0.05, (method, error)
        assert error["mm"] < nominal["mm"] / 4 and error["deg"] < nominal["deg"] / 5
    assert found["method"] in found["mount_error"]


def test_the_file_written_is_what_a_mission_reads_for_its_camera(calibrated):
    found, folder = calibrated
    file = folder / "camera.yaml"
    mount, intrinsics = load_mount(file), load_intrinsics(file)
    assert intrinsics.camera_matrix[0, 0] == pytest.approx(found["fx"], abs=1e-3)
    mission = load_mission(MISSION, [f"robots.arm.camera.mount={file}", f"robots.arm.camera.calibration={file}"])
    executive = Executive(mission)
    device = executive.ctx.drivers["arm"]
    np.testing.assert_allclose(device.cam2tcp, mount)
    np.testing.assert_allclose(device.camera.intrinsics.camera_matrix, intrinsics.camera_matrix)
    # the lens as built does not move with the calibration: the same seed renders the same truth
    assert device.camera.lens.camera_matrix[0, 0] == pytest.approx(found["truth"]["fx"], abs=1e-3)


def test_the_command_calibrates_the_saved_views_alike(calibrated, tmp_path, capsys):
    found, folder = calibrated
    out = tmp_path / "bench.yaml"
    assert main(["calibrate", "camera", str(folder / "images"), "-o", str(out), "--method", "TSAI"]) == 0
    printed = capsys.readouterr().out
    for method in ("TSAI", "PARK", "HORAUD", "ANDREFF", "DANIILIDIS"):
        assert method in printed
    assert load_intrinsics(out).camera_matrix[0, 0] == pytest.approx(found["fx"], abs=1e-3)
    assert load_mount(out).shape == (4, 4)


def test_the_command_refuses_a_directory_without_poses(tmp_path, capsys):
    assert main(["calibrate", "camera", str(tmp_path), "-o", str(tmp_path / "x.yaml")]) == 2
    assert "poses.yaml" in capsys.readouterr().err


GOOD_MATRIX = "[[1, 0, 0, 0], [0, 1, 0, -0.08], [0, 0, 1, -0.1], [0, 0, 0, 1]]"


@pytest.mark.parametrize(("text", "expected"), [
    ("cam2tcp: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]\n", "'cam2tcp' must be 4x4, got shape (3, 4)"),
    ("cam2tcp: [[1, 0.2, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]\n",
     "'cam2tcp' rotation block is not a rotation"),
    ("cam2tcp: [[-1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]\n", "det = -1"),
    ("camera_matrix: [[900, 0, 640], [0, 900, 360], [0, 0, 1]]\n", "missing 'cam2tcp'"),
])
def test_a_bad_mount_file_stops_the_loader_naming_file_and_key(tmp_path, capsys, text, expected):
    bad = tmp_path / "mount.yaml"
    bad.write_text(text)
    assert main(["validate", str(MISSION), "--set", f"robots.arm.camera.mount={bad}"]) == 2
    err = capsys.readouterr().err
    assert "robots.arm.camera.mount" in err and str(bad) in err and expected in err


@pytest.mark.parametrize(("text", "expected"), [
    ("model: ur10e\n", "missing 'd_m', 'theta_offset_rad', 'a_m', 'alpha_rad', 'beta_rad', 'hm'"),
    ("d_m: [0, 0]\ntheta_offset_rad: [0,0,0,0,0,0]\na_m: [0,0,0,0,0,0]\nalpha_rad: [0,0,0,0,0,0]\n"
     "beta_rad: [0,0,0,0,0,0]\nhm: [false, false, false, false, false, false]\n",
     "'d_m' must hold 6 values (one per joint), got 2 values"),
    ("d_m: [0.1, 0, 0, 0, 0, 0]\ntheta_offset_rad: [0,0,0,0,0,0]\na_m: [0,0,0,0,0,0]\nalpha_rad: [0,0,0,0,0,0]\n"
     "beta_rad: [0,0,0,0,0,0]\nhm: [true, false, false, false, false, false]\n", "d must be 0"),
])
def test_a_bad_kinematics_file_stops_the_loader_naming_file_and_key(tmp_path, capsys, text, expected):
    bad = tmp_path / "kinematics.yaml"
    bad.write_text(text)
    assert main(["validate", str(MISSION), "--set", f"robots.arm.kinematics={bad}"]) == 2
    err = capsys.readouterr().err
    assert "robots.arm.kinematics" in err and str(bad) in err and expected in err


def test_a_bad_sim_calibration_file_stops_the_loader(tmp_path, capsys):
    bad = tmp_path / "intrinsics.yaml"
    bad.write_text(f"cam2tcp: {GOOD_MATRIX}\n")
    assert main(["validate", str(MISSION), "--set", f"robots.arm.camera.calibration={bad}"]) == 2
    err = capsys.readouterr().err
    assert "robots.arm.camera.calibration" in err and "missing 'camera_matrix'" in err
