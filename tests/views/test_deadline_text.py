"""Both views say what a deadline miss is, in the same words."""

from __future__ import annotations

import html
import re
from importlib.resources import files

from orbitree.runtime.snapshot import Snapshot
from orbitree.views.format import DEADLINE_MISS
from orbitree.views.terminal import TerminalView


def test_web_view_tooltip_explains_a_deadline_miss():
    page = (files("orbitree.views") / "web_static" / "index.html").read_text(encoding="utf-8")
    title = re.search(r'id="misses-label" title="([^"]*)"', page)
    assert title is not None and html.unescape(title.group(1)) == DEADLINE_MISS


def test_terminal_view_explains_a_deadline_miss_once_there_is_one():
    from rich.console import Console

    view = TerminalView()
    view.nodes, view.title = [{"id": 0, "parent": None, "name": "root", "kind": "wait"}], "m"

    def shown(misses: int) -> str:
        snap = Snapshot(tick=1, t=0.008, tick_ms=0.1, statuses=["RUNNING"], feedback=[""], blackboard={},
                        deadline_misses=misses, events=[])
        console = Console(width=1000, record=True)
        console.print(view.render(snap))
        return console.export_text()

    assert "deadline miss: a tick" not in shown(0)
    assert DEADLINE_MISS in shown(3).replace("\n", " ")
