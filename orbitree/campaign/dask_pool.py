"""Campaign runs on a Dask cluster: ``orbitree campaign FILE --scheduler tcp://HOST:8786 -o DIR``.

The local process pool (:class:`orbitree.campaign.local._Pool`) suits one machine; a lab that wants
a sweep of hundreds of runs spreads it over several with ``dask.distributed``, which already does
what a hand-written job queue would (worker registration, scheduling, retries when a worker
dies, a dashboard). Start a scheduler and workers where orbitree is installed::

    dask scheduler                                             # on one machine
    dask worker tcp://HOST:8786 --nworkers 4 --nthreads 1      # on each machine

``--nthreads 1``: a run is CPU-bound Python (rendering, perception, the contact model) and holds
the GIL, so one thread per worker process is what scales. Every run is one task calling the same
:func:`orbitree.campaign.runs.execute` as the local pool, so rows, error rows and tracebacks are
identical; the parent writes ``summary.csv`` and the plots. The mission file and ``DIR`` must be
reachable at the same paths from every worker (a shared or replicated filesystem): the workers
load the mission and write their run logs there.

A task whose worker dies is retried by the scheduler (its ``allowed-failures``, 3 by default)
and then recorded as an ``error`` row (``KilledWorker``). Ctrl-C cancels the runs not yet started
and keeps what finished; runs already on a worker finish there (a Dask task cannot be interrupted)
but their rows are not waited for.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

from orbitree.campaign.runs import Progress, RunSpec, error_row, execute

CONNECT_TIMEOUT_S = 10.0


class SchedulerUnreachable(RuntimeError):
    """No Dask scheduler answered at the address (nothing ran)."""


class DaskPool:
    """Runs specs as tasks on the Dask scheduler at ``address``."""

    def __init__(self, address: str, runner: Callable[[RunSpec], dict[str, Any]]) -> None:
        self.address = address
        self.runner = runner
        self.interrupted = False
        self.workers = 0  # worker threads on the cluster when the campaign started

    def run(self, specs: list[RunSpec], rows: dict[str, dict[str, Any]], bar: Progress) -> None:
        try:
            from dask.distributed import Client, as_completed
        except ImportError as exc:  # pragma: no cover - the dependency is declared
            raise RuntimeError("--scheduler needs dask.distributed: pip install 'orbitree[dask]'") from exc
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, self._on_sigint) if main else None
        try:
            try:
                client = Client(self.address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
            except (OSError, ValueError) as exc:  # refused, timed out, a malformed address
                raise SchedulerUnreachable(
                    f"no Dask scheduler at {self.address!r} ({type(exc).__name__}: {exc})"
                ) from None
            with client:
                self.workers = sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())
                bar.note(f"dask: {self.address}, {self.workers} worker threads")
                futures = {
                    client.submit(execute, self.runner, spec, key=f"orbitree-{spec.run_id}-{id(self):x}",
                                  pure=False): spec
                    for spec in specs
                }
                done = as_completed(list(futures), loop=client.loop)
                for future in done:
                    spec = futures[future]
                    try:
                        row = future.result()
                    except Exception as exc:  # KilledWorker, a runner that does not pickle, ...
                        row = error_row(spec, f"{type(exc).__name__}: {exc}")
                    rows[spec.run_id] = row
                    bar.advance(row["status"])
                    if self.interrupted:
                        left = [f for f in futures if not f.done()]
                        client.cancel(left)
                        bar.note(f"[yellow]interrupted: {len(left)} runs cancelled")
                        break
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self.interrupted:
            raise KeyboardInterrupt
        self.interrupted = True
