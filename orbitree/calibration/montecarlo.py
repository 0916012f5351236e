"""The Monte Carlo of a calibration: chunks of iterations, each simulated and identified as one numpy
batch, run in this process, on a local process pool, or on a Dask cluster (``--scheduler``, as
``orbitree campaign`` does); then the statistics of every parameter.

Chunk ``i`` draws from ``SeedSequence(seed, spawn_key=(i,))`` and chunks have a fixed size, so the
samples do not depend on the number of workers or on where the chunks ran.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import numpy as np

from orbitree.skills.circle_point import (
    Measurement,
    identify_measurement,
    nominal_parameters,
    parameter_names,
    simulate,
)

CHUNK = 2500  # iterations per task: ~0.15 s of numpy, a few MB of arrays
# From this many chunks (50,000 iterations, ~3 s on one core) a run is long: by default it goes to a
# process pool (whose start costs ~1 s) and shows a progress bar; a shorter one runs here, silently.
LONG_RUN_CHUNKS = 20


def run_chunk(measurement: Measurement, seed: int, index: int, size: int) -> np.ndarray:
    """Chunk ``index``: ``size`` noisy measurements, each identified; (size, 5 n) identified − nominal
    values (mm, deg) in :func:`parameter_names` order."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
    identified = identify_measurement(measurement, simulate(measurement, rng, size))
    nominal = nominal_parameters(measurement.table)
    return np.stack([identified[name] - nominal[name] for name in parameter_names(measurement.table.n_joints)],
                    axis=1)


def chunks(iterations: int) -> list[tuple[int, int, int]]:
    """``(index, first iteration, size)`` of each chunk."""
    return [(i, start, min(CHUNK, iterations - start)) for i, start in enumerate(range(0, iterations, CHUNK))]


@dataclass
class Samples:
    """What a Monte Carlo produced: identified − nominal per iteration (mm, deg)."""

    deviations: np.ndarray  # (iterations done, 5 n)
    planned: int
    wall_time_s: float
    workers: int
    where: str  # "this process", "2 local processes", "dask tcp://..."
    interrupted: bool = False

    @property
    def iterations(self) -> int:
        return len(self.deviations)


def monte_carlo(
    measurement: Measurement, iterations: int, seed: int, *, workers: int | None = None,
    scheduler: str | None = None, progress: bool = True, label: str = "circle point",
) -> Samples:
    """Run ``iterations`` simulate-and-identify iterations in chunks; Ctrl-C keeps the finished chunks.

    ``workers`` local processes (default: the CPU count for a long run, else this process; one, or a
    single chunk, runs here) or the Dask cluster at ``scheduler``. Raises ``SchedulerUnreachable``
    when no scheduler answers there.
    """
    plan = chunks(iterations)
    long_run = len(plan) >= LONG_RUN_CHUNKS
    default = (os.cpu_count() or 1) if long_run else 1
    size = max(1, min(workers or default, len(plan)))
    pool: _Local | _InProcess | _Dask
    if scheduler:
        pool = _Dask(scheduler)
    elif size == 1:
        pool = _InProcess()
    else:
        pool = _Local(size)
    out = np.empty((iterations, 5 * measurement.table.n_joints))
    done = np.zeros(len(plan), dtype=bool)
    started = time.perf_counter()
    with _Bar(label, iterations, progress and long_run) as bar:
        try:
            for index, values in pool.run(measurement, seed, plan, bar.note):
                _, first, count = plan[index]
                out[first:first + count] = values
                done[index] = True
                bar.advance(count)
        except KeyboardInterrupt:  # a second Ctrl-C: the workers were stopped; keep what finished
            pool.interrupted = True
    wall = time.perf_counter() - started
    kept = out if done.all() else out[np.repeat(done, [count for _, _, count in plan])]
    return Samples(kept, iterations, wall, pool.workers, pool.where, pool.interrupted or not done.all())


