"""A simulated camera's renderer in a process of its own, as a real camera is a device of its own.

When the tick loop is paced by the wall clock, a :class:`~orbitree.drivers.sim_camera.SimCamera`
rendering in a thread of the tick's process competes with the tick for the interpreter lock: the
renderer's Python parts (patch set-up, noise indexing, blur kernels) delay the tick by
milliseconds. :class:`RenderProcess` moves the rendering into a worker process:

* ``start()`` starts the worker, a fresh interpreter (``python -c``: fork-and-exec, never a bare
  ``fork`` of a process with threads, and unlike multiprocessing's ``spawn`` it does not import
  the caller's ``__main__`` again), ships the camera's static scene once (the objects' patches and
  textures, the lens, the sensor model, the noise generator's state, with every pose left out)
  and waits until the worker has built its ray table;
* ``submit()`` sends per frame only what changes: the camera pose at mid-exposure, the poses at
  the exposure's start and end, each object's pose, and the camera's small mutable state when it
  changed (sensor model, hidden markers, image occluders, a replaced lens); it returns a
  :class:`~concurrent.futures.Future` of the :class:`~orbitree.drivers.interfaces.Frame`;
* the worker renders into one slot of a ring of image buffers in memory shared by the two
  processes (an anonymous ``memfd``, or an unlinked temporary file where there is none, mapped by
  both: nothing to name, track or unlink, gone when both have closed it) and answers with the
  slot's number; ``poll()`` (called by the camera on each read) copies the image out and completes
  the future. No image is ever pickled.

At most ``ring`` frames are in the worker at once; a frame submitted while all slots are taken
waits in this process, and a newer frame replaces it (it is cancelled), as a real camera drops a
frame nobody took rather than queueing it. The worker renders the frames it gets in order with
the generator it was given, so the images are the same as rendered in line for the same seed and
poses as long as no frame is dropped.

With ``nice`` the worker runs that many levels below the tick's priority (its scheduling group
too, where Linux groups a session's processes): on a busy computer the tick comes first.

Shutdown: ``close()`` asks the worker to stop, waits for it (then terminates it) and unmaps the
memory; it also runs at interpreter exit. The worker runs in a session of its own (Ctrl-C in a
terminal reaches the tick's process only, which stops it), and exits by itself when the parent's
end of the pipe closes, so a parent killed outright leaves no orphan behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import mmap
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import weakref
from concurrent.futures import Future
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from orbitree.drivers.interfaces import Frame

__all__ = ["RenderProcess", "spawn_worker", "stop_worker", "worker_ends"]

START_TIMEOUT_S = 60.0  # spawning imports numpy, OpenCV and scipy afresh; a busy machine is slow
STOP_TIMEOUT_S = 5.0
RENDER_NICE = 10
"""How much lower a render worker's priority is than the tick's in a ``--realtime`` simulation
(the executive's choice): where the two share a CPU the tick goes first, as the camera it
simulates would not take the robot computer's CPU at all (flagship, shared 2-core machine, two
alternating runs: 4 and 27 deadline misses against 40 and 636 at the same priority, tick p99
3.4-3.8 ms against 4.5-8.1 ms). Not beside an emulated arm on the wall clock: the arm moves on
whether or not frames come, and a starved renderer lost the target there (2 runs of 2)."""



class RenderProcess:
    """Render ``camera``'s frames (a :class:`~orbitree.drivers.sim_camera.SimCamera`) in a worker
    process; see the module docstring. The worker renders with a camera of the same class, sent
    by reference (this module does not import the camera's)."""

    def __init__(self, camera: Any, *, ring: int = 2, nice: int = 0) -> None:
        if ring < 1:
            raise ValueError(f"ring must be >= 1, got {ring}")
        self.camera = camera
        self.ring = int(ring)
        self.nice = int(nice)
        self._process: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._memory: mmap.mmap | None = None
        self._slot_bytes = 0
        self._free: list[int] = []
        self._sent: dict[int, tuple[int, Future, float, dict]] = {}  # seq -> slot, future, stamp, meta
        self._waiting: tuple[dict, Future, float, dict] | None = None  # newest frame with no free slot
        self._seq = 0
        self._objects: tuple[int, ...] = ()  # ids of the objects the worker has
        self._state_key: Any = None  # the mutable state the worker has
        self._finalizer: Any = None

    # -- life cycle ---------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Spawn the worker, ship the scene and wait until it is ready to render."""
        if self._process is not None:
            return
        lens = self.camera.lens
        self._slot_bytes = lens.width * lens.height
        self._process, self._conn, self._memory = spawn_worker(
            "orbitree.drivers.render_process", f"{self.camera.name} frames", self._slot_bytes * self.ring,
            [str(self._slot_bytes)], nice=self.nice)
        self._free = list(range(self.ring))
        # also at interpreter exit
        self._finalizer = weakref.finalize(self, stop_worker, self._process, self._conn, self._memory)
        try:
            self._send_scene()
            self._conn.send(("state", self._state()))
            if not self._conn.poll(timeout):
                raise TimeoutError(f"{self.camera.name}: the render process did not start within {timeout:g} s")
            kind, payload = self._conn.recv()
            if kind != "ready":
                raise RuntimeError(f"{self.camera.name}: the render process failed to start:\n{payload}")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the worker and free the shared memory; safe to call any number of times."""
        finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer()
        for _, future, _, _ in self._sent.values():
            future.cancel() or future.done() or future.set_exception(RuntimeError("render process closed"))
        if self._waiting is not None:
            self._waiting[1].cancel()
        self._sent.clear()
        self._waiting = None
        self._process = self._conn = self._memory = None
        self._objects, self._state_key = (), None

    # -- frames -------------------------------------------------------------------------------
    def submit(self, cam2world: np.ndarray, motion: tuple[np.ndarray, np.ndarray] | None,
               object_poses: dict[int, np.ndarray], stamp: float, meta: dict) -> Future:
        """Render the frame seen from ``cam2world`` (``motion``: the exposure's start and end
        poses; ``object_poses``: ``id(object)`` -> body2world); a Future of its Frame."""
        if self._process is None:
            self.start()
        future: Future = Future()
        request = {"cam2world": cam2world, "motion": motion, "poses": object_poses}
        if self._waiting is not None:
            self._waiting[1].cancel()
        self._waiting = (request, future, stamp, meta)
        self.poll()
        return future

    def poll(self) -> None:
        """Collect the frames the worker finished; hand it the waiting frame if a slot is free."""
        conn = self._conn
        if conn is None or not (self._sent or self._waiting):
            return  # nothing asked for: no system call (it would hand the interpreter lock over)
        try:
            while self._sent and conn.poll(0):
                self._collect(conn.recv())
        except (EOFError, OSError):
            self._died()
            return
        waiting = self._waiting
        if waiting is not None and self._free:
            self._waiting = None
            request, future, stamp, meta = waiting
            if future.set_running_or_notify_cancel():
                self._send_scene()
                slot = self._free.pop(0)
                self._seq += 1
                poses = request["poses"]
                request = {**request, "poses": [poses[id(obj)] if id(obj) in poses else obj.pose()
                                                for obj in self.camera.objects]}
                conn.send(("frame", self._seq, slot, request, self._state()))
                self._sent[self._seq] = (slot, future, stamp, meta)

    def _collect(self, message: tuple) -> None:
        kind, seq = message[0], message[1]
        slot, future, stamp, meta = self._sent.pop(seq)
        self._free.append(slot)
        if kind == "error":
            future.set_exception(RuntimeError(f"{self.camera.name}: rendering failed in the render process:\n"
                                              f"{message[2]}"))
            return
        blur_px, render_s, image = message[2], message[3], message[4]
        if image is None:  # copied out of the slot before the slot is handed out again
            lens = self.camera.lens
            assert self._memory is not None
            start = slot * self._slot_bytes
            image = np.frombuffer(self._memory, np.uint8, lens.width * lens.height, start)
            image = image.reshape(lens.height, lens.width).copy()
        camera = self.camera
        camera.last_blur_px = blur_px
        camera.frames_rendered += 1
        camera.render_s += render_s
        future.set_result(Frame(image, stamp, meta))

    def _died(self) -> None:
        error = RuntimeError(f"{self.camera.name}: the render process ended unexpectedly")
        for _, future, _, _ in self._sent.values():
            future.set_exception(error)
        self._sent.clear()
        self._conn = None

    def _send_scene(self) -> None:
        """Ship the objects (patches and textures, without their poses) when they changed."""
        ids = tuple(id(obj) for obj in self.camera.objects)
        if ids == self._objects or self._conn is None:
            return
        objects = [dataclasses.replace(obj, body2world=np.eye(4), hidden_marker_ids=set())
                   for obj in self.camera.objects]
        self._conn.send(("scene", type(self.camera), objects))
        self._objects, self._state_key = ids, None

    def _state(self) -> dict | None:
        """The camera's mutable state, when it changed since it was last sent (else None)."""
        cam = self.camera
        hidden = tuple(tuple(sorted(obj.hidden_marker_ids)) for obj in cam.objects)
        key = (id(cam.intrinsics), id(cam.true_intrinsics), cam.sensor, cam.background_albedo,
               tuple(id(o) for o in cam.occluders), hidden)
        if key == self._state_key:
            return None
        self._state_key = key
        state = {"intrinsics": cam.intrinsics, "true_intrinsics": cam.true_intrinsics, "sensor": cam.sensor,
                 "background_albedo": cam.background_albedo, "occluders": list(cam.occluders),
                 "hidden": hidden}
        if self._seq == 0:
            state["rng"] = cam.imager.rng.bit_generator.state  # the noise continues where the camera is
            state["noise_seed"] = cam.imager.seed  # and is read from the same table of draws
        return state


def spawn_worker(module: str, label: str, memory_bytes: int, args: list[str], nice: int = 0,
                 ) -> tuple[Any, Connection, mmap.mmap]:
    """Start ``module._serve()`` in a fresh interpreter, in a session of its own, with a pipe to it
    and ``memory_bytes`` of memory shared with it: (process, our end of the pipe, our mapping).
    The worker finds its ends with :func:`worker_ends`; ``args`` follow on its command line;
    ``nice``: how much lower the worker's scheduling priority is (a CPU it shares with the tick
    goes to the tick first)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(label)
    else:
        with tempfile.TemporaryFile() as file:  # unlinked already; the descriptor keeps it
            fd = os.dup(file.fileno())
    try:
        os.ftruncate(fd, max(memory_bytes, 1))
        memory = mmap.mmap(fd, max(memory_bytes, 1))
        ours, theirs = socket.socketpair()
        with ours, theirs:
            code = f"from {module} import _serve; _serve()"
            ends = [str(theirs.fileno()), str(fd), str(max(memory_bytes, 1)), str(int(nice))]
            argv = [sys.executable, "-c", code, *ends, *args]
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(), fd),
                                       start_new_session=True)
            conn = Connection(os.dup(ours.fileno()))
    finally:
        os.close(fd)  # the mapping and the worker keep the memory
    return process, conn, memory


def worker_ends() -> tuple[Connection, mmap.mmap, list[str]]:
    """In a worker started by :func:`spawn_worker`: its end of the pipe, the shared memory, and
    the extra arguments. The worker ignores SIGINT: the parent decides when it stops."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pipe, memory_fd, size, nice = (int(arg) for arg in sys.argv[1:5])
    if nice:  # before any thread starts (they inherit it)
        os.nice(nice)
        # Linux groups a session's processes for scheduling (autogroup); a worker in a session of
        # its own yields to the tick only if its group does too
        with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    memory = mmap.mmap(memory_fd, size)
    os.close(memory_fd)
    return Connection(pipe), memory, sys.argv[5:]


def stop_worker(process: subprocess.Popen | None, conn: Connection | None, memory: mmap.mmap | None) -> None:
    """Ask the worker to stop, wait for it, terminate it if it does not; unmap the memory."""
    try:
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):
                conn.send(("stop",))
        if process is not None:
            for end in (None, process.terminate, process.kill):
                if end is not None:
                    end()
                try:
                    process.wait(STOP_TIMEOUT_S)
                    break
                except subprocess.TimeoutExpired:
                    continue
    finally:
        if conn is not None:
            conn.close()
        if memory is not None:
            memory.close()


