"""The emulator in a child process, and the arm it steps as a sim world in this process sees it.

Why a process: ur_rtde's Python constructors (``RTDEReceiveInterface(...)``,
``RTDEControlInterface(...)``) run the whole connection handshake without releasing the GIL, so
an emulator served by Python threads of the same process could never answer them (measured:
the constructor blocks for ever). Everything else of ur_rtde releases the GIL.

The arm: the child owns the :class:`SimRobot` (a pickled copy of the one given) and steps it;
when ``share_arm`` is set, every controller cycle it publishes the joints, the tool and the
camera mount to a shared-memory block (a sequence counter around each write, readers retry a
torn read), and takes the wrench the world's contact model computes from it.
:class:`SharedWorldArm` is the parent's view for :class:`SimWorld`: poses from the published
joints with the arm's true kinematics; ``step`` and ``stop`` do nothing (the emulator's clock
and controller own the arm); the wrench of its source is sent on every ``step`` and
``read_truth`` (the world calls the latter after solving contact).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing import shared_memory
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from orbitree.drivers.sim_robot import SimRobot
from orbitree.skills import kinematics as kin

# shared block layout (float64): seq, t, q(6), qd(6), tool(16), cam2tcp(16), wrench(6)
_SEQ, _T, _Q, _QD, _TOOL, _CAM, _WRENCH, _SIZE = 0, 1, 2, 8, 14, 30, 46, 52


class EmulatorProcess:
    """A :class:`~orbitree.drivers.ur_emulator.UREmulator` in a child process (same options),
    controlled through a pipe. ``start`` returns once it serves (``host`` is then set)."""

    def __init__(self, robot: SimRobot | None = None, *, remote_control: bool = True,
                 unlock_delay: float = 5.0, share_arm: bool = False) -> None:
        self.robot = robot if robot is not None else SimRobot("ur")
        self.remote_control = remote_control
        self.unlock_delay = unlock_delay
        self.host: str | None = None
        self.shared: np.ndarray | None = None
        self._shm: shared_memory.SharedMemory | None = None
        if share_arm:
            self._shm = shared_memory.SharedMemory(create=True, size=_SIZE * 8)
            self.shared = np.ndarray((_SIZE,), dtype=np.float64, buffer=self._shm.buf)
            self.shared[:] = 0.0
            _write_state(self.shared, self.robot)
        self._process: Any = None
        self._conn: Any = None

    def start(self, host: str | None = None, timeout: float = 60.0) -> EmulatorProcess:
        if self._process is not None:
            return self
        ours, theirs = socket.socketpair()
        with theirs:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "orbitree.drivers.ur_emulator._child", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL)
        self._conn = Connection(ours.detach())
        self._conn.send((self.robot, host, self.remote_control, self.unlock_delay,
                         None if self._shm is None else self._shm.name))
        if not self._conn.poll(timeout):
            self.stop()
            raise OSError(f"the UR emulator did not start within {timeout:g} s")
        status, value = self._conn.recv()
        if status != "ok":
            self.stop()
            raise OSError(value)
        self.host = value
        return self

    def call(self, name: str, *args: Any) -> Any:
        if self._conn is None:
            raise RuntimeError("the emulator process is not running")
        self._conn.send((name, args))
        status, value = self._conn.recv()
        if status != "ok":
            raise RuntimeError(value)
        return value

    def drop_connections(self) -> int:
        return int(self.call("drop_connections"))

    def trigger_protective_stop(self, reason: str = "triggered in the emulator") -> None:
        self.call("trigger_protective_stop", reason)

    def set_remote_control(self, remote: bool) -> None:
        self.call("set_remote_control", remote)

    def messages(self) -> list[str]:
        return list(self.call("messages"))

    def arm(self) -> dict[str, Any]:
        """The arm's state in the child: q, qd, tcp2base (its controller's), protective_stop."""
        return dict(self.call("arm"))

    def stop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError, EOFError, RuntimeError):
                self._conn.send(("stop", ()))
                if self._conn.poll(5.0):
                    self._conn.recv()
            self._conn.close()
            self._conn = None
        if self._process is not None:
            try:
                self._process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=2.0)
            self._process = None
        if self._shm is not None:
            self.shared = None
            self._shm.close()
            with contextlib.suppress(FileNotFoundError):
                self._shm.unlink()
            self._shm = None

    def __enter__(self) -> EmulatorProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _write_state(block: np.ndarray, robot: SimRobot) -> None:
    state = robot.read()
    block[_SEQ] += 1  # odd: being written
    block[_T] = robot.time
    block[_Q:_Q + 6] = state.q
    block[_QD:_QD + 6] = state.qd
    block[_TOOL:_TOOL + 16] = robot.tcp2flange.reshape(-1)
    block[_CAM:_CAM + 16] = robot.cam2tcp.reshape(-1)
    block[_SEQ] += 1


def _read_state(block: np.ndarray) -> np.ndarray:
    for _ in range(1000):
        seq = block[_SEQ]
        copy = block.copy()
        if seq % 2 == 0 and block[_SEQ] == seq:
            return copy
        time.sleep(0)
    return block.copy()


def child_main(conn: Any) -> None:
    """The child's side (``python -m orbitree.drivers.ur_emulator._child FD``)."""
    robot, host, remote_control, unlock_delay, shm_name = conn.recv()
    from .emulator import UREmulator

    shm = None
    emulator = UREmulator(robot, remote_control=remote_control, unlock_delay=unlock_delay)
    if shm_name is not None:
        shm = shared_memory.SharedMemory(name=shm_name, track=False) if sys.version_info >= (3, 13) \
            else _attach(shm_name)
        block = np.ndarray((_SIZE,), dtype=np.float64, buffer=shm.buf)
        robot.set_external_wrench(lambda t, tcp2base, twist: block[_WRENCH:_WRENCH + 6].copy())
        emulator.controller.on_cycle = lambda: _write_state(block, robot)
    try:
        emulator.start(host)
    except OSError as exc:
        conn.send(("error", f"cannot serve the UR emulator on {host}: {exc}"))
        return
    conn.send(("ok", emulator.host))
    ctl = emulator.controller
    handlers: dict[str, Callable[..., Any]] = {
        "drop_connections": emulator.drop_connections,
        "trigger_protective_stop": emulator.trigger_protective_stop,
        "set_remote_control": emulator.set_remote_control,
        "messages": lambda: list(ctl.messages),
        "arm": lambda: _arm(ctl),
    }
    try:
        while True:
            try:
                name, args = conn.recv()
            except (EOFError, OSError):
                break  # the parent is gone
            if name == "stop":
                break
            try:
                conn.send(("ok", handlers[name](*args)))
            except Exception as exc:
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        emulator.stop()
        if shm is not None:
            shm.close()
        with contextlib.suppress(OSError):
            conn.send(("ok", None))


