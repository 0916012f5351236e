"""The command line as users and CI call it: real subprocesses, real signals, real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orbitree.cli import main
from orbitree.runtime.recorder import read_log
from tests.tests_support import ORBITREE_CLI

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "missions" / "demo_checkout.yaml"


def orbitree(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orbitree.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*ORBITREE_CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_ticks(log: Path, minimum: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count('"type":"tick"') >= minimum:
            return
        time.sleep(0.05)
    raise AssertionError(f"{log} did not reach {minimum} ticks")


def test_run_writes_summary_and_log_and_exits_zero_on_success(tmp_path):
    summary, log = tmp_path / "s.json", tmp_path / "run.jsonl"
    done = orbitree(
        "run", str(DEMO), "--view", "none", "--summary", str(summary), "--log", str(log)
    )
    assert done.returncode == 0, done.stderr
    s = json.loads(summary.read_text())
    assert s["status"] == "SUCCESS" and s["mission"] == "demo-checkout"
    assert s["sim_time_s"] == pytest.approx(4.44)  # 2 s warm-up + 3 x 0.8 s soak + 2 ticks
    assert s["phase_s"]["warm-up"] == pytest.approx(2.0)
    parsed = read_log(log)
    assert parsed.footer["summary"] == s and not parsed.truncated
    assert parsed.header["nodes"][0]["name"] == "checkout"


def test_run_exits_one_when_the_tree_fails(tmp_path):
    done = orbitree("run", str(DEMO), "--view", "none", "--set", "blackboard./checkout/abort=true")
    assert done.returncode == 1
    assert "demo-checkout: FAILURE" in done.stdout


def test_set_changes_the_mission_that_runs(tmp_path):
    summary = tmp_path / "s.json"
    done = orbitree(
        "run",
        str(DEMO),
        "--view",
        "none",
        "--summary",
        str(summary),
        "--set",
        "tree.sequence.children.1.parallel.children.1.wait.duration=5 s",
        "--set",
        "rate_hz=100",
    )
    assert done.returncode == 0, done.stderr
    s = json.loads(summary.read_text())
    assert s["phase_s"]["warm-up"] == pytest.approx(5.0)
    assert s["ticks"] == pytest.approx(100 * (5.0 + 2.4) + 2, abs=1)


def test_sigkill_leaves_a_log_that_parses_up_to_its_last_full_line(tmp_path):
    log = tmp_path / "run.jsonl"
    proc = start("run", str(DEMO), "--view", "none", "--realtime", "--log", str(log))
    wait_for_ticks(log, 20)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    parsed = read_log(log)
    assert parsed.header["mission"] == "demo-checkout"
    assert parsed.footer is None
    numbers = [t["n"] for t in parsed.ticks]
    assert len(numbers) >= 20 and numbers == list(range(len(numbers)))


def test_sigkill_mid_line_is_tolerated(tmp_path):
    log = tmp_path / "cut.jsonl"
    done = orbitree("run", str(DEMO), "--view", "none", "--log", str(log))
    assert done.returncode == 0
    text = log.read_text()
    cut = text[: text.index('"type":"tick","n":50') + 30]  # stop in the middle of tick 50
    log.write_text(cut)
    parsed = read_log(log)
    assert parsed.truncated and len(parsed.ticks) == 50 and parsed.footer is None


@pytest.mark.parametrize(
    ("sig", "reason"),
    [(signal.SIGINT, "interrupted (Ctrl-C)"), (signal.SIGTERM, "interrupted by signal")],
    ids=["ctrl-c", "sigterm"],
)
def test_signal_halts_the_tree_and_writes_the_footer(tmp_path, sig, reason):
    log = tmp_path / "run.jsonl"
    proc = start("run", str(DEMO), "--view", "none", "--realtime", "--log", str(log))
    wait_for_ticks(log, 10)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    parsed = read_log(log)
    assert parsed.footer["summary"]["status"] == "ABORTED"
    assert parsed.footer["summary"]["reason"] == reason
    last = parsed.ticks[-1]
    assert last["events"][-1]["kind"] == "halt"
    # every node still running when the signal came was halted: none is left RUNNING
    before = {}
    for t in parsed.ticks[:-1]:
        before.update(t.get("status", {}))
    running = {k for k, v in before.items() if v == "RUNNING"}
    after = {**before, **last["status"]}
    assert running and all(after[k] == "INVALID" for k in running)
    assert "RUNNING" not in after.values()


def test_validate_reports_each_file(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("mission: x\ntree: {wait: 3 deg}\n")
    assert main(["validate", str(DEMO), str(bad)]) == 2
    out, err = capsys.readouterr()
    assert f"{DEMO}: ok (18 nodes)" in out
    assert f"{bad}:2:14: wait: duration: '3 deg' is in units of angle, expected a time" in err


def test_schema_is_json_schema_listing_every_node_kind(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    kinds = {next(iter(alt["properties"])) for alt in schema["$defs"]["TreeNode"]["oneOf"]}
    assert {
        "sequence",
        "fallback",
        "parallel",
        "retry",
        "repeat",
        "timeout",
        "inverter",
        "one_shot",
        "rate_limit",
        "guard",
        "subtree",
        "include",
        "wait",
        "set",
        "log",
        "succeed",
        "fail",
        "condition",
    } <= kinds
    assert schema["required"] == ["mission", "tree"]


def test_schema_validates_the_shipped_missions_and_rejects_typos(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    main(["schema"])
    schema = json.loads(capsys.readouterr().out)
    for path in (ROOT / "missions").glob("*.yaml"):
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"mission": "x", "tree": {"wiat": "1 s"}}, schema)


def test_tree_prints_ascii_and_dot(capsys):
    assert main(["tree", str(DEMO)]) == 0
    ascii_out = capsys.readouterr().out
    assert ascii_out.splitlines()[0] == "checkout [sequence]"
    assert "│       └── three soak cycles [repeat] count=3" in ascii_out
    assert main(["tree", str(DEMO), "--format", "dot"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith("digraph") and '"three soak cycles"' in dot


def test_tree_prints_quantities_as_the_author_wrote_them(capsys):
    assert main(["tree", str(ROOT / "missions" / "sirom_dock.yaml")]) == 0
    out = capsys.readouterr().out
    assert "pre-dock [approach] robot=arm, target=sirom, max_angular_speed=20 deg/s, tolerance=0.005, " \
           "back_off=40 mm" in out
    assert "0.3490658503988659" not in out and "max_speed=50 mm/s" in out


def test_a_web_view_no_browser_saw_says_how_to_watch_the_next_run(capsys):
    assert main(["run", str(DEMO), "--view", "web", "--port", "0"]) == 0
    err = capsys.readouterr().err
    assert "the run ended before a browser connected; add --paused (start paused) or --hold" in err
