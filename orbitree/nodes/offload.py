"""Work beside the tick loop: a leaf hands a job over and collects its result on a later tick.

A tick must never wait for a long computation (perceive's marker detection and PnP take tens of
milliseconds; the tick budget at 125 Hz is 8 ms). :class:`Offload` runs a function on jobs
outside the tick and hands back results stamped with the job's own time (a frame's capture
instant), in one of two modes with one contract:

* **threaded** (``threaded=True``: runs paced by the wall clock, ``--realtime`` or hardware): a
  worker thread takes the newest job handed over; a job still waiting when a newer one comes is
  dropped, as a real-time consumer of camera frames wants the newest frame, not a queue of old
  ones. A result is ready as soon as it is computed. OpenCV releases the interpreter lock while
  it works, so the tick thread runs meanwhile.
  With ``process=True`` the worker is a process of its own instead of a thread (the function
  and every job must pickle; the function's state lives in that process): the tick's process
  then shares its interpreter lock with nothing (a thread's Python parts, a tracker's ~3 ms per
  frame, would delay the tick). Jobs' arrays (a frame's image) go through memory shared with the
  process, ``shared_bytes`` of it, not through the pipe; a job handed over while the process
  works waits here, and a newer one replaces it. ``start()`` starts the process ahead of the
  first job (a fresh interpreter imports for a second or so); ``close()`` stops it.
* **modelled** (``threaded=False``: the simulated clock, as fast as the CPU allows): the function
  runs at once, in the calling tick, and its result is held back until mission time reaches the
  moment a worker would have finished: the later of the job's hand-over and the previous job's
  finish, plus ``latency``. What the tree sees is then the same for a seed, whatever the wall
  clock did, and it sees it as late as a robot's computer would.

An exception raised by the function is raised again by :meth:`Offload.ready` in the tick that
collects it, so the executive reports it against the leaf.
"""

from __future__ import annotations

import contextlib
import pickle
import threading
import time
import traceback
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")


@dataclass(frozen=True)
class Done(Generic[R]):
    """A finished job: ``stamp`` is the time the job carried (a frame's capture instant),
    ``result`` what the function returned."""

    stamp: float
    result: R


class Offload(Generic[J, R]):
    """Run ``fn(job)`` beside the tick; see the module docstring.

    ``submit(now, stamp, job)`` hands a job over at mission time ``now``; ``ready(now)`` returns
    the jobs finished by then, oldest first (usually none or one); ``pending`` says whether a
    handed-over job has not come back yet; ``close()`` stops the worker (it restarts on the next
    ``submit``).
    """

    def __init__(self, fn: Callable[[J], R], *, threaded: bool, latency: float = 0.0,
                 name: str = "offload", process: bool = False, shared_bytes: int = 0) -> None:
        if latency < 0.0:
            raise ValueError(f"latency must be >= 0, got {latency}")
        self.fn = fn
        self.threaded = threaded
        self.process = bool(process and threaded)
        self._worker = _WorkerProcess(fn, name, shared_bytes) if self.process else None
        self.latency = float(latency)
        self.name = name
        self.dropped = 0  # jobs replaced by a newer one before the worker took them (threaded)
        self.jobs, self.busy_s = 0, 0.0  # jobs run and the wall time spent in ``fn``
        # modelled mode: (release time, Done) in release order, and when the "worker" is free
        self._held: deque[tuple[float, Done[R] | BaseException]] = deque()
        self._free_at = -float("inf")
        # threaded mode
        self._lock = threading.Condition()
        self._job: tuple[float, J] | None = None
        self._busy = False
        self._done: list[Done[R] | BaseException] = []
        self._thread: threading.Thread | None = None
        self._stop = False

    @property
    def pending(self) -> bool:
        if not self.threaded:
            return bool(self._held)
        if self._worker is not None:
            self._worker.poll()
            return self._worker.pending
        with self._lock:
            return self._job is not None or self._busy or bool(self._done)

    def submit(self, now: float, stamp: float, job: J) -> None:
        if not self.threaded:
            start = max(now, self._free_at)
            self._free_at = start + self.latency
            t0 = time.perf_counter()
            try:
                outcome: Done[R] | BaseException = Done(stamp, self.fn(job))
            except Exception as exc:
                outcome = exc
            self.jobs, self.busy_s = self.jobs + 1, self.busy_s + time.perf_counter() - t0
            self._held.append((self._free_at, outcome))
            return
        if self._worker is not None:
            self._worker.submit(stamp, job)
            self.dropped = self._worker.dropped
            return
        with self._lock:
            if self._job is not None:
                self.dropped += 1
            self._job = (stamp, job)
            if self._thread is None or not self._thread.is_alive():
                self._stop = False
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
            self._lock.notify()

    def ready(self, now: float) -> list[Done[R]]:
        if not self.threaded:
            out: list[Done[R] | BaseException] = []
            while self._held and self._held[0][0] <= now + 1e-9:
                out.append(self._held.popleft()[1])
        elif self._worker is not None:
            out = self._worker.collect()
            self.jobs, self.busy_s = self._worker.jobs, self._worker.busy_s
        else:
            with self._lock:
                out, self._done = self._done, []
        for item in out:
            if isinstance(item, BaseException):
                raise item
        return out  # type: ignore[return-value]

    def start(self) -> None:
        """Start the worker process now (``process=True``; otherwise nothing to do)."""
        if self._worker is not None:
            self._worker.start()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            return
        thread = self._thread
        if thread is None:
            return
        with self._lock:
            self._stop = True
            self._job = None
            self._lock.notify()
        thread.join(timeout=5.0)
        self._thread = None

    def _work(self) -> None:
        while True:
            with self._lock:
                while self._job is None and not self._stop:
                    self._lock.wait()
                if self._stop:
                    return
                stamp, job = self._job  # type: ignore[misc]
                self._job, self._busy = None, True
            outcome: Any
            t0 = time.perf_counter()
            try:
                outcome = Done(stamp, self.fn(job))
            except Exception as exc:
                outcome = exc
            spent = time.perf_counter() - t0
            with self._lock:
                self.jobs, self.busy_s = self.jobs + 1, self.busy_s + spent
                self._done.append(outcome)
                self._busy = False


