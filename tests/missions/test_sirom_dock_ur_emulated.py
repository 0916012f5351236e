"""The flagship mission through the real ur_rtde client: ``driver: ur-emulated`` runs the project's
``ur`` driver against an emulated UR controller stepping the sim world's arm in real time.

Costs ~40 s (the default mission on the sim driver, ~15 s, then on ur-emulated in wall time,
~25 s on a loaded 2-core machine)."""

from __future__ import annotations

import json
from pathlib import Path

from orbitree.cli import main

ROOT = Path(__file__).resolve().parents[2]
MISSION = ROOT / "missions" / "sirom_dock.yaml"


def _run(tmp_path: Path, name: str, *sets: str) -> tuple[int, dict]:
    summary = tmp_path / f"{name}.json"
    args = ["run", str(MISSION), "--view", "none", "--summary", str(summary)]
    for item in sets:
        args += ["--set", item]
    code = main(args)
    return code, json.loads(summary.read_text())


def test_sirom_dock_through_ur_rtde_docks_with_the_sim_drivers_final_errors(tmp_path):
    sim_code, sim = _run(tmp_path, "sim")
    code, emulated = _run(tmp_path, "emulated", "robots.arm.driver=ur-emulated")
    assert sim_code == 0, sim["reason"]
    assert code == 0, emulated["reason"]
    assert emulated["in_capture_envelope"] is True and emulated["safety_violations"] == []
    # the same seated pose: within 0.2 mm and 0.05 deg of the lockstep run on every axis
    for key, tolerance in (("x_mm", 0.2), ("y_mm", 0.2), ("z_mm", 0.2), ("rx_deg", 0.05), ("ry_deg", 0.05),
                           ("rz_deg", 0.05)):
        assert abs(emulated["final_error"][key] - sim["final_error"][key]) <= tolerance, key
        assert abs(emulated["final_error_true"][key] - sim["final_error_true"][key]) <= tolerance, key
    assert emulated["max_contact_force_n"] < 80.0  # the hooks' 60 N and the sensor's noise
