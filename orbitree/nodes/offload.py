"""Work beside the tick loop: a leaf hands a job over and collects its result on a later tick.

A tick must never wait for a long computation (perceive's marker detection and PnP take tens of
milliseconds; the tick budget at 125 Hz is 8 ms). :class:`Offload` runs a function on jobs
outside the tick and hands back results stamped with the job's own time (a frame's capture
instant), in one of two modes with one contract:

* **threaded** (``threaded=True``: runs paced by the wall clock, ``--realtime`` or hardware): a
  worker thread takes the newest job handed over; a job still waiting when a newer one comes is
  dropped, as a real-time consumer of camera frames wants the newest frame, not a queue of old
  ones. A result is ready as soon as it is computed. OpenCV releases the interpreter lock while
  it works, so the tick thread runs meanwhile. With ``hold`` set (the executive sets it) a job
  handed over waits for :meth:`Offload.release`, which the executive calls when the tick's work is
  done: the worker then runs in the loop's slack instead of contending for the interpreter with
  the rest of the tick that handed the job over.
* **modelled** (``threaded=False``: the simulated clock, as fast as the CPU allows): the function
  runs at once, in the calling tick, and its result is held back until mission time reaches the
  moment a worker would have finished: the later of the job's hand-over and the previous job's
  finish, plus ``latency``. What the tree sees is then the same for a seed, whatever the wall
  clock did, and it sees it as late as a robot's computer would.

An exception raised by the function is raised again by :meth:`Offload.ready` in the tick that
collects it, so the executive reports it against the leaf.
"""

from __future__ import annotations

import threading
import time
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
    ``submit``). Threaded, with ``hold`` True, the worker takes a job only once ``release()`` was
    called after its hand-over.
    """

    def __init__(self, fn: Callable[[J], R], *, threaded: bool, latency: float = 0.0,
                 name: str = "offload") -> None:
        if latency < 0.0:
            raise ValueError(f"latency must be >= 0, got {latency}")
        self.fn = fn
        self.threaded = threaded
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
        self.hold = False  # a job waits for release() (the end of the tick) before the worker takes it
        self._released = True
        self._busy = False
        self._done: list[Done[R] | BaseException] = []
        self._thread: threading.Thread | None = None
        self._stop = False

    @property
    def pending(self) -> bool:
        if not self.threaded:
            return bool(self._held)
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
        with self._lock:
            if self._job is not None:
                self.dropped += 1
            self._job = (stamp, job)
            self._released = not self.hold
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
        else:
            with self._lock:
                out, self._done = self._done, []
        for item in out:
            if isinstance(item, BaseException):
                raise item
        return out  # type: ignore[return-value]

    def release(self) -> None:
        """Let the worker take the job handed over (with ``hold``; called between ticks)."""
        if self._job is None or self._released:  # the usual tick: nothing handed over
            return
        with self._lock:
            self._released = True
            self._lock.notify()

    def close(self) -> None:
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
                while (self._job is None or not self._released) and not self._stop:
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
