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
