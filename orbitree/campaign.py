"""``orbitree campaign``: run one mission many times on a local process pool (or a Dask cluster:
:mod:`orbitree.campaign_dask`) and tabulate the runs.

A campaign file (YAML, paths relative to it)::

    campaign: sirom-iso9283          # name, used in outputs
    description: ISO 9283 pose repeatability of the SIROM dock
    mission: ../sirom_dock.yaml      # the mission every run starts from
    workers: 4                       # process pool size (default: os.cpu_count(); --workers wins)
    cycles: 5                        # runs per case, with seeds seed0, seed0 + 1, ...
    seed: 1                          # seed0 (default: the case's mission 'seed' after overrides)
    logs: all                        # mission log per run: all | failures | none
    envelope: sirom                  # limits drawn in the plots (default: the mission's capture envelope)
    set:                             # overrides for every case, as --set KEY: VALUE
      max_duration: 60 s
    cases:                           # explicit cases, each with an id and its own overrides
      - {id: near, set: {robots.arm.start.offset: {xyz: [0, 0, 50 mm]}}}
      - {id: far,  set: {robots.arm.start.offset: {xyz: [0, 0, 150 mm]}}}
    grid:                            # cartesian product of values per key
      targets.sirom.pose.xyz: [[0.6, 0.2, 0.0], [0.6, -0.2, 0.0]]
      targets.sirom.pose.rpy: [[0, 0, 0], [0, 0, 30]]

**Cases.** Every override is a ``--set``-style assignment: a dotted key of the mission (list items
by index) and a YAML value, so anything a mission holds can vary per case — a target placement,
a start pose, a gain, a fault schedule (``faults: [...]``). The cases are every combination of
one entry of ``cases:`` (one empty case when there is none) and one point of ``grid:`` (the
cartesian product of its lists, in key order; one empty point when there is none). A case's id is
its ``id`` (default ``c1``, ``c2``, ...; ``base`` when there are no cases), joined with the grid
point's ``g1``, ``g2``, ... by a dash. Ids name log files, so they are letters, digits, ``_``
and ``-``.

**Overrides apply in this order**, later ones winning: the mission file, the campaign's
``seed``, the campaign's ``set``, the command line's ``--set``, the case's ``set``, the grid
point. Every case's mission is loaded and checked before anything runs; a bad override is
reported as ``campaign.yaml:line:col: message`` at the value in the campaign file (exit code 2).

**Runs.** Each case runs ``cycles`` times, cycle k with seed ``seed0 + k``, in a worker process
(``spawn``: workers import orbitree afresh, so a run never inherits state from the parent or
from another run). A worker loads the mission with the case's overrides and runs it in-process
with the same ``Executive`` as ``orbitree run --view none`` (simulated clock, as fast as the CPU
allows), logging to ``DIR/runs/<case>.<cycle>.jsonl``. Loading in-process rather than starting
one ``orbitree run`` subprocess per run saves the ~1.5 s of imports per run, and the pool's
workers are still separate processes, so a crash is contained. A run that raises is recorded with
status ``error`` and the exception (traceback in ``runs/<case>.<cycle>.error.txt``); a worker
that dies (a segfault in a native library) is replaced and its runs retried once before they are
recorded as ``error``. Ctrl-C stops starting runs and aborts the running ones within a tick (their
logs get footers), writes the outputs of what ran, and exits 130.

**Outputs** (written by :mod:`orbitree.campaign_outputs`) in ``DIR``: ``summary.csv`` (one row
per run: ``run, case, cycle, seed, status, reason, sim_time_s, wall_time_s`` — wall-clock
seconds the worker spent on the run, loading included — then the run summary flattened with
dots: ``final_error.x_mm``, ..., ``in_capture_envelope``, ``max_contact_force_n``,
``phase_s.<name>``, lists as JSON; then ``overrides`` and ``log``), ``campaign.json`` (aggregate
figures), ``faults.csv`` (outcome per injected fault kind, when faults were injected), and the
plots of :func:`orbitree.report.campaign_figures` with an ``index.md``.

Exit codes of the command: 0 when every run succeeded, 1 when any did not, 2 on bad input, 130
when interrupted.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from orbitree.context import Context
from orbitree.errors import MissionError
from orbitree.executive import Executive, Interrupted
from orbitree.mission import Mission, load_mission
from orbitree.skills.capture import ENVELOPES
from orbitree.spec import pydantic_diagnostics
from orbitree.yamlsrc import PathKey, Source, load_file

CASE_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
OverrideKey = Annotated[str, StringConstraints(pattern=r"^[^=\s]+$")]
RETRIES_AFTER_WORKER_DEATH = 1


class CaseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    id: str | None = Field(None, pattern=CASE_ID, description="case id (letters, digits, _ and -)")
    description: str = ""
    overrides: dict[OverrideKey, Any] = Field(
        {}, alias="set", description="mission overrides of this case: dotted key -> YAML value"
    )


class CampaignModel(BaseModel):
    """The top level of a campaign file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    campaign: str = Field(min_length=1, description="campaign name, used in outputs")
    description: str = ""
    mission: str = Field(min_length=1, description="mission file, relative to the campaign file")
    workers: int | None = Field(None, ge=1, description="worker processes (default: CPU count)")
    cycles: int = Field(1, ge=1, description="runs per case, seeds seed0 + 0, 1, ...")
    seed: int | None = Field(None, description="seed0 of every case (default: the mission's seed)")
    logs: Literal["all", "failures", "none"] = Field("all", description="which runs keep a mission log")
    envelope: str | None = Field(None, description="capture envelope whose limits the plots draw")
    overrides: dict[OverrideKey, Any] = Field({}, alias="set", description="overrides of every case")
    cases: list[CaseModel] = Field([], description="explicit cases")
    grid: dict[OverrideKey, Annotated[list[Any], Field(min_length=1)]] = Field(
        {}, description="cartesian product of override values"
    )

    @field_validator("envelope")
    @classmethod
    def _known_envelope(cls, value: str | None) -> str | None:
        if value is not None and value not in ENVELOPES:
            raise ValueError(f"unknown envelope {value!r}; known: {', '.join(ENVELOPES)}")
        return value


