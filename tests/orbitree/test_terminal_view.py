"""The terminal view draws the tree from snapshots, at a bounded rate, off the tick thread."""

from __future__ import annotations

import io

from rich.console import Console

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive
from orbitree.views.terminal import TerminalView
from tests.conftest import TEST_REGISTRY, write_mission


def test_view_shows_statuses_running_path_blackboard_and_final_result(tmp_path):
    path = write_mission(
        tmp_path,
        """
        sequence:
          name: mission
          children:
            - set: {name: mark, key: /phase, value: approach}
            - wait: {name: hold, duration: 0.5 s}
            - log: finished
        """,
    )
    mission = load_mission(path, registry=TEST_REGISTRY)
    out = io.StringIO()
    view = TerminalView(
        Console(file=out, width=100, force_terminal=False, color_system=None), max_hz=20
    )
    executive = Executive(mission, views=[view])
    result = executive.run()
    # a snapshot taken mid-run: hold is the running leaf, on the running path under mission
    frame = io.StringIO()
    console = Console(file=frame, width=100, color_system=None)
    snapshot = _snapshot_with(
        view,
        statuses=["RUNNING", "SUCCESS", "RUNNING", "INVALID"],
        feedback=["", "", "0.30 s left", ""],
    )
    console.print(view.render(snapshot))
    text = frame.getvalue()
    assert "▶ mission" in text and "✔ mark" in text and "▶ hold" in text and "0.30 s left" in text
    assert "· log" in text
    assert result.status == "SUCCESS"
    final = out.getvalue()
    assert (
        "SUCCESS: tree returned SUCCESS" in final and "'approach'" in final and "finished" in final
    )


def test_view_redraws_at_most_max_hz_and_never_blocks_publish(tmp_path):
    path = write_mission(tmp_path, "wait: 1 s", extra="rate_hz: 100\n")
    mission = load_mission(path, registry=TEST_REGISTRY)
    view = TerminalView(Console(file=io.StringIO(), width=80), max_hz=10)
    result = Executive(mission, views=[view], realtime=True).run()  # 1 s of wall time, 100 ticks
    assert result.summary["ticks"] == 101  # RUNNING at t = 0 ... 0.99, SUCCESS at 1.0
    assert 3 <= view.frames <= 11


def _snapshot_with(view, statuses, feedback):
    from orbitree.runtime.snapshot import Snapshot

    return Snapshot(
        tick=3,
        t=0.3,
        statuses=statuses,
        feedback=feedback,
        blackboard={"/phase": "approach"},
        tick_ms=0.05,
        deadline_misses=0,
        events=[],
    )


def test_idle_branches_fold_and_values_read_in_mm_deg_and_newtons(tmp_path):
    import numpy as np
    from scipy.spatial.transform import Rotation

    path = write_mission(
        tmp_path,
        """
        sequence:
          name: mission
          children:
            - sequence: {name: idle, children: [wait: 1 s, wait: 2 s, log: never]}
            - sequence: {name: busy, children: [wait: {name: hold, duration: 1 s}]}
        """,
    )
    mission = load_mission(path, registry=TEST_REGISTRY)
    view = TerminalView(Console(file=io.StringIO(), width=120), max_hz=20)
    Executive(mission, views=[view]).run()
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_euler("xyz", [10, 0, 90], degrees=True).as_matrix()
    pose[:3, 3] = [0.6, -0.2, 0.05]
    snapshot = _snapshot_with(view, ["RUNNING", "SUCCESS", "SUCCESS", "SUCCESS", "SUCCESS", "RUNNING", "RUNNING"],
                              [""] * 7)
    snapshot.blackboard = {"/robot/arm/tcp_pose": pose, "/robot/arm/wrench": np.array([1, 2, 30, 0, 0.5, 0])}
    frame = io.StringIO()
    Console(file=frame, width=120, color_system=None).print(view.render(snapshot))
    text = frame.getvalue()
    tree = text.split("blackboard")[0]
    assert "✔ idle  sequence  +3" in tree and "log" not in tree  # folded: its 3 nodes hidden
    assert "▶ busy" in text and "▶ hold" in text  # the running branch is unfolded
    assert "xyz [600.0, -200.0, 50.0] mm rpy [10.0, 0.0, 90.0] deg" in text
    assert "F [1.0, 2.0, 30.0] N τ [0.00, 0.50, 0.00] N·m" in text


def test_piped_output_ends_the_final_drawing_before_the_result_line(tmp_path):
    path = write_mission(tmp_path, "wait: 0.2 s")
    out = io.StringIO()
    view = TerminalView(Console(file=out, width=80, force_terminal=False, color_system=None), max_hz=20)
    Executive(load_mission(path, registry=TEST_REGISTRY), views=[view]).run()
    assert out.getvalue().endswith("SUCCESS: tree returned SUCCESS\n")
