"""Reports: figures from hand-written logs in the recorder's format, and from campaign tables."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from orbitree.behaviours.catalogue import load_mission
from orbitree.cli import main
from orbitree.report import report
from orbitree.report.run import capture_moment, docking_intervals, series
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import FORMAT, Recorder, read_log
from orbitree.skills.capture import SIROM_TCP2TARGET_DOCKED
from orbitree.skills.gain import AdaptiveGain

ROOT = Path(__file__).resolve().parents[2]
RATE_HZ = 100.0
DT = 1.0 / RATE_HZ
MM, DEG = 1e-3, math.pi / 180.0
# Servo error at t = 0, decaying as exp(-t / 1 s). Inside the SIROM envelope (±5 mm x/y, 0..10 mm z
# with the approach aiming 1.5 mm off, ±1.5 deg) once x is: 50 mm · exp(-t) <= 5 mm, t >= ln 10.
E0 = np.array([50 * MM, -20 * MM, 30 * MM, 4 * DEG, -3 * DEG, 2 * DEG])
CAPTURE_T = math.log(10.0)
APPROACH_END, DOCK_END, LAST = 300, 390, 399  # tick numbers

NODES = [
    {"id": 0, "name": "dock", "kind": "sequence", "parent": None, "where": "m.yaml:1:1", "params": {}},
    {"id": 1, "name": "approach", "kind": "approach", "parent": 0, "where": "m.yaml:2:1",
     "params": {"robot": "arm", "target": "sirom"}},
    {"id": 2, "name": "admittance_dock", "kind": "admittance_dock", "parent": 0, "where": "m.yaml:3:1",
     "params": {"robot": "arm", "target": "sirom"}},
]


def header(record_keys: list[str]) -> dict:
    return {
        "type": "header", "format": FORMAT, "mission": "synthetic-dock", "file": "m.yaml", "seed": 4,
        "rate_hz": RATE_HZ, "clock": "sim", "start_time": "2024-01-01T00:00:00+00:00", "nodes": NODES,
        "recorded_keys": record_keys,
    }


def tcp_pose(target2base: np.ndarray, x_offset: float) -> np.ndarray:
    """The TCP x_offset (m) off its aim point (docked, backed off 1.5 mm in z), in the target frame."""
    tcp2target = SIROM_TCP2TARGET_DOCKED.copy()
    tcp2target[:3, 3] = [x_offset, 0.0, 1.5 * MM]
    return target2base @ tcp2target


def write_log(path: Path, poses: bool = False) -> Path:
    """Approach (servo error decaying) for 3 s, then docking with a contact wrench for 0.9 s."""
    gain = AdaptiveGain()
    target2base = np.eye(4)
    target2base[:3, 3] = [0.6, 0.2, 0.05]
    recorder = Recorder(path)
    recorder.open()
    recorder.write(header(["/*"]))
    for n in range(LAST + 1):
        t = n * DT
        record: dict = {"type": "tick", "n": n, "t": round(t, 6), "tick_ms": 0.05}
        bb: dict = {}
        if n < APPROACH_END:
            error = E0 * math.exp(-t)
            bb |= {"/servo/error": error, "/servo/error_norm": float(np.linalg.norm(error)),
                   "/servo/gain": gain(float(np.linalg.norm(error)))}
        in_contact = APPROACH_END <= n < DOCK_END
        bb["/robot/arm/wrench"] = np.array([0.5, -0.3, -20.0, 0.01, 0.02, 0.0]) if in_contact else np.zeros(6)
        if poses:  # the TCP converges more slowly than the servo error says: 50 mm · exp(-t / 1.5)
            bb["/robot/arm/tcp_pose"] = tcp_pose(target2base, 50 * MM * math.exp(-t / 1.5))
            if n == 10:
                bb["/target/sirom/pose_base"] = {"matrix": target2base, "frame": "base", "stamp": 0.1,
                                                 "reprojection_error_px": 0.2, "markers": [1, 2]}
        record["bb"] = bb
        status = {0: {"0": "RUNNING", "1": "RUNNING"}, APPROACH_END: {"1": "SUCCESS", "2": "RUNNING"},
                  DOCK_END: {"2": "SUCCESS", "0": "SUCCESS"}}.get(n)
        if status:
            record["status"] = status
        recorder.write(record)
    summary = {"status": "SUCCESS", "reason": "tree returned SUCCESS", "final_error": {"x_mm": 0.3},
               "in_capture_envelope": True, "max_contact_force_n": 20.0}
    recorder.write({"type": "footer", "summary": summary, "node_tick_us": {}, "error": None})
    recorder.close()
    return path


def is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and imread(path).shape[0] > 100


def test_run_report_draws_the_figures_and_marks_the_capture_range_moment(tmp_path):
    log_path = write_log(tmp_path / "run.jsonl")
    log = read_log(log_path)
    error = series(log, "/servo/error", (6,))
    assert error.values.shape == (APPROACH_END, 6) and error.t[-1] == pytest.approx((APPROACH_END - 1) * DT)

    moment = capture_moment(log)
    assert moment.t == pytest.approx(CAPTURE_T, abs=DT)  # within one tick
    assert moment.t >= CAPTURE_T  # the first tick inside, not the last one outside
    assert moment.method.startswith("servo error + standoff")
    assert docking_intervals(log) == [(pytest.approx(3.0), pytest.approx(3.9))]

    out = tmp_path / "report"
    assert main(["report", str(log_path), "-o", str(out)]) == 0
    for name in ("error_convergence", "gain", "wrench"):
        assert is_png(out / f"{name}.png"), name
    index = (out / "index.md").read_text()
    assert f"| capture-range moment | {moment.t:.3f} s |" in index
    assert "| docking | 3.000–3.900 s |" in index
    assert "![wrench](wrench.png)" in index and "skipped" not in index


def test_the_envelope_error_of_recorded_poses_wins_over_the_servo_approximation(tmp_path):
    log = read_log(write_log(tmp_path / "run.jsonl", poses=True))
    moment = capture_moment(log)
    # x = 50 mm · exp(-t / 1.5) <= 5 mm from t = 1.5 ln 10; the servo error alone would say ln 10
    assert moment.t == pytest.approx(1.5 * CAPTURE_T, abs=DT)
    assert moment.method.startswith("envelope error of /robot/arm/tcp_pose and /target/sirom/pose_base")


def test_a_log_without_the_keys_gets_notes_not_a_crash(tmp_path):
    mission = load_mission(ROOT / "missions" / "demo_checkout.yaml", ["record.keys=[/checkout/*]"])
    Executive(mission, log_path=str(tmp_path / "run.jsonl")).run()
    result = report(tmp_path / "run.jsonl", tmp_path / "out")
    assert [f.file for f in result.figures] == [None, None, None]
    assert "no /servo/error in the log" in result.figures[0].note
    assert "no /robot/<name>/wrench in the log" in result.figures[2].note
    index = (tmp_path / "out" / "index.md").read_text()
    assert "| capture-range moment | never |" in index and "*skipped: no /servo/gain" in index


def test_campaign_report_draws_final_errors_against_the_envelope(tmp_path):
    columns = ["run", "case", "cycle", "seed", "status", "reason", "sim_time_s", "wall_time_s",
               *(f"final_error.{a}" for a in ("x_mm", "y_mm", "z_mm", "rx_deg", "ry_deg", "rz_deg")),
               "in_capture_envelope"]
    rng = np.random.default_rng(0)
    with (tmp_path / "summary.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for case in range(4):
            for cycle in range(3):
                error = rng.normal(np.array([0, 0, 2, 0, 0, 0]), [2, 2, 3, 0.5, 0.5, 0.5])
                ok = bool(abs(error[0]) <= 5)
                writer.writerow([f"p{case}.{cycle}", f"p{case}", cycle, cycle, "SUCCESS" if ok else "FAILURE", "",
                                 12.0, 1.5 + rng.random(), *np.round(error, 3), json.dumps(ok)])
    envelope = {"name": "sirom", "lower": {"x_mm": -5, "y_mm": -5, "z_mm": 0, "rx_deg": -1.5, "ry_deg": -1.5,
                                           "rz_deg": -1.5},
                "upper": {"x_mm": 5, "y_mm": 5, "z_mm": 10, "rx_deg": 1.5, "ry_deg": 1.5, "rz_deg": 1.5}}
    (tmp_path / "campaign.json").write_text(json.dumps({"campaign": "synthetic", "envelope": envelope}))
    out = tmp_path / "out"
    assert main(["report", str(tmp_path), "-o", str(out)]) == 0
    for name in ("final_error", "success", "wall_time"):
        assert is_png(out / f"{name}.png"), name
    assert "# Campaign report: synthetic" in (out / "index.md").read_text()


def test_report_on_something_else_exits_2(tmp_path, capsys):
    (tmp_path / "notes.jsonl").write_text('{"type": "header", "format": "other"}\n')
    assert main(["report", str(tmp_path / "notes.jsonl"), "-o", str(tmp_path / "out")]) == 2
    assert "not an orbitree log" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "out")]) == 2


def test_failed_run_says_which_path_failed_and_why_in_summary_and_report(tmp_path):
    # a one-configuration sweep on the wrong side of the table: the search fails, and says so
    mission = load_mission(ROOT / "tests" / "missions" / "search_only.yaml", overrides=[
        "tree.parallel.children.1.fallback.children.1.search.sweep.size=[0.3, 0.3]",
        "targets.sirom.pose.xyz=[0.65, 0.5, 0.1]",
    ])
    log = tmp_path / "run.jsonl"
    result = Executive(mission, log_path=str(log)).run()
    expected = "tree returned FAILURE: find > sweep: swept the whole area without seeing the target"
    assert (result.status, result.reason, result.summary["reason"]) == ("FAILURE", expected, expected)
    index = report(log, tmp_path / "report").index.read_text(encoding="utf-8").splitlines()
    assert index[:3] == ["# Run report: sirom-search", "", f"**FAILURE**: {expected}"]
    ticks = result.summary["ticks"]  # the log's extra record at the halt is not a tick
    assert f"| mission time | {result.summary['sim_time_s']:.3f} s, {ticks} ticks |" in index