@dataclass(frozen=True)
class Case:
    id: str
    overrides: tuple[str, ...]  # KEY=VALUE, in the order they apply
    seed0: int


@dataclass
class Campaign:
    model: CampaignModel
    file: Path
    mission: Path
    cases: list[Case]
    envelope: str | None

    @property
    def name(self) -> str:
        return self.model.campaign


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


# --------------------------------------------------------------------------- loading


def assignment(key: str, value: Any) -> str:
    """``KEY=VALUE`` with VALUE written as one line of YAML (what ``--set`` parses back)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=float("inf"), allow_unicode=True)
    text = text.removesuffix("\n").removesuffix("\n...").strip()  # a scalar document ends "..."
    return f"{key}={text}"


def load_campaign(path: str | Path, cli_overrides: list[str] | tuple[str, ...] = ()) -> Campaign:
    """Load and check a campaign file and every case's mission, or raise ``MissionError``."""
    file = Path(path)
    data, source = load_file(file)
    if not isinstance(data, dict):
        raise MissionError([source.at((), f"a campaign is a mapping of keys, got {type(data).__name__}")])
    try:
        model = CampaignModel.model_validate(data)
    except ValidationError as exc:
        raise MissionError(pydantic_diagnostics(exc, source, (), "", model=CampaignModel)) from None
    mission = file.parent / model.mission
    if not mission.is_file():
        raise MissionError([source.at(("mission",), f"mission: no such file: {mission}")])
    common: list[tuple[str, PathKey | None]] = []
    if model.seed is not None:
        common.append((f"seed={model.seed}", ("seed",)))
    common += [(assignment(k, v), ("set", k)) for k, v in model.overrides.items()]
    common += [(text, None) for text in cli_overrides]
    base = _check(mission, common, source)  # one report for mistakes every case would repeat
    cases = _cases(model, common, source)
    checked, errors = [], []
    for case_id, overrides in cases:
        try:
            seed0 = _check(mission, overrides, source).model.seed
        except MissionError as exc:
            errors.extend(exc.diagnostics)
            continue
        checked.append(Case(case_id, tuple(text for text, _ in overrides), seed0))
    if errors:
        raise MissionError(errors)
    envelope = model.envelope or next(
        (e for spec in base.root.walk() if isinstance(e := getattr(spec.params, "envelope", None), str)), None
    )
    return Campaign(model, file, mission, checked, envelope if envelope in ENVELOPES else None)


