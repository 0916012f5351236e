"""The local process pool of ``orbitree campaign`` (the default; a Dask cluster with
``--scheduler``: :mod:`orbitree.campaign.dask_pool`)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from orbitree.campaign.outputs import aggregate, write_outputs
from orbitree.campaign.runs import CampaignResult, Progress, RunSpec, error_row, execute, init_worker, run_case
from orbitree.campaign.spec import Campaign, plan

RETRIES_AFTER_WORKER_DEATH = 1


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
    address: :mod:`orbitree.campaign.dask_pool`), then write ``summary.csv``, ``campaign.json``, plots.

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
        from orbitree.campaign.dask_pool import DaskPool

        pool = DaskPool(scheduler, runner)
    else:
        pool = _Pool(size, runner)
    with Progress(campaign.name, len(specs), progress) as bar:
        try:
            pool.run(specs, rows, bar)
        except KeyboardInterrupt:  # a second Ctrl-C: the workers were killed; keep what finished
            pool.interrupted = True
    if scheduler:
        size = pool.workers
    ordered = [rows[s.run_id] for s in specs if s.run_id in rows]
    cases = len({s.case for s in specs})
    result = CampaignResult(ordered, len(specs), cases, time.monotonic() - started, pool.interrupted)
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

    def run(self, specs: list[RunSpec], rows: dict[str, dict[str, Any]], bar: Progress) -> None:
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
        self, pending: deque[RunSpec], deaths: Counter[str], rows: dict[str, dict[str, Any]], bar: Progress
    ) -> None:
        pool = ProcessPoolExecutor(
            self.size, mp_context=self.context, initializer=init_worker, initargs=(self.cancel,)
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
                        row = error_row(spec, f"worker process died: {exc}")
                    except Exception as exc:  # e.g. a runner that does not pickle
                        row = error_row(spec, f"{type(exc).__name__}: {exc}")
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