# -- the worker process ------------------------------------------------------------------------
def _serve() -> None:
    """The render worker's entry point (see :func:`spawn_worker`)."""
    conn, memory, args = worker_ends()
    _worker(conn, memory, int(args[0]))


def _worker(conn: Connection, memory: mmap.mmap, slot_bytes: int) -> None:
    """Render frames on request until told to stop or the parent's end of the pipe closes."""
    camera: Any = None
    ready = False
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return  # the parent is gone
            kind = message[0]
            if kind == "stop":
                return
            try:
                if kind == "scene":
                    camera = message[1]() if camera is None else camera
                    camera.objects = message[2]
                elif kind == "state":
                    _apply(camera, message[1])
                    if not ready:
                        camera.setup()  # the ray table, before the first frame is asked for
                        ready = True
                        conn.send(("ready", os.getpid()))
                elif kind == "frame":
                    seq, slot, request, state = message[1:]
                    if state is not None:
                        _apply(camera, state)
                    poses = {id(obj): pose for obj, pose in zip(camera.objects, request["poses"], strict=True)}
                    t0 = time.perf_counter()
                    image = camera._render(request["cam2world"], request["motion"], poses)
                    spent = time.perf_counter() - t0
                    if image.nbytes <= slot_bytes:
                        out = np.frombuffer(memory, np.uint8, image.size, slot * slot_bytes)
                        out[:] = image.reshape(-1)
                        del out
                        conn.send(("done", seq, camera.last_blur_px, spent, None))
                    else:  # the lens grew since the ring was sized: send this one whole
                        conn.send(("done", seq, camera.last_blur_px, spent, image))
            except Exception:
                failure = traceback.format_exc()
                if kind == "frame":
                    conn.send(("error", message[1], failure))
                elif not ready:
                    conn.send(("failed", failure))
                    return
                else:
                    raise
    finally:
        memory.close()
        conn.close()


def _apply(camera: Any, state: dict) -> None:
    camera.intrinsics = state["intrinsics"]
    camera.true_intrinsics = state["true_intrinsics"]
    camera.sensor = state["sensor"]
    camera.background_albedo = state["background_albedo"]
    camera.occluders = state["occluders"]
    for obj, hidden in zip(camera.objects, state["hidden"], strict=True):
        obj.hidden_marker_ids = set(hidden)
    if "rng" in state:
        camera.imager.restart(state["noise_seed"], state["rng"])