def _cases(
    model: CampaignModel, common: list[tuple[str, PathKey | None]], source: Source
) -> list[tuple[str, list[tuple[str, PathKey | None]]]]:
    explicit = model.cases or [CaseModel()]
    points: list[tuple[tuple[str, int, Any], ...]] = [()]
    if model.grid:
        axes = [[(key, j, value) for j, value in enumerate(values)] for key, values in model.grid.items()]
        points = list(itertools.product(*axes))
    case_width, point_width = len(str(len(explicit))), len(str(len(points)))
    out = []
    seen: dict[str, int] = {}
    errors = []
    for i, case in enumerate(explicit):
        case_id = case.id or (f"c{i + 1:0{case_width}d}" if model.cases else "base")
        for n, point in enumerate(points):
            full_id = case_id
            if model.grid:
                grid_id = f"g{n + 1:0{point_width}d}"
                full_id = f"{case_id}-{grid_id}" if model.cases else grid_id
            if full_id in seen:
                errors.append(source.at(("cases", i, "id"), f"cases[{i}]: duplicate case id {full_id!r}"))
                continue
            seen[full_id] = i
            overrides = list(common)
            overrides += [(assignment(k, v), ("cases", i, "set", k)) for k, v in case.overrides.items()]
            overrides += [(assignment(key, value), ("grid", key, j)) for key, j, value in point]
            out.append((full_id, overrides))
    if errors:
        raise MissionError(errors)
    return out


def _check(mission: Path, overrides: list[tuple[str, PathKey | None]], source: Source) -> Mission:
    """Load the mission with ``overrides``; its override errors point into the campaign file."""
    try:
        return load_mission(mission, [text for text, _ in overrides])
    except MissionError as exc:
        where = {f"--set {text}": path for text, path in overrides if path is not None}
        raise MissionError(
            [
                source.at(where[d.file], d.message) if d.file in where else d
                for d in exc.diagnostics
            ]
        ) from None


def plan(campaign: Campaign, out_dir: str | Path, limit: int | None = None) -> list[RunSpec]:
    """The runs of the first ``limit`` cases (all by default), case by case, cycle by cycle."""
    runs_dir = Path(out_dir) / "runs"
    keep = campaign.model.logs
    specs = []
    for case in campaign.cases[:limit]:
        for cycle in range(campaign.model.cycles):
            run_id = f"{case.id}.{cycle}"
            log = None if keep == "none" else str(runs_dir / f"{run_id}.jsonl")
            seed = case.seed0 + cycle
            specs.append(RunSpec(run_id, case.id, cycle, seed, str(campaign.mission), case.overrides, log, keep))
    return specs


# --------------------------------------------------------------------------- workers

# Set in each worker process by the pool's initializer: the only way to hand a process-shared
# Event to a pool worker. None in the parent (and when a runner is called directly).
_cancel_event: Any = None


def _init_worker(cancel: Any) -> None:
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
    """Run one spec in a worker; any exception becomes a row with status ``error``."""
    started = time.perf_counter()
    try:
        outcome = runner(spec)
    except Exception as exc:
        text = "; ".join(str(exc).splitlines()) or "(no message)"
        outcome = {"status": "error", "reason": f"{type(exc).__name__}: {text}", "summary": None}
        if spec.log:
            trace = Path(spec.log).with_suffix(".error.txt")
            trace.parent.mkdir(parents=True, exist_ok=True)
            trace.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
    log = spec.log
    if log and spec.keep_log == "failures" and outcome["status"] == "SUCCESS":
        Path(log).unlink(missing_ok=True)
        log = None
    return _row(spec, outcome, time.perf_counter() - started, log)


def _row(spec: RunSpec, outcome: dict[str, Any], wall: float, log: str | None) -> dict[str, Any]:
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
        "overrides": list(spec.overrides),
        "log": log,
    }


# --------------------------------------------------------------------------- the pool


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


class _Progress:
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

    def __enter__(self) -> _Progress:
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


