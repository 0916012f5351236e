"""Fakes of the ur_rtde interfaces for the URRobot tests (tests/drivers/test_ur_robot*.py): each
records every call and refuses any method name (or argument count) the installed ur_rtde classes
do not have; ``Rig`` builds a URRobot wired to them."""

from __future__ import annotations

from typing import Any

import dashboard_client
import numpy as np
import rtde_control
import rtde_receive
from scipy.spatial.transform import Rotation

from orbitree.drivers.ur_robot import URRobot

HOST = "192.168.56.101"


def _split_params(signature: str) -> list[str]:
    """Top-level comma split of a pybind11 parameter list (types contain brackets)."""
    params, depth, current = [], 0, ""
    for char in signature:
        depth += char in "[(<"
        depth -= char in "])>"
        if char == "," and depth == 0:
            params.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        params.append(current.strip())
    return params


def _arities(method: Any) -> list[tuple[int, int]]:
    """(required, total) positional counts, without self, of each pybind11 overload."""
    name = method.__name__
    lines = [ln.split(". ", 1)[-1] for ln in (method.__doc__ or "").splitlines()]
    found = []
    for line in lines:
        if line.startswith(f"{name}(self") and "->" in line:
            inner = line[len(name) + 1 : line.rindex(")", 0, line.index("->"))]
            params = _split_params(inner)[1:]
            found.append((sum("=" not in p for p in params), len(params)))
    return found


class RecordingFake:
    """Records ``(method, args)`` for every call to a method the real ur_rtde class has."""

    spec: type = object

    def __init__(self, results: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.results = results or {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not hasattr(self.spec, name):
            raise AttributeError(f"{self.spec.__name__} has no method {name!r}")
        arities = _arities(getattr(self.spec, name))

        def method(*args: Any) -> Any:
            assert any(req <= len(args) <= tot for req, tot in arities), (
                f"{name}{args}: ur_rtde accepts {arities} positional arguments"
            )
            self.calls.append((name, args))
            result = self.results.get(name, True)
            return result(*args) if callable(result) else result

        return method

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


class FakeControl(RecordingFake):
    spec = rtde_control.RTDEControlInterface

    def __init__(self, host: str, frequency: float) -> None:
        super().__init__()
        self.host, self.frequency = host, frequency
        self.connected = True
        self.progress = -1

    def isConnected(self) -> bool:
        return self.connected

    def getAsyncOperationProgress(self) -> int:
        return self.progress


class FakeReceive(RecordingFake):
    spec = rtde_receive.RTDEReceiveInterface

    def __init__(self, host: str, frequency: float) -> None:
        super().__init__()
        self.host, self.frequency = host, frequency
        self.connected = True
        self.protective_stopped = False
        self.emergency_stopped = False
        self.tcp_pose = [0.4, -0.1, 0.3, 0.0, 0.0, 0.0]
        self.q = [0.1, -1.2, 1.3, -1.6, -1.5, 0.2]
        self.qd = [0.0, 0.01, 0.0, 0.0, 0.0, -0.02]
        self.tcp_speed = [0.01, 0.0, -0.02, 0.0, 0.0, 0.1]
        self.tcp_force = [0.0] * 6

    def isConnected(self) -> bool:
        return self.connected

    def isProtectiveStopped(self) -> bool:
        return self.protective_stopped

    def isEmergencyStopped(self) -> bool:
        return self.emergency_stopped

    def getActualTCPPose(self) -> list[float]:
        return list(self.tcp_pose)

    def getActualQ(self) -> list[float]:
        return list(self.q)

    def getActualQd(self) -> list[float]:
        return list(self.qd)

    def getActualTCPSpeed(self) -> list[float]:
        return list(self.tcp_speed)

    def getActualTCPForce(self) -> list[float]:
        return list(self.tcp_force)


class FakeDashboard(RecordingFake):
    spec = dashboard_client.DashboardClient

    def __init__(self, host: str, remote: bool = True) -> None:
        super().__init__({"connect": None, "disconnect": None, "isInRemoteControl": remote})
        self.host = host


class Rig:
    """Builds a URRobot wired to fakes and keeps the fakes for assertions."""

    def __init__(self, remote: bool = True, **kwargs: Any) -> None:
        self.control: FakeControl | None = None
        self.receive: FakeReceive | None = None
        self.dashboard: FakeDashboard | None = None
        self.remote = remote
        self.sleeps: list[float] = []
        self.receive_setup: Any = None
        self.fk_pose: list[float] | None = None
        self.robot = URRobot(
            "arm",
            HOST,
            control_factory=self._control,
            receive_factory=self._receive,
            dashboard_factory=self._dashboard,
            clock=lambda: 12.5,
            sleep=self.sleeps.append,
            **kwargs,
        )

    def _control(self, host: str, frequency: float) -> FakeControl:
        self.control = FakeControl(host, frequency)
        # the controller's forward kinematics: the pose the receive stream settles on
        self.control.results["getForwardKinematics"] = lambda: list(self.fk_pose or self.receive.tcp_pose)
        return self.control

    def _receive(self, host: str, frequency: float) -> FakeReceive:
        self.receive = FakeReceive(host, frequency)
        if self.receive_setup is not None:
            self.receive_setup(self.receive)
        return self.receive

    def _dashboard(self, host: str) -> FakeDashboard:
        self.dashboard = FakeDashboard(host, self.remote)
        return self.dashboard

    def ready(self) -> tuple[URRobot, FakeControl, FakeReceive]:
        self.robot.setup()
        assert self.control is not None and self.receive is not None
        return self.robot, self.control, self.receive


def _pose(rotvec: list[float], position: list[float]) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    pose[:3, 3] = position
    return pose
