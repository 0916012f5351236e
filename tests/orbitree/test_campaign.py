"""Campaigns: case expansion, seeds, the process pool, failures that must not stop the others."""

from __future__ import annotations

import csv
import json
import os
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from orbitree.campaign.local import run_campaign
from orbitree.campaign.runs import RunSpec, execute, run_case
from orbitree.campaign.spec import assignment, load_campaign, plan
from orbitree.cli import main
from orbitree.runtime.recorder import read_log

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "missions" / "demo_checkout.yaml"
DEMO_SWEEP = ROOT / "missions" / "campaigns" / "demo_sweep.yaml"


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# three outcomes of the bench check-out, two cycles each (also run on Dask: test_campaign_dask)
THREE_CASES = f"""
campaign: three
mission: {DEMO}
cycles: 2
seed: 7
cases:
  - id: nominal
  - id: aborted
    set: {{blackboard./checkout/abort: true}}
  - id: short
    set: {{max_duration: 3 s, seed: 20}}
"""


ABORTED_REASON = "tree returned FAILURE: unless aborted: condition failed: /checkout/abort = True, not False"


def test_three_cases_two_cycles_on_two_workers(tmp_path, capsys):
    campaign = write(tmp_path / "c.yaml", THREE_CASES + "workers: 2\n")
    out = tmp_path / "out"
    assert main(["campaign", str(campaign), "-o", str(out), "--no-progress"]) == 1  # not all succeeded
    rows = rows_of(out / "summary.csv")
    got = [(r["run"], r["case"], r["cycle"], r["seed"], r["status"], r["reason"], r["sim_time_s"]) for r in rows]
    assert got == [
        ("nominal.0", "nominal", "0", "7", "SUCCESS", "tree returned SUCCESS", "4.44"),
        ("nominal.1", "nominal", "1", "8", "SUCCESS", "tree returned SUCCESS", "4.44"),
        # the guard fails at once after the 2 s warm-up
        ("aborted.0", "aborted", "0", "7", "FAILURE", ABORTED_REASON, "2.0"),
        ("aborted.1", "aborted", "1", "8", "FAILURE", ABORTED_REASON, "2.0"),
        # the case's own seed wins over the campaign's; 3 s at 50 Hz ends after tick 149
        ("short.0", "short", "0", "20", "FAILURE", "max_duration 3 s reached", "2.98"),
        ("short.1", "short", "1", "21", "FAILURE", "max_duration 3 s reached", "2.98"),
    ]
    assert [float(r["phase_s.warm-up"]) for r in rows] == [2.0] * 6
    assert rows[0]["ticks"] == "223" and rows[0]["final_error"] == "" and rows[0]["safety_violations"] == "[]"
    assert rows[2]["overrides"] == "blackboard./checkout/abort=true"  # the seed is its own column
    assert [r["seed"] for r in rows[4:]] == ["20", "21"] and rows[5]["overrides"] == "max_duration=3 s"
    for row in rows:  # one log per run, with the run's seed and outcome
        log = read_log(out / row["log"])
        assert log.header["seed"] == int(row["seed"])
        assert log.footer["summary"]["status"] == row["status"]
        assert float(row["wall_time_s"]) > 0.0

    aggregate = json.loads((out / "campaign.json").read_text())
    assert aggregate["runs"] == aggregate["planned_runs"] == 6 and aggregate["cases"] == 3
    assert aggregate["statuses"] == {"SUCCESS": 2, "FAILURE": 4}
    assert aggregate["success_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert aggregate["wall_time_s"]["total"] == pytest.approx(sum(float(r["wall_time_s"]) for r in rows), abs=0.01)
    assert aggregate["worst_final_error"] is None and aggregate["envelope"] is None
    assert (out / "success.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "wall_time.png").stat().st_size > 0
    assert not (out / "final_error.png").exists()  # no capture step: skipped, with a note
    assert "no run has a final error" in (out / "index.md").read_text()
    printed = capsys.readouterr().out
    assert "33.3 %" in printed and "6 of 6 (3 cases × 2 cycles)" in printed


def flaky_runner(spec: RunSpec) -> dict:
    """A runner for the pool (module level, so it pickles): one case raises, one kills its worker."""
    if spec.case == "boom":
        raise RuntimeError("boom in a leaf")
    if spec.case == "die":
        time.sleep(0.5)  # a Dask worker reports the run it finished before this one in the meantime
        os._exit(3)  # as a segfault in a native library would
    return run_case(spec)


def test_a_raising_case_and_a_dying_worker_do_not_stop_the_others(tmp_path):
    campaign = write(
        tmp_path / "c.yaml",
        f"""
        campaign: flaky
        mission: {DEMO}
        cases: [{{id: first}}, {{id: boom}}, {{id: die}}, {{id: last}}]
        """,
    )
    out = tmp_path / "out"
    result = run_campaign(load_campaign(campaign), out, workers=2, runner=flaky_runner, progress=False)
    by_case = {row["case"]: row for row in result.rows}
    assert [row["case"] for row in result.rows] == ["first", "boom", "die", "last"]
    assert {case: row["status"] for case, row in by_case.items()} == {
        "first": "SUCCESS",
        "boom": "error",
        "die": "error",
        "last": "SUCCESS",
    }
    assert by_case["boom"]["reason"] == "RuntimeError: boom in a leaf"
    assert "RuntimeError: boom in a leaf" in (out / "runs" / "boom.0.error.txt").read_text()
    assert by_case["die"]["reason"].startswith("worker process died")
    assert not result.ok and not result.interrupted
    assert [r["status"] for r in rows_of(out / "summary.csv")] == ["SUCCESS", "error", "error", "SUCCESS"]


BAD_CAMPAIGNS = [
    ("campaign: x\nmission: {demo}\ncycels: 3\n", "3:1: unknown key 'cycels'; did you mean 'cycles'?"),
    ("campaign: x\nmission: {demo}\nworkers: 0\n", "3:10: workers: Input should be greater than or equal to 1"),
    ("campaign: x\nmission: nowhere.yaml\n", "2:10: mission: no such file"),
    ("campaign: x\nmission: {demo}\nenvelope: sirum\n", "3:11: envelope: unknown envelope 'sirum'; known: sirom"),
    (
        "campaign: x\nmission: {demo}\ncases:\n  - id: a\n    set: {{rate_hz: -5 Hz}}\n",
        "5:20: rate_hz: Input should be greater than 0",
    ),
    (
        "campaign: x\nmission: {demo}\ngrid:\n"
        "  tree.sequence.children.1.parallel.policy:\n    - all\n    - most\n",
        "6:7: checkout/parallel: policy: Input should be 'all', 'one' or 'selected', got 'most'",
    ),
    ("campaign: x\nmission: {demo}\ncases: [{{id: a}}, {{id: a}}]\n", "3:23: cases[1]: duplicate case id 'a'"),
    ("campaign: x\nmission: {demo}\ncases: [{{id: a/b}}]\n", "3:14: cases[0].id: String should match pattern"),
    # an unknown key that looks like a pydantic type tag (brackets, parentheses) is still named
    ("campaign: x\nmission: {demo}\nnotes (draft): [a]\n", "3:1: unknown key 'notes (draft)'; expected one of"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_CAMPAIGNS)
def test_bad_campaign_file_is_reported_at_file_line_col_with_exit_2(tmp_path, capsys, text, expected):
    campaign = tmp_path / "bad.yaml"
    campaign.write_text(text.format(demo=DEMO), encoding="utf-8")
    assert main(["campaign", str(campaign), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{campaign}:{expected}" in err, err
    assert not (tmp_path / "out").exists()  # nothing ran


def test_shipped_demo_sweep_expands_cases_grid_seeds_and_override_order():
    campaign = load_campaign(DEMO_SWEEP, ["max_duration=10 s"])
    assert [c.id for c in campaign.cases] == [
        "nominal-g1", "nominal-g2", "aborted-g1", "aborted-g2", "short-budget-g1", "short-budget-g2"
    ]
    # mission file < campaign seed < campaign set < command line < case set < grid point
    assert campaign.cases[5].overrides == (
        "seed=1", "max_duration=30 s", "max_duration=10 s", "max_duration=3 s", "rate_hz=125 Hz"
    )
    runs = plan(campaign, "out", limit=2)
    assert [(r.run_id, r.seed) for r in runs] == [
        ("nominal-g1.0", 1), ("nominal-g1.1", 2), ("nominal-g2.0", 1), ("nominal-g2.1", 2)
    ]
    assert runs[0].log == str(Path("out") / "runs" / "nominal-g1.0.jsonl")


@pytest.mark.parametrize(
    "value",
    ["60 s", "true", True, 3, 0.25, None, [0.6, "200 mm", 0], {"xyz": [0.6, 0.2, 0.0], "rpy": [0, 0, "30 deg"]},
     [{"at": "12 s", "kind": "camera_dropout", "for": "2 s"}]],
)
def test_an_override_value_survives_the_round_trip_through_set_syntax(value):
    key, _, text = assignment("a.b", value).partition("=")
    assert key == "a.b" and "\n" not in text
    assert yaml.safe_load(text) == value


def fault_runner(spec: RunSpec) -> dict:
    """Outcomes as a fault campaign would produce them (module level, so it pickles)."""
    limits = {"max_force_n": 120.0, "max_tcp_speed_mps": 0.3}

    def ran(status, kind, force):
        faults = [{"id": 0, "kind": kind}] if kind else []
        summary = {"faults": faults, "true_max_contact_force_n": force, "true_max_tcp_speed_mps": 0.05,
                   "safety_limits": limits}
        return {"status": status, "reason": status, "summary": summary}

    if spec.case == "boom":
        raise RuntimeError("boom")
    return {
        "dropout": ran("SUCCESS", "camera_dropout", 48.0),
        "bumped": ran("SUCCESS", "target_bumped", 131.0),  # docked, but ground truth crossed 120 N
        "pstop": ran("ABORTED", "protective_stop", 20.0),
        "plain": ran("SUCCESS", None, 45.0),
    }[spec.case]


def test_fault_campaign_counts_success_safe_abort_violation_error_per_fault_kind(tmp_path):
    campaign = write(tmp_path / "c.yaml", f"""
        campaign: faults
        mission: {DEMO}
        cases: [{{id: dropout}}, {{id: bumped}}, {{id: pstop}}, {{id: plain}}, {{id: boom}}]
        """)
    out = tmp_path / "out"
    result = run_campaign(load_campaign(campaign), out, workers=1, runner=fault_runner, progress=False)
    expected = {
        "camera_dropout": {"success": 1, "safe_abort": 0, "violation": 0, "error": 0},
        "target_bumped": {"success": 0, "safe_abort": 0, "violation": 1, "error": 0},
        "protective_stop": {"success": 0, "safe_abort": 1, "violation": 0, "error": 0},
        # runs without a fault (and a crash, which has no summary) are the 'none' row
        "none": {"success": 1, "safe_abort": 0, "violation": 0, "error": 1},
    }
    assert result.aggregate["fault_outcomes"] == expected
    assert result.aggregate["limit_violations"] == 1
    assert result.aggregate["peak_contact_force_true_n"] == {"value": 131.0, "run": "bumped.0"}
    assert rows_of(out / "faults.csv") == [
        {"fault": kind, **{k: str(v) for k, v in counts.items()}} for kind, counts in sorted(expected.items())
    ]
    index = (out / "index.md").read_text()
    assert "| target_bumped | 0 | 0 | 1 | 0 |" in index
    assert "| peak contact force (ground truth) | 131.00 N (bumped.0) |" in index


def test_logs_failures_runs_without_a_log_and_replays_a_failed_run_with_its_log(tmp_path):
    campaign = write(tmp_path / "c.yaml", THREE_CASES.replace("cycles: 2", "cycles: 1") + "logs: failures\n")
    out = tmp_path / "out"
    assert main(["campaign", str(campaign), "-o", str(out), "--no-progress", "--workers", "2"]) == 1
    rows = {r["case"]: r for r in rows_of(out / "summary.csv")}
    nominal = rows["nominal"]
    assert nominal["status"] == "SUCCESS" and nominal["log"] == "" and nominal["replay"] == ""
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["aborted.0.jsonl", "short.0.jsonl"]
    for case, sim_time in (("aborted", 2.0), ("short", 2.98)):  # replayed with the log: the same run, logged
        row = rows[case]
        assert row["status"] == "FAILURE" and row["replay"] == "same" and float(row["sim_time_s"]) == sim_time
        summary = read_log(out / row["log"]).footer["summary"]
        assert (summary["status"], summary["reason"]) == ("FAILURE", row["reason"])
        assert summary["sim_time_s"] == sim_time


def changing_runner(spec: RunSpec) -> dict:
    """Fails when run without a log, succeeds with one: a run that is not deterministic."""
    status = "FAILURE" if spec.log is None else "SUCCESS"
    summary = {"sim_time_s": 1.0 if spec.log else 2.5}
    return {"status": status, "reason": f"tree returned {status}", "summary": summary}


def test_a_replay_that_ends_otherwise_than_its_first_run_says_so_in_its_row(tmp_path):
    spec = RunSpec("c.0", "c", 0, 1, str(DEMO), (), str(tmp_path / "c.0.jsonl"), "failures")
    row = execute(changing_runner, spec)
    assert row["status"] == "SUCCESS" and row["log"] == spec.log  # the logged run's row, and its log
    assert row["summary"]["replay"] == "differs: the first run ended FAILURE at 2.5 s: tree returned FAILURE"
