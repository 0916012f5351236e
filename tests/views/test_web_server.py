"""The web view's server, stream and controls, driven over HTTP without a browser."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.cli import main
from orbitree.nodes.build import build_tree
from orbitree.nodes.context import Context
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log
from orbitree.views.state import ViewState, encode, phase_ids
from orbitree.views.web import ReplayWebView, WebView
from tests.conftest import TEST_REGISTRY, FakeDriver, write_mission
from tests.tests_support import ORBITREE_CLI
from tests.views.helpers import EventReader, control, request, run_with, state, wait_until

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "missions" / "demo_checkout.yaml"

THREE_STEPS = """
sequence:
  name: mission
  children:
    - set: {name: mark, key: /phase, value: approach}
    - wait: {name: hold, duration: 0.5 s}
    - log: finished
"""


@pytest.fixture
def demo_log(tmp_path):
    log = tmp_path / "demo.jsonl"
    assert Executive(load_mission(DEMO), log_path=str(log)).run().status == "SUCCESS"
    return read_log(log)


def _other_local_addresses() -> list[str]:
    """Addresses of this machine other than 127.0.0.1 (127.0.0.2 is always one on Linux)."""
    found = {"127.0.0.2"}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # no packet is sent; picks the outgoing address
            found.add(probe.getsockname()[0])
        except OSError:
            pass
    return sorted(found - {"127.0.0.1", "0.0.0.0"})


def test_server_binds_loopback_only_and_serves_only_its_static_files(demo_log):
    view = ReplayWebView(demo_log, port=0, paused=True)
    view.listen()
    try:
        assert view.bound_address == ("127.0.0.1", view.port)
        for address in _other_local_addresses():
            with pytest.raises(OSError), socket.create_connection((address, view.port), timeout=2):
                pass
        for path, kind in (("/", b"<!doctype html>"), ("/app.js", b"// orbitree"), ("/style.css", b"/*")):
            status, body = request(view.port, "GET", path)
            assert status == 200 and body.startswith(kind), path
        outside = [
            "/../pyproject.toml",
            "/../../../../etc/passwd",
            "/%2e%2e/%2e%2e/pyproject.toml",
            "/..%2f..%2fREADME.md",
            "/app.js/../web.py",
            "/web.py",
            "/web_static/app.js",
            "//etc/passwd",
            "/etc/passwd",
            "/index.html%00.py",
            "/favicon.ico",
        ]
        for path in outside:
            status, body = request(view.port, "GET", path)
            assert status == 404, path
            assert b"import" not in body and b"root:" not in body and b"[project]" not in body
        # a page on another name (DNS rebinding) or sending a form cannot reach the controls
        assert request(view.port, "GET", "/", host=f"evil.example:{view.port}")[0] == 403
        assert request(view.port, "POST", "/api/control", b"action=pause", "text/plain")[0] == 415
        assert request(view.port, "POST", "/api/control", {"action": "format-disk"})[0] == 400
        assert request(view.port, "PUT", "/api/control", {"action": "pause"})[0] == 405
    finally:
        view.close()


def test_host_given_explicitly_is_used():
    view = WebView(host="127.0.0.2", port=0)
    view.listen()
    try:
        assert view.bound_address[0] == "127.0.0.2"
        assert request_at("127.0.0.2", view.port, "/") == 200
    finally:
        view.close()


def test_camera_images_are_served_by_the_seq_the_page_was_told_of_while_kept():
    view = WebView(port=0)
    view.listen()
    try:
        assert request(view.port, "GET", "/camera/arm.jpg")[0] == 404  # nothing seen yet
        seqs = [view.keep_camera_image("arm", f"jpeg {k}".encode(), {"markers": []}) for k in range(10)]
        assert seqs == list(range(1, 11))
        assert request(view.port, "GET", "/camera/arm.jpg?seq=4") == (200, b"jpeg 3")
        assert request(view.port, "GET", "/camera/arm.jpg?seq=10") == (200, b"jpeg 9")
        # the last 8 are kept; an older, unknown or malformed seq gets the latest
        for query in ("?seq=2", "?seq=11", "?seq=x", "?seq=-3", "", "?seq=99999999999999999999"):
            assert request(view.port, "GET", f"/camera/arm.jpg{query}") == (200, b"jpeg 9"), query
        assert request(view.port, "GET", "/camera/other.jpg?seq=4")[0] == 404
    finally:
        view.close()


def request_at(address: str, port: int, path: str) -> int:
    import http.client

    conn = http.client.HTTPConnection(address, port, timeout=5)
    conn.request("GET", path)
    status = conn.getresponse().status
    conn.close()
    return status


def test_pause_step_resume_act_between_ticks_and_pausing_costs_no_mission_time(tmp_path):
    mission = load_mission(write_mission(tmp_path, THREE_STEPS), registry=TEST_REGISTRY)
    plain = Executive(mission).run()
    view = WebView(port=0, paused=True)
    view.listen()

    def script() -> None:
        wait_until(lambda: view.gate.state().held_at == 0, what="held before tick 0")
        assert state(view.port)["tick"]["n"] == -1  # nothing ticked yet
        control(view.port, action="step")
        wait_until(lambda: view.gate.state().held_at == 1, what="held before tick 1")
        wait_until(lambda: state(view.port)["tick"]["n"] == 0, what="tick 0 shown")
        control(view.port, action="step")
        wait_until(lambda: view.gate.state().held_at == 2, what="held before tick 2")
        wait_until(lambda: state(view.port)["tick"]["n"] == 1, what="tick 1 shown")
        assert state(view.port)["statuses"][2] == "RUNNING"  # node 2, hold, is waiting
        time.sleep(0.3)
        assert state(view.port)["tick"]["n"] == 1
        control(view.port, action="resume")

    result = run_with(Executive(mission, views=[view]), view, script)
    assert result.status == "SUCCESS"
    assert result.summary["sim_time_s"] == plain.summary["sim_time_s"]
    assert result.summary["ticks"] == plain.summary["ticks"]


def test_breakpoint_pauses_after_the_tick_in_which_the_node_became_running(tmp_path):
    mission = load_mission(write_mission(tmp_path, THREE_STEPS), registry=TEST_REGISTRY)
    view = WebView(port=0, paused=True)
    view.listen()

    def script() -> None:
        wait_until(lambda: view.gate.state().held, what="held at the start")
        assert control(view.port, action="break", node=2, on=True)["breakpoints"] == [2]
        control(view.port, action="resume")
        wait_until(lambda: view.gate.state().held_at == 1, what="stopped by the breakpoint")
        assert view.gate.state().reason == "breakpoint 'hold'"
        wait_until(lambda: state(view.port)["tick"]["n"] == 0, what="tick 0 shown")
        assert state(view.port)["statuses"][2] == "RUNNING"
        control(view.port, action="break", node=2, on=False)
        control(view.port, action="resume")

    assert run_with(Executive(mission, views=[view]), view, script).status == "SUCCESS"


def test_hold_on_the_wall_clock_stops_the_drivers_and_is_not_mission_time(tmp_path):
    mission = load_mission(write_mission(tmp_path, "wait: 0.2 s"), registry=TEST_REGISTRY)
    driver = FakeDriver()
    view = WebView(port=0, paused=True)
    view.listen()

    def script() -> None:
        wait_until(lambda: "stop" in driver.calls, what="drivers stopped by the hold")
        assert driver.calls == ["setup", "stop"] and driver.reads == 0
        time.sleep(0.4)
        control(view.port, action="resume")

    executive = Executive(mission, clock="wall", drivers=[driver], views=[view])
    result = run_with(executive, view, script)
    assert result.status == "SUCCESS"
    assert result.summary["sim_time_s"] < 0.35  # the 0.4 s held are not mission time


def test_stream_carries_every_status_change_of_the_run_in_order(tmp_path):
    log = tmp_path / "run.jsonl"
    view = WebView(port=0)
    view.listen()
    reader = EventReader(view.port)
    reader.start()
    wait_until(lambda: view.viewers == 1, what="a viewer")
    result = Executive(load_mission(DEMO), views=[view], log_path=str(log)).run()  # flat out
    reader.join(timeout=10)
    assert result.status == "SUCCESS"
    assert reader.messages[0]["type"] == "waiting" and reader.messages[1]["type"] == "init"
    assert reader.trace() == read_log(log).status_trace()
    assert reader.messages[-1]["done"]["status"] == "SUCCESS"
    assert view.dropped == 0


class PlotDriver(FakeDriver):
    """Writes the keys the page plots, as the approach leaf and the F/T driver would."""

    def keys(self) -> list[str]:
        return ["/servo/error", "/servo/gain", "/robot/arm/wrench"]

    def read(self, now: float) -> dict:
        self.reads += 1
        return {
            "/servo/error": np.full(6, 0.1 / self.reads),
            "/servo/gain": 0.4 + 0.01 * self.reads,
            "/robot/arm/wrench": np.array([1.0, 2.0, 3.0, 0.1, 0.2, np.nan]),
        }


def test_plotted_keys_reach_the_page_even_outside_the_missions_view_keys(tmp_path):
    path = write_mission(tmp_path, "wait: 1 s", extra="view: {keys: [/nothing/*]}\n")
    mission = load_mission(path, registry=TEST_REGISTRY)
    view = WebView(port=0)
    view.listen()
    reader = EventReader(view.port)
    reader.start()
    wait_until(lambda: view.viewers == 1, what="a viewer")
    Executive(mission, drivers=[PlotDriver()], views=[view]).run()
    reader.join(timeout=10)
    series: dict[str, list] = {}
    for message in reader.messages:
        for name, rows in message.get("series", {}).items():
            series.setdefault(name, []).extend(rows)
    assert set(series) == {"servo_t", "servo_r", "gain", "force:arm", "torque:arm"}
    assert series["servo_t"][0] == [0.0, 0.1, 0.1, 0.1]
    assert series["torque:arm"][0] == [0.0, 0.1, 0.2, None]  # NaN is a gap in the plot
    assert len(series["gain"]) == 11  # 10 Hz for 1 s, and the final tick


def test_replay_steps_seeks_and_stops_at_breakpoints(demo_log):
    view = ReplayWebView(demo_log, port=0, paused=True)
    view.listen()
    try:
        for _ in range(3):
            control(view.port, action="step")
        first = state(view.port)
        assert first["tick"]["n"] == demo_log.ticks[2]["n"]
        assert [(n, i, s) for n, _, i, s in first["changes"]] == [
            c for c in demo_log.status_trace() if c[0] <= demo_log.ticks[2]["n"]
        ]
        control(view.port, action="seek", index=len(demo_log.ticks) - 1)
        end = state(view.port)
        assert [(n, i, s) for n, _, i, s in end["changes"]] == demo_log.status_trace()
        assert end["done"] == demo_log.footer["summary"] and end["control"]["finished"]
        soak = next(n["id"] for n in demo_log.header["nodes"] if n["name"] == "three soak cycles")
        control(view.port, action="seek", index=-1)
        control(view.port, action="break", node=soak, on=True)
        control(view.port, action="speed", value=50)
        control(view.port, action="resume")
        wait_until(lambda: not state(view.port)["control"]["playing"], what="playback stopped")
        stopped = state(view.port)
        record = demo_log.ticks[stopped["control"]["position"]]
        assert record["status"][str(soak)] == "RUNNING"
        assert stopped["control"]["reason"] == "breakpoint 'three soak cycles'"
        control(view.port, action="seek", t=1.0)
        assert state(view.port)["tick"]["t"] == 1.0
    finally:
        view.close()


def test_phases_from_a_log_header_match_the_executives():
    for path in sorted((ROOT / "missions").glob("*.yaml")):
        mission = load_mission(path)
        tree = build_tree(mission.root, Context())
        assert phase_ids(tree.structure()) == tree.phase_ids(), path.name


def test_messages_are_strict_json_even_with_nan_and_images():
    data = encode({"x": float("nan"), "a": np.array([1.0, np.inf]), "img": np.zeros((480, 640))})

    def refuse(name):
        raise ValueError(name)

    assert json.loads(data, parse_constant=refuse) == {
        "x": "nan",
        "a": [1.0, "inf"],
        "img": {"array": [480, 640], "dtype": "float64"},
    }


def test_state_keeps_the_last_status_change_history_for_late_viewers():
    state_ = ViewState({"nodes": [{"id": 0, "name": "a", "kind": "wait", "parent": None}]}, "live")
    state_.apply(0, 0.0, 0.1, {0: "RUNNING"})
    state_.update_message(None)
    state_.apply(1, 0.1, 0.1, {"0": "SUCCESS"})
    late = state_.init_message({})
    assert late["changes"] == [[0, 0.0, 0, "RUNNING"], [1, 0.1, 0, "SUCCESS"]]
    assert state_.update_message(None) is None  # an init is a full picture: nothing pending


def test_cli_rejects_a_bad_log_and_a_taken_port(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "header", "format": "something-else"}\n')
    assert main(["replay", str(bad)]) == 2
    assert "not an orbitree log" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["run", str(DEMO), "--view", "web", "--port", str(port)]) == 2
        assert "cannot serve the web view" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("sig", "reason"),
    [(signal.SIGINT, "interrupted (Ctrl-C)"), (signal.SIGTERM, "interrupted by signal")],
    ids=["ctrl-c", "sigterm"],
)
def test_a_paused_run_still_ends_on_ctrl_c_and_sigterm(tmp_path, sig, reason):
    summary = tmp_path / "s.json"
    command = ["run", str(DEMO), "--view", "web", "--port", "0", "--paused", "--summary", str(summary)]
    proc = subprocess.Popen(
        [*ORBITREE_CLI, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    port = int(proc.stdout.readline().split("127.0.0.1:")[1].split("/")[0])
    # ("waiting" until the executive has started the view, then an init with the controls)
    wait_until(lambda: state(port).get("control", {}).get("held"), what="held before tick 0")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 1, err
    assert json.loads(summary.read_text())["reason"] == reason


def test_the_web_timeline_rows_are_the_missions_phases_as_in_the_summary():
    mission = load_mission(ROOT / "missions" / "sirom_dock.yaml")
    tree = build_tree(mission.root, Context())
    state = ViewState({"nodes": tree.structure(), "phases": mission.model.phases}, "live")
    assert [tree.specs[i].name for i in state.phases] == ["search", "approach", "capture", "dock", "abandon"]
    assert state.phases == tree.phase_ids(mission.model.phases)  # the ids the summary's phase_s uses


def test_the_page_gets_poses_and_wrenches_with_units_live_and_replayed():
    pose = np.eye(4)
    pose[:3, 3] = [0.6, -0.2, 0.05]
    state = ViewState({"nodes": [{"id": 0, "name": "w", "kind": "wait", "parent": None}]}, "live")
    state.apply(1, 0.008, 0.1, {0: "RUNNING"}, bb={"/robot/arm/tcp_pose": pose, "/mission/phase": "dock",
                                                   "/robot/arm/wrench": np.array([1.0, 2, 30, 0, 0.5, 0])})
    texts = state.update_message(None)["bb_text"]
    assert texts == {"/robot/arm/tcp_pose": "xyz [600.0, -200.0, 50.0] mm  rpy [0.0, 0.0, 0.0] deg",
                     "/robot/arm/wrench": "F [1.0, 2.0, 30.0] N  τ [0.00, 0.50, 0.00] N·m"}  # a string has none
    replayed = ViewState(state.header, "replay")  # a log holds lists
    replayed.apply(1, 0.008, 0.1, {0: "RUNNING"}, bb={"/robot/arm/tcp_pose": pose.tolist()})
    assert replayed.init_message({})["bb_text"]["/robot/arm/tcp_pose"].startswith("xyz [600.0, -200.0, 50.0] mm")


def test_the_jpl_grapple_run_plots_both_arms_wrenches_through_contact():
    # the seed's mission to just past the first contact (5.2 s): both arms' wrist wrenches reach
    # the page as force/torque series, and the pressing of the Velcro shows in them
    mission = load_mission(Path(__file__).resolve().parents[2] / "missions" / "jpl_grapple.yaml",
                           ["max_duration=5.6 s"])
    view = WebView(port=0)
    view.listen()
    reader = EventReader(view.port)
    reader.start()
    wait_until(lambda: view.viewers == 1, what="a viewer")
    Executive(mission, views=[view]).run()
    reader.join(timeout=20)
    series: dict[str, list] = {}
    for message in reader.messages:
        for name, rows in message.get("series", {}).items():
            series.setdefault(name, []).extend(rows)
    assert {"force:left", "force:right", "torque:left", "torque:right"} <= set(series)
    for robot in ("left", "right"):
        rows = np.array(series[f"force:{robot}"], dtype=float)
        assert rows[-1, 0] > 5.5 and len(rows) > 100  # sampled through the run (50 Hz at most)
        assert np.linalg.norm(rows[rows[:, 0] > 5.2, 1:], axis=1).max() > 15.0  # the contact, pressed
    shown = {key for message in reader.messages for key in message.get("bb", {})}
    assert {"/robot/left/wrench", "/robot/right/wrench", "/grapple/internal_force"} <= shown
