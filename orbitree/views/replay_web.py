"""``orbitree replay --view web``: a mission log on the web view's page, with a time slider
(:class:`ReplayWebView`; the page, endpoints and threads: :mod:`orbitree.views.web`)."""

from __future__ import annotations

import math
import time
from typing import Any

from orbitree.runtime.recorder import Log
from orbitree.views.http import DEFAULT_PORT
from orbitree.views.state import ViewState
from orbitree.views.web_app import _App


class ReplayWebView(_App):
    """A mission log on the same page, with a time slider, play/pause, step and speed.

    Starts playing when the first browser connects (unless ``paused``). Breakpoints stop
    playback at the record in which the node became RUNNING.
    """

    mode = "replay"

    def __init__(
        self,
        log: Log,
        host: str | None = None,
        port: int = DEFAULT_PORT,
        *,
        speed: float = 1.0,
        paused: bool = False,
        max_hz: float = 20.0,
    ) -> None:
        super().__init__(host, port, max_hz)
        if speed <= 0:
            raise ValueError(f"speed must be > 0, got {speed:g}")
        self.log = log
        self.records = log.ticks
        self.speed = speed
        self.playing = False
        self.autoplay = not paused
        self.position = -1  # index of the last record applied
        self.cursor = 0.0  # mission time played up to
        self.breakpoints: set[int] = set()
        self.reason = ""
        self.state = self._fresh()

    def listen(self) -> str:
        url = super().listen()
        self._spawn(self._play, "web-view-player")
        return url

    def on_subscribe(self) -> None:
        with self._lock:
            if self.autoplay:
                self.autoplay = False
                self.playing = bool(self.records)
                self.broadcast(self._update(control=True))

    def _fresh(self) -> ViewState:
        state = ViewState(self.log.header, self.mode)
        node_us = (self.log.footer or {}).get("node_tick_us")
        if node_us:
            state.set_node_us(node_us)
        return state

    # playback ----------------------------------------------------------------------------
    def _play(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.interval):
            now = time.monotonic()
            with self._lock:
                if self.playing:
                    self.cursor += (now - last) * self.speed
                    self._advance_to(self.cursor)
                    self.broadcast(self._update(control=True))
            last = now

    def _advance_to(self, t: float) -> None:
        """Apply the records up to mission time ``t`` (stopping at a breakpoint or the end)."""
        while self.position + 1 < len(self.records) and self.records[self.position + 1]["t"] <= t:
            if self._step_one():
                return

    def _step_one(self) -> bool:
        """Apply the next record; True when playback stopped (breakpoint or end of log)."""
        assert self.state is not None
        self.position += 1
        record = self.records[self.position]
        changes = _apply_record(self.state, record)
        hit = [i for i, status in changes if status == "RUNNING" and i in self.breakpoints]
        if self.position == len(self.records) - 1:
            self.state.finish((self.log.footer or {}).get("summary") or {"status": "TRUNCATED"})
            self.playing = False
            return True
        if hit and self.playing:
            self.playing = False
            self.reason = f"breakpoint {self.state.header['nodes'][hit[0]]['name']!r}"
            return True
        return False

    def _seek(self, index: int) -> None:
        index = max(-1, min(index, len(self.records) - 1))
        state = self._fresh()
        records, self.state, self.position = self.records, state, -1
        for k in range(index + 1):
            _apply_record(state, records[k])
        self.position = index
        if index == len(records) - 1:
            state.finish((self.log.footer or {}).get("summary") or {"status": "TRUNCATED"})
        self.cursor = records[index]["t"] if index >= 0 else 0.0
        self.reset(state)

    def _update(self, control: bool) -> dict[str, Any] | None:
        assert self.state is not None
        return self.state.update_message(self.control_state() if control else None)

    # controls ----------------------------------------------------------------------------
    def control_state(self) -> dict[str, Any]:
        records = self.records
        return {
            "paused": not self.playing,
            "held": not self.playing,
            "held_at": None,
            "reason": self.reason,
            "breakpoints": sorted(self.breakpoints),
            "finished": self.position == len(records) - 1,
            "playing": self.playing,
            "speed": self.speed,
            "position": self.position,
            "count": len(records),
            "t_end": records[-1]["t"] if records else 0.0,
            "truncated": self.log.truncated,
        }

    def control(self, command: dict[str, Any]) -> dict[str, Any]:
        action = command.get("action")
        with self._lock:
            self.autoplay = False
            if action == "pause":
                self.playing = False
            elif action == "resume":
                if self.position >= len(self.records) - 1:
                    self._seek(-1)  # play again from the start
                self.playing, self.reason = bool(self.records), ""
                self.cursor = self.records[self.position]["t"] if self.position >= 0 else 0.0
            elif action == "step":
                self.playing, self.reason = False, ""
                if self.position + 1 < len(self.records):
                    self._step_one()
                    self.cursor = self.records[self.position]["t"]
            elif action == "seek":
                self.playing = False
                self._seek(self._index(command))
            elif action == "speed":
                value = float(command["value"])
                if not (value > 0 and math.isfinite(value)):
                    raise ValueError("speed must be a finite number > 0")
                self.speed = value
            elif action == "break":
                node = command["node"]
                if not isinstance(node, int) or not 0 <= node < len(self.log.header["nodes"]):
                    raise ValueError(f"no node {node!r}")
                (self.breakpoints.add if command.get("on", True) else self.breakpoints.discard)(node)
            else:
                raise ValueError(f"unknown action {action!r} (pause, resume, step, seek, speed, break)")
            self.broadcast(self._update(control=True))
            return self.control_state()

    def _index(self, command: dict[str, Any]) -> int:
        if "index" in command:
            return int(command["index"])
        t = float(command["t"])
        index = -1
        for k, record in enumerate(self.records):  # the last record at or before t
            if record["t"] > t:
                break
            index = k
        return index


def _apply_record(state: ViewState, record: dict[str, Any]) -> list[tuple[int, str]]:
    return state.apply(
        record["n"],
        record["t"],
        record.get("tick_ms", 0.0),
        record.get("status"),
        record.get("feedback"),
        record.get("bb"),
        record.get("events"),
        scene=record.get("scene"),
    )
