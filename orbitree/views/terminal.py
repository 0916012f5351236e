"""``--view terminal``: the tree with status colours, the running path, blackboard values and
tick statistics, drawn with rich.

The tick loop only hands over a reference to the latest snapshot (``publish`` is an attribute
assignment); a background thread draws at most ``max_hz`` times a second, so drawing never
holds up a tick. Intermediate snapshots are simply skipped.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from orbitree.runtime.snapshot import Snapshot
from orbitree.views.format import DEADLINE_MISS, display_value

STYLE = {"RUNNING": "bold yellow", "SUCCESS": "green", "FAILURE": "red", "INVALID": "dim"}
GLYPH = {"RUNNING": "▶", "SUCCESS": "✔", "FAILURE": "✘", "INVALID": "·"}


def short_value(value: Any, width: int = 64, key: str = "") -> str:
    text = " ".join(display_value(key, value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


class TerminalView:
    def __init__(self, console: Console | None = None, max_hz: float = 10.0, max_keys: int = 14):
        self.console = console or Console()
        self.interval = 1.0 / max_hz
        self.max_keys = max_keys
        self.nodes: list[dict[str, Any]] = []
        self.title = ""
        self._latest: Snapshot | None = None
        self._drawn: Snapshot | None = None
        self._events: deque[str] = deque(maxlen=6)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Live | None = None
        self.frames = 0  # how many times the view was redrawn

    # View protocol -----------------------------------------------------------------------
    def start(self, header: dict[str, Any]) -> None:
        self.nodes = header["nodes"]
        self.title = f"{header['mission']}  ·  {header['rate_hz']:g} Hz  ·  seed {header['seed']}"
        self._live = Live(console=self.console, auto_refresh=False, transient=False)
        self._live.start()
        self._thread = threading.Thread(target=self._loop, name="terminal-view", daemon=True)
        self._thread.start()

    def publish(self, snapshot: Snapshot) -> None:
        self._latest = snapshot
        for event in snapshot.events:  # rare; kept so that skipped snapshots lose no message
            self._events.append(_event_line(event))

    def finish(self, summary: dict[str, Any]) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._live is not None:
            if self._latest is not None:
                self._live.update(self.render(self._latest, summary), refresh=True)
            self._live.stop()
            if not self.console.is_terminal:  # piped: end the last drawing's line
                self.console.line()

    # drawing -----------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            snap = self._latest
            if snap is not None and snap is not self._drawn and self._live is not None:
                self._drawn = snap
                self._live.update(self.render(snap), refresh=True)
                self.frames += 1

    def render(self, snap: Snapshot, summary: dict[str, Any] | None = None) -> Group:
        stats = Text.assemble(
            (f"t = {snap.t:8.3f} s", "bold"),
            f"   tick {snap.tick}   tree {snap.tick_ms:.3f} ms   deadline misses {snap.deadline_misses}",
        )
        tree = self._tree(snap, final=summary is not None)
        parts: list[Any] = [Text(self.title, style="bold cyan"), stats]
        if snap.deadline_misses:
            parts.append(Text(DEADLINE_MISS, style="dim"))
        parts.append(tree)
        if snap.blackboard:
            parts.append(self._blackboard(snap.blackboard))
        if self._events:
            lines = "\n".join(list(self._events))
            parts.append(Panel(lines, title="events", title_align="left"))
        if summary is not None:
            style = "green" if summary["status"] == "SUCCESS" else "red"
            parts.append(Text(f"{summary['status']}: {summary['reason']}", style=f"bold {style}"))
        return Group(*parts)

    def _tree(self, snap: Snapshot, final: bool = False) -> Group:
        """The mission tree; a second root (the safety recovery tree) once it has run.

        Only what is running is unfolded (at the end: what failed); a folded node shows how many
        nodes it hides, so a 40-node mission fits a terminal."""
        built: dict[int, Tree] = {}
        roots: list[Tree] = []
        hidden = self._hidden_counts()
        for node in self.nodes:
            i, parent = node["id"], node["parent"]
            if parent is not None and (parent not in built or not self._unfolded(parent, snap, final)):
                continue
            status = snap.statuses[i]
            label = Text.assemble((f"{GLYPH[status]} {node['name']}", STYLE[status]), (f"  {node['kind']}", "dim"))
            if snap.feedback[i] and (status == "RUNNING" or (final and status == "FAILURE")):
                label.append(f"  {snap.feedback[i]}", style="italic")
            if hidden[i] and not self._unfolded(i, snap, final):
                label.append(f"  +{hidden[i]}", style="dim")
            if parent is None:
                built[i] = Tree(label, guide_style="dim")
                if i == 0 or status != "INVALID":
                    roots.append(built[i])
            else:
                built[i] = built[parent].add(label)
        return Group(*roots)

    def _unfolded(self, i: int, snap: Snapshot, final: bool) -> bool:
        status = snap.statuses[i]
        return self.nodes[i]["parent"] is None or status == "RUNNING" or (final and status == "FAILURE")

    def _hidden_counts(self) -> list[int]:
        """Nodes below each node (what folding it hides)."""
        counts = [0] * len(self.nodes)
        for node in reversed(self.nodes):
            if node["parent"] is not None:
                counts[node["parent"]] += counts[node["id"]] + 1
        return counts

    def _blackboard(self, values: dict[str, Any]) -> Table:
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
        table.add_column("blackboard")
        table.add_column("value")
        for key in sorted(values)[: self.max_keys]:
            table.add_row(key, short_value(values[key], key=key))
        if len(values) > self.max_keys:
            table.add_row(f"… {len(values) - self.max_keys} more", "")
        return table


def _event_line(event: dict[str, Any]) -> str:
    detail = event.get("message") or event.get("reason") or ""
    return f"{event.get('t', 0.0):8.3f} s  {event.get('kind')}  {detail}"
