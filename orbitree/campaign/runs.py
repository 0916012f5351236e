"""One campaign run in a worker, the same for every pool: the run spec sent to the worker, the
function that runs it, and the row it produces; the progress bar and the result of a campaign.
"""

from __future__ import annotations

import signal
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from orbitree.behaviours.catalogue import load_mission
from orbitree.nodes.context import Context
from orbitree.runtime.executive import Executive, Interrupted


@dataclass(frozen=True)
class RunSpec:
    """One run, as sent to a worker (picklable)."""

    run_id: str
    case: str
    cycle: int
    seed: int
    mission: str
    overrides: tuple[str, ...]
    log: str | None
    keep_log: Literal["all", "failures", "none"] = "all"



# Set in each worker process by the pool's initializer: the only way to hand a process-shared
# Event to a pool worker. None in the parent (and when a runner is called directly).
_cancel_event: Any = None


def init_worker(cancel: Any) -> None:
    global _cancel_event
    _cancel_event = cancel
    # Ctrl-C reaches the whole process group; the parent alone decides what it cancels.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_when_cancelled(ctx: Context) -> list[dict[str, Any]]:
    """Per-tick hook: abort the run (as SIGTERM would) once the campaign is cancelled."""
    if _cancel_event is not None and _cancel_event.is_set():
        raise Interrupted()
    return []


def run_case(spec: RunSpec) -> dict[str, Any]:
    """Load the mission with the case's overrides and run it as ``orbitree run --view none`` does."""
    mission = load_mission(spec.mission, list(spec.overrides))
    executive = Executive(mission, seed=spec.seed, log_path=spec.log, safety=(_stop_when_cancelled,))
    result = executive.run()
    if result.error is not None:  # an exception in a leaf or driver: a crash, not a safe stop
        return {"status": "error", "reason": result.reason, "summary": result.summary}
    return {"status": result.status, "reason": result.reason, "summary": result.summary}


def execute(runner: Callable[[RunSpec], dict[str, Any]], spec: RunSpec) -> dict[str, Any]:
    """Run one spec in a worker; any exception becomes a row with status ``error``.

    With ``logs: failures`` the run goes without a log (writing one costs ~10 % of a flagship
    run) and a run that did not succeed is run again with its log: the same seed gives the same
    run, so the log is the failed run's. The row is the logged run's; its summary's ``replay``
    says whether the first run ended the same (a run that does not is not deterministic).
    """
    started = time.perf_counter()
    quiet = spec.log is not None and spec.keep_log == "failures"
    outcome = _attempt(runner, replace(spec, log=None) if quiet else spec)
    log = spec.log
    if quiet and outcome["status"] != "SUCCESS" and not _cancelled():
        outcome = _replayed(outcome, _attempt(runner, spec))
    elif log and spec.keep_log == "failures":
        Path(log).unlink(missing_ok=True)  # (none written)
        log = None
    return make_row(spec, outcome, time.perf_counter() - started, log)


def _attempt(runner: Callable[[RunSpec], dict[str, Any]], spec: RunSpec) -> dict[str, Any]:
    try:
        return runner(spec)
    except Exception as exc:
        text = "; ".join(str(exc).splitlines()) or "(no message)"
        if spec.log:
            trace = Path(spec.log).with_suffix(".error.txt")
            trace.parent.mkdir(parents=True, exist_ok=True)
            trace.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
        return {"status": "error", "reason": f"{type(exc).__name__}: {text}", "summary": None}


def _cancelled() -> bool:
    return _cancel_event is not None and _cancel_event.is_set()


def _replayed(first: dict[str, Any], logged: dict[str, Any]) -> dict[str, Any]:
    """The logged rerun's outcome, its summary saying whether the first run ended the same."""
    ends = [(o["status"], o["reason"], (o.get("summary") or {}).get("sim_time_s")) for o in (first, logged)]
    same = ends[0] == ends[1]
    note = "same" if same else f"differs: the first run ended {ends[0][0]} at {ends[0][2]} s: {ends[0][1]}"
    return {**logged, "summary": {**(logged.get("summary") or {}), "replay": note}}


def error_row(spec: RunSpec, reason: str) -> dict[str, Any]:
    """The row of a run that produced no outcome (its worker died, it did not pickle, ...)."""
    return make_row(spec, {"status": "error", "reason": reason}, 0.0, None)


def make_row(spec: RunSpec, outcome: dict[str, Any], wall: float, log: str | None) -> dict[str, Any]:
    summary = outcome.get("summary") or {}
    return {
        "run": spec.run_id,
        "case": spec.case,
        "cycle": spec.cycle,
        "seed": spec.seed,
        "status": outcome["status"],
        "reason": outcome["reason"],
        "sim_time_s": summary.get("sim_time_s"),
        "wall_time_s": round(wall, 3),
        "summary": summary,
        # the run's seed is its own column: a campaign's or case's 'seed=' is only seed0 of the cycles
        "overrides": [o for o in spec.overrides if not o.startswith("seed=")],
        "log": log,
    }


@dataclass
class CampaignResult:
    rows: list[dict[str, Any]]  # in plan order
    planned: int  # runs planned
    cases: int  # cases planned
    elapsed_s: float
    interrupted: bool = False
    aggregate: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.interrupted and len(self.rows) == self.planned and all(
            r["status"] == "SUCCESS" for r in self.rows
        )


class Progress:
    """A rich progress bar (done/total, successes, failures, ETA) on stderr, or nothing."""

    def __init__(self, title: str, total: int, show: bool) -> None:
        self.counts: Counter[str] = Counter()
        self.bar: Any = None
        if show:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[green]{task.fields[ok]} ok[/] [red]{task.fields[failed]} failed[/]"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self.task = self.bar.add_task(title, total=total, ok=0, failed=0)

    def __enter__(self) -> Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def advance(self, status: str) -> None:
        self.counts[status] += 1
        if self.bar is not None:
            ok = self.counts["SUCCESS"]
            self.bar.update(self.task, advance=1, ok=ok, failed=self.counts.total() - ok)

    def note(self, text: str) -> None:
        if self.bar is not None:
            self.bar.console.print(text)