class _InProcess:
    def __init__(self) -> None:
        self.workers, self.where, self.interrupted = 1, "this process", False

    def run(self, measurement: Measurement, seed: int, plan: list[tuple[int, int, int]],
            note: Callable[[str], None]) -> Iterator[tuple[int, np.ndarray]]:
        for index, _, size in plan:
            yield index, run_chunk(measurement, seed, index, size)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent alone decides what stops


class _Local:
    """At most ``2 × size`` chunks in flight on a spawn process pool; the first Ctrl-C stops starting
    chunks and waits for the running ones, a second stops the workers."""

    def __init__(self, size: int) -> None:
        self.workers, self.where, self.interrupted = size, f"{size} local processes", False

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self.interrupted:
            raise KeyboardInterrupt
        self.interrupted = True

    def run(self, measurement: Measurement, seed: int, plan: list[tuple[int, int, int]],
            note: Callable[[str], None]) -> Iterator[tuple[int, np.ndarray]]:
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, self._on_sigint) if main else None
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_ignore_sigint)
        pending = list(reversed(plan))
        in_flight: dict[Future, int] = {}
        try:
            while in_flight or (pending and not self.interrupted):
                while pending and not self.interrupted and len(in_flight) < 2 * self.workers:
                    index, _, size = pending.pop()
                    in_flight[pool.submit(run_chunk, measurement, seed, index, size)] = index
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield in_flight.pop(future), future.result()
            if self.interrupted:
                note(f"[yellow]interrupted: {len(pending)} chunks not started")
        except KeyboardInterrupt:
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if main:
                signal.signal(signal.SIGINT, previous)


class _Dask:
    """Chunks as tasks on the Dask scheduler at ``address``, connected as campaigns connect."""

    def __init__(self, address: str) -> None:
        self.address, self.workers, self.where, self.interrupted = address, 0, f"dask {address}", False

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self.interrupted:
            raise KeyboardInterrupt
        self.interrupted = True

    def run(self, measurement: Measurement, seed: int, plan: list[tuple[int, int, int]],
            note: Callable[[str], None]) -> Iterator[tuple[int, np.ndarray]]:
        from dask.distributed import Client, as_completed

        from orbitree.campaign import dask_pool

        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, self._on_sigint) if main else None
        try:
            try:
                client = Client(self.address, timeout=dask_pool.CONNECT_TIMEOUT_S, set_as_default=False)
            except (OSError, ValueError) as exc:  # refused, timed out, a malformed address
                raise dask_pool.SchedulerUnreachable(
                    f"no Dask scheduler at {self.address!r} ({type(exc).__name__}: {exc})"
                ) from None
            with client:
                self.workers = sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())
                note(f"dask: {self.address}, {self.workers} worker threads")
                shared = client.scatter(measurement, broadcast=True)
                tag = f"{os.getpid()}-{id(self):x}"
                futures = {client.submit(run_chunk, shared, seed, index, size, pure=False,
                                         key=f"circle-point-{tag}-{index}"): index for index, _, size in plan}
                for future in as_completed(list(futures), loop=client.loop):
                    yield futures[future], future.result()
                    if self.interrupted:
                        left = [f for f in futures if not f.done()]
                        client.cancel(left)
                        note(f"[yellow]interrupted: {len(left)} chunks cancelled")
                        break
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)


class _Bar:
    """A rich progress bar of iterations on stderr (rate, elapsed, ETA), or nothing."""

    def __init__(self, title: str, total: int, show: bool) -> None:
        self.bar: Any = None
        self.console: Any = None
        self.done = 0
        self.started = time.perf_counter()
        if show:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.console = Console(stderr=True)
            self.bar = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
                TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=self.console,
            )
            self.task = self.bar.add_task(title, total=total, rate="")

    def __enter__(self) -> _Bar:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def advance(self, count: int) -> None:
        if self.bar is not None:
            self.done += count
            rate = self.done / max(time.perf_counter() - self.started, 1e-9)
            self.bar.update(self.task, advance=count, rate=f"{rate:,.0f} it/s")

    def note(self, text: str) -> None:
        if self.console is not None:
            self.console.print(text)
