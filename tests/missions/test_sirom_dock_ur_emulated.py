"""The flagship mission through the real ur_rtde client: ``driver: ur-emulated`` runs the project's
``ur`` driver against an emulated UR controller stepping the sim world's arm in real time.

Both runs start from the SIROM paper's misalignment (the board in view: no 12 s sweep to wait
through in wall time); ~40 s on a loaded 2-core machine."""

from __future__ import annotations

import json
from pathlib import Path

from orbitree.cli import main

ROOT = Path(__file__).resolve().parents[2]
MISSION = ROOT / "missions" / "sirom_dock.yaml"
SEED_START = "robots.arm.start={target: sirom, offset: {xyz: [20 mm, 170 mm, 350 mm], rpy: [-45, 18, 25]}}"


def _run(tmp_path: Path, name: str, *sets: str) -> tuple[int, dict]:
    summary = tmp_path / f"{name}.json"
    args = ["run", str(MISSION), "--view", "none", "--summary", str(summary)]
    for item in sets:
        args += ["--set", item]
    code = main(args)
    return code, json.loads(summary.read_text())


def test_sirom_dock_through_ur_rtde_docks_with_the_sim_drivers_final_errors(tmp_path):
    sim_code, sim = _run(tmp_path, "sim", SEED_START)
    code, emulated = _run(tmp_path, "emulated", SEED_START, "robots.arm.driver=ur-emulated")
    assert sim_code == 0, sim["reason"]
    assert code == 0, emulated["reason"]
    assert emulated["in_capture_envelope"] is True and emulated["safety_violations"] == []
    assert emulated["in_capture_envelope_true"] is True
    # the same capture pose as the lockstep run, as the estimate sees it, within what the
    # approach's own stopping rule leaves open (‖e‖ < 0.001: 1 mm, 0.057 deg): wall-clock ticks
    # end it at another instant. By ground truth within 1 mm and 0.5 deg: the wall-clock runs'
    # true tilt about x at capture spread over 0.11-0.24 deg from the lockstep run's in three runs
    # on a loaded machine while their estimates agreed (the estimate's own timing: frames stamped
    # against an arm stepped in another process), far inside the envelope's 5 mm and 1.5 deg
    for key, estimate, truth in (("x_mm", 1.0, 1.0), ("y_mm", 1.0, 1.0), ("z_mm", 1.0, 1.0),
                                 ("rx_deg", 0.06, 0.5), ("ry_deg", 0.06, 0.5), ("rz_deg", 0.06, 0.5)):
        assert abs(emulated["final_error"][key] - sim["final_error"][key]) <= estimate, key
        assert abs(emulated["final_error_true"][key] - sim["final_error_true"][key]) <= truth, key
    # on the tool, by ground truth, the hooks' 60 N pull and no more (59.1 N in every ISO 9283 run);
    # the wrist's peak reading adds its noise (sigma ~5 N a reading, thousands of readings in
    # contact: 73.9 and 81.1 N in two runs), so its bound is 6 sigma above the pull
    assert emulated["true_max_contact_force_n"] < 65.0
    assert emulated["max_contact_force_n"] < 90.0