def _attach(name: str) -> shared_memory.SharedMemory:
    """Open the parent's block without this process's resource tracker claiming it (before 3.13
    it would unlink the block when the child exits, under the parent)."""
    from multiprocessing import resource_tracker

    shm = shared_memory.SharedMemory(name=name)
    with contextlib.suppress(Exception):
        resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
    return shm


def _arm(ctl: Any) -> dict[str, Any]:
    with ctl.lock:
        state = ctl.robot.read()
        return {"q": state.q, "qd": state.qd, "tcp2base": state.tcp2base,
                "protective_stop": state.protective_stop, "runtime_state": ctl.runtime_state}


class SharedWorldArm:
    """The emulated arm as :class:`SimWorld` sees it in this process (see the module notes)."""

    def __init__(self, robot: SimRobot, process: EmulatorProcess) -> None:
        if process.shared is None:
            raise ValueError("the emulator process must be made with share_arm=True")
        self._robot = robot
        self._process = process
        self.name = robot.name
        self._source: Any = None

    def _state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
        block = self._process.shared
        if block is None:  # the emulator is gone: the arm stays where it was last seen
            block = self._last
        else:
            block = self._last = _read_state(block)
        return (block[_Q:_Q + 6], block[_QD:_QD + 6], block[_TOOL:_TOOL + 16].reshape(4, 4),
                block[_CAM:_CAM + 16].reshape(4, 4), float(block[_T]))

    _last: np.ndarray = np.zeros(_SIZE)

    def step(self, dt: float) -> None:
        self._send_wrench()

    def stop(self) -> None:
        pass

    def tcp2base(self) -> np.ndarray:
        q, _, tool, _, _ = self._state()
        return kin.forward_kinematics(self._robot.true_table, q, tool)

    def cam2base(self) -> np.ndarray:
        q, _, tool, cam2tcp, _ = self._state()
        return kin.forward_kinematics(self._robot.true_table, q, tool) @ cam2tcp

    def read_truth(self) -> tuple[np.ndarray, np.ndarray]:
        self._send_wrench()
        q, qd, tool, _, _ = self._state()
        tcp2base, jacobian = kin.pose_and_jacobian(self._robot.true_table, q, tool)
        return jacobian @ qd, tcp2base[:3, 3]

    @property
    def time(self) -> float:
        return self._state()[4]

    def set_external_wrench(self, source: Any) -> None:
        self._source = source

    def _send_wrench(self) -> None:
        block = self._process.shared
        if block is None or self._source is None:
            return
        q, qd, tool, _, t = self._state()
        tcp2base, jacobian = kin.pose_and_jacobian(self._robot.table, q, tool)
        value = self._source(t, tcp2base, jacobian @ qd) if callable(self._source) else self._source
        block[_WRENCH:_WRENCH + 6] = np.asarray(value, dtype=float).reshape(6)