class _WorkerProcess:
    """The worker process of an ``Offload(process=True)``: at most one job in the process, the
    newest further job waiting here; a job's out-of-band pickled buffers (numpy arrays) copied
    into the shared memory when they fit."""

    def __init__(self, fn: Callable, name: str, shared_bytes: int) -> None:
        self.fn, self.name, self.shared_bytes = fn, name, int(shared_bytes)
        self.dropped = 0
        self.jobs, self.busy_s = 0, 0.0
        self._process: Any = None
        self._conn: Any = None
        self._memory: Any = None
        self._finalizer: Any = None
        self._busy: int | None = None  # the sequence number of the job in the process
        self._stamps: dict[int, float] = {}
        self._waiting: tuple[float, Any] | None = None
        self._done: list[Done | BaseException] = []
        self._seq = 0

    @property
    def pending(self) -> bool:
        return self._busy is not None or self._waiting is not None or bool(self._done)

    def start(self) -> None:
        if self._process is not None:
            return
        from orbitree.drivers.render_process import spawn_worker, stop_worker

        # room for the job's small arrays beside its image, so that none goes through the pipe
        self.shared_bytes += 65536
        self._process, self._conn, self._memory = spawn_worker("orbitree.nodes.offload", self.name,
                                                               self.shared_bytes, [])
        self._finalizer = weakref.finalize(self, stop_worker, self._process, self._conn, self._memory)
        self._conn.send(("fn", self.fn))  # pickled once: its state lives in the process from now on

    def submit(self, stamp: float, job: Any) -> None:
        self.start()
        if self._waiting is not None:
            self.dropped += 1
        self._waiting = (stamp, job)
        self.poll()

    def collect(self) -> list[Done | BaseException]:
        self.poll()
        out, self._done = self._done, []
        return out

    def poll(self) -> None:
        """Take the process's answer, if any; hand it the waiting job when it is free."""
        conn = self._conn
        if conn is None:
            return
        if self._busy is not None:
            try:
                while self._busy is not None and conn.poll(0):
                    kind, seq, payload, spent = conn.recv()
                    stamp = self._stamps.pop(seq)
                    self.jobs, self.busy_s = self.jobs + 1, self.busy_s + spent
                    self._done.append(Done(stamp, payload) if kind == "done" else payload)
                    self._busy = None
            except (EOFError, OSError):
                self._done.append(RuntimeError(f"{self.name}: the worker process ended unexpectedly"))
                self._busy, self._conn = None, None
                return
        if self._busy is None and self._waiting is not None:
            (stamp, job), self._waiting = self._waiting, None
            buffers: list[pickle.PickleBuffer] = []
            data = pickle.dumps(job, protocol=5, buffer_callback=buffers.append)
            views = [b.raw() for b in buffers]
            lengths = [v.nbytes for v in views]
            if sum(lengths) <= self.shared_bytes:
                offset = 0
                for view in views:
                    self._memory[offset:offset + view.nbytes] = view
                    offset += view.nbytes
            else:  # larger than the shared memory: everything through the pipe
                data, lengths = pickle.dumps(job, protocol=5), None
            self._seq += 1
            self._stamps[self._seq] = stamp
            conn.send(("job", self._seq, data, lengths))
            self._busy = self._seq

    def close(self) -> None:
        finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer()
        self._process = self._conn = self._memory = None
        self._busy, self._waiting, self._done = None, None, []
        self._stamps.clear()


def _serve() -> None:
    """Entry point of an ``Offload(process=True)`` worker: run the function on each job."""
    from orbitree.drivers.render_process import worker_ends

    conn, memory, _ = worker_ends()
    fn: Any = None
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return  # the parent is gone
            if message[0] == "stop":
                return
            if message[0] == "fn":
                fn = message[1]
                continue
            _, seq, data, lengths = message
            t0 = time.perf_counter()
            try:
                buffers = None
                if lengths is not None:  # copied out: the next job overwrites the memory
                    offsets = [sum(lengths[:k]) for k in range(len(lengths))]
                    buffers = [bytearray(memory[o:o + n]) for o, n in zip(offsets, lengths, strict=True)]
                result = fn(pickle.loads(data, buffers=buffers))
                answer: tuple = ("done", seq, result)
            except Exception as exc:
                answer = ("error", seq, exc)
            spent = time.perf_counter() - t0
            try:
                conn.send((*answer, spent))
            except (pickle.PicklingError, TypeError, AttributeError):
                failure = RuntimeError("".join(traceback.format_exception(answer[2])) if answer[0] == "error"
                                       else f"the result of {fn!r} does not pickle")
                with contextlib.suppress(OSError):
                    conn.send(("error", seq, failure, spent))
    finally:
        memory.close()
        conn.close()