def run_campaign(
    campaign: Campaign,
    out_dir: str | Path,
    *,
    workers: int | None = None,
    limit: int | None = None,
    runner: Callable[[RunSpec], dict[str, Any]] = run_case,
    progress: bool = True,
    scheduler: str | None = None,
) -> CampaignResult:
    """Run every planned run on a process pool (or, with ``scheduler``, on the Dask cluster at that
    address: :mod:`orbitree.campaign_dask`), then write ``summary.csv``, ``campaign.json``, plots.

    ``runner`` (a module-level function, so that it pickles) runs one ``RunSpec`` in a worker and
    returns ``{status, reason, summary}``; the default is :func:`run_case`.
    """
    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    specs = plan(campaign, out, limit)
    size = max(1, min(workers or campaign.model.workers or os.cpu_count() or 1, len(specs) or 1))
    started = time.monotonic()
    rows: dict[str, dict[str, Any]] = {}
    pool: Any
    if scheduler:
        from orbitree.campaign_dask import DaskPool

        pool = DaskPool(scheduler, runner)
    else:
        pool = _Pool(size, runner)
    with _Progress(campaign.name, len(specs), progress) as bar:
        try:
            pool.run(specs, rows, bar)
        except KeyboardInterrupt:  # a second Ctrl-C: the workers were killed; keep what finished
            pool.interrupted = True
    if scheduler:
        size = pool.workers
    ordered = [rows[s.run_id] for s in specs if s.run_id in rows]
    cases = len({s.case for s in specs})
    result = CampaignResult(ordered, len(specs), cases, time.monotonic() - started, pool.interrupted)
    from orbitree.campaign_outputs import aggregate, write_outputs

    result.aggregate = aggregate(campaign, result, size)
    write_outputs(campaign, result, out)
    return result


class _Pool:
    """At most ``size`` runs in flight on a spawn process pool, replaced if a worker dies.

    The first Ctrl-C (SIGINT in the parent) sets the shared cancel event: no run starts any more
    and the running ones abort at their next tick. A second one kills the workers.
    """

    def __init__(self, size: int, runner: Callable[[RunSpec], dict[str, Any]]) -> None:
        self.size = size
        self.runner = runner
        self.context = multiprocessing.get_context("spawn")
        self.cancel = self.context.Event()
        self.interrupted = False

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self.interrupted:
            raise KeyboardInterrupt
        self.interrupted = True
        self.cancel.set()

    def run(self, specs: list[RunSpec], rows: dict[str, dict[str, Any]], bar: _Progress) -> None:
        pending = deque(specs)
        deaths: Counter[str] = Counter()
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, self._on_sigint) if main else None
        try:
            while pending and not self.interrupted:
                self._one_pool(pending, deaths, rows, bar)
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        if self.interrupted:
            bar.note(f"[yellow]interrupted: {len(pending)} runs not started")

    def _one_pool(
        self, pending: deque[RunSpec], deaths: Counter[str], rows: dict[str, dict[str, Any]], bar: _Progress
    ) -> None:
        pool = ProcessPoolExecutor(
            self.size, mp_context=self.context, initializer=_init_worker, initargs=(self.cancel,)
        )
        in_flight: dict[Future, RunSpec] = {}
        broken = False
        try:
            while in_flight or (pending and not self.interrupted and not broken):
                while pending and not self.interrupted and not broken and len(in_flight) < self.size:
                    # A run that was in flight when a worker died runs alone, so that a second
                    # death convicts it and not whichever run happened to share the pool.
                    suspects = [s for s in (pending[0], *in_flight.values()) if deaths[s.run_id]]
                    if in_flight and suspects:
                        break
                    spec = pending.popleft()
                    in_flight[pool.submit(execute, self.runner, spec)] = spec
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    spec = in_flight.pop(future)
                    try:
                        row = future.result()
                    except BrokenProcessPool as exc:
                        broken = True
                        deaths[spec.run_id] += 1
                        if deaths[spec.run_id] <= RETRIES_AFTER_WORKER_DEATH:
                            pending.appendleft(spec)
                            continue
                        row = _row(spec, {"status": "error", "reason": f"worker process died: {exc}"}, 0.0, None)
                    except Exception as exc:  # e.g. a runner that does not pickle
                        row = _row(spec, {"status": "error", "reason": f"{type(exc).__name__}: {exc}"}, 0.0, None)
                    rows[spec.run_id] = row
                    bar.advance(row["status"])
        except KeyboardInterrupt:
            _terminate(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _terminate(pool: ProcessPoolExecutor) -> None:
    stop = getattr(pool, "terminate_workers", None)  # Python 3.14
    if stop is not None:
        stop()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
