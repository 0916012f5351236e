"""What a real arm's drivers need is checked when the mission loads: exit 2 with file:line:col and
nothing connects (before, `--set robots.arm.driver=ur` validated and then crashed at run time)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orbitree.cli import main
from orbitree.drivers.calibration_io import save_intrinsics
from orbitree.drivers.interfaces import CameraIntrinsics

ROOT = Path(__file__).resolve().parents[2]
FLAGSHIP = str(ROOT / "missions" / "sirom_dock.yaml")
UR = ["--set", "robots.arm.driver=ur", "--set", "robots.arm.host=127.0.0.1"]

HARDWARE = """\
mission: bench-check
rate_hz: 125 Hz
robots:
  arm:
    driver: ur
    host: 192.168.1.10
    camera: {driver: cv, device: 0, calibration: cam.yaml}
tree:
  wait: 1 s
"""


def test_switching_the_flagship_to_a_ur_arm_is_refused_at_load_naming_camera_and_latch(capsys):
    assert main(["run", FLAGSHIP, "--view", "none", *UR]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith(FLAGSHIP)]
    assert len(lines) == 2
    camera, latch = lines
    text = Path(FLAGSHIP).read_text().splitlines()
    camera_at = text.index("    camera:") + 2  # its value: the mapping on the next line
    latch_at = next(i for i, line in enumerate(text) if line.startswith("    latch:")) + 1
    assert camera.startswith(f"{FLAGSHIP}:{camera_at}:7: robots.arm.camera: a 'ur' arm needs a real camera")
    assert latch.startswith(f"{FLAGSHIP}:{latch_at}:12: robots.arm.latch: there is no hardware latch driver")
    assert main(["validate", FLAGSHIP, *UR]) == 2


def test_a_missing_calibration_file_is_named_at_its_line(tmp_path, capsys):
    mission = tmp_path / "bench.yaml"
    mission.write_text(HARDWARE)
    assert main(["validate", str(mission)]) == 2
    err = capsys.readouterr().err
    assert f"{mission}:7:50: robots.arm.camera: " in err and "calibration file not found" in err


def test_a_calibration_file_beside_the_mission_is_read_at_load(tmp_path, capsys):
    mission = tmp_path / "bench.yaml"
    mission.write_text(HARDWARE)
    matrix = np.array([[900.0, 0, 640], [0, 900.0, 360], [0, 0, 1]])
    save_intrinsics(tmp_path / "cam.yaml", CameraIntrinsics(matrix, np.zeros(5), 1280, 720))
    assert main(["validate", str(mission)]) == 0
    (tmp_path / "cam.yaml").write_text("camera_matrix: [1, 2, 3]\n")
    assert main(["validate", str(mission)]) == 2
    assert f"{mission}:7:50: robots.arm.camera: " in capsys.readouterr().err


def test_a_mission_mixing_simulated_and_real_arms_is_refused_at_load(tmp_path, capsys):
    mission = tmp_path / "mixed.yaml"
    mission.write_text(HARDWARE.replace("tree:", "  second: {driver: sim}\ntree:").replace(
        "    camera: {driver: cv, device: 0, calibration: cam.yaml}\n", ""))
    assert main(["validate", str(mission)]) == 2
    assert "simulated robots or hardware, not both" in capsys.readouterr().err
