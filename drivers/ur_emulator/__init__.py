"""An emulated UR e-Series controller for the real ur_rtde client, around a :class:`SimRobot`.

``UREmulator(robot).start("127.0.0.5")`` serves, on that address and the fixed UR ports, the
dashboard server (29999), the script interface (30001-30003: URScript is accepted, not
interpreted; ur_rtde's control script is replaced by what it does with the RTDE registers, see
``rtde_script``) and RTDE protocol 2 (30004: recipes of any of the controller's variables,
data at up to 500 Hz). The arm is stepped at 500 Hz in a thread (``controller``). ur_rtde
connects to fixed ports, so emulators that run at once each take their own loopback address
(all of 127.0.0.0/8 reaches the loopback interface on Linux); ``start()`` without an address
picks a free one. 127.0.0.1 is avoided by default: ur_rtde skips its remote-control check there.

What a real controller does that the emulator does not: the primary / secondary / real-time
state streams of ports 30001-30003 (clients that only send scripts, as ur_rtde, never notice),
running any URScript other than ur_rtde's control script, input-register ownership between
clients (``IN_USE``), RTDE protocol version 1, dynamics (currents, torques are zero).

ur_rtde's constructors hold the GIL while they connect, so a client in the same process as the
emulator needs the emulator in a child process: ``EmulatorProcess`` (see ``process``).
``EmulatedURRobot`` is the mission driver ``ur-emulated``: the project's ``ur`` driver
(:class:`URRobot`, the real ur_rtde client) driving an emulator process started on its own
address around the sim world's arm; ``SharedWorldArm`` is that arm as the sim world sees it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from orbitree.drivers.sim_robot import SimRobot
from orbitree.drivers.ur_robot import URRobot

from .emulator import UREmulator
from .process import EmulatorProcess, SharedWorldArm
from .servers import DASHBOARD_PORT, RTDE_PORT, SCRIPT_PORTS

__all__ = ["EmulatedURRobot", "EmulatorProcess", "SharedWorldArm", "UREmulator", "serve"]


class EmulatedURRobot:
    """The ``ur-emulated`` driver: :class:`URRobot` (ur_rtde) on an emulator process of ``robot``;
    give the sim world ``world_arm`` in place of ``robot``.

    ``setup`` starts the emulator on ``host`` (a free loopback address when None) and connects;
    ``shutdown`` disconnects and stops the emulator. Every other call is URRobot's.
    """

    def __init__(self, name: str, robot: SimRobot, host: str | None = None, **ur_options: Any) -> None:
        self.name = name
        self.emulator = EmulatorProcess(robot, share_arm=True)
        self.world_arm = SharedWorldArm(robot, self.emulator)
        self._host = host
        self.ur = URRobot(name, host or "", **ur_options)

    def setup(self) -> None:
        self.emulator.start(self._host)
        self.ur.host = self.emulator.host or ""
        try:
            self.ur.setup()
        except BaseException:
            self.emulator.stop()
            raise

    def shutdown(self) -> None:
        try:
            self.ur.shutdown()
        finally:
            self.emulator.stop()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.ur, attr)


def serve(host: str = "127.0.0.2", *, remote_control: bool = True, q0: np.ndarray | None = None,
          duration: float | None = None) -> int:
    """``orbitree ur-emulator``: run an emulated UR10e on ``host`` until Ctrl-C (or ``duration`` s)."""
    emulator = UREmulator(SimRobot("ur", q0=q0), remote_control=remote_control)
    try:
        emulator.start(host)
    except OSError as exc:
        print(f"cannot serve on {host}: {exc} (another emulator or controller there? try --host 127.0.0.N)")
        return 1
    ports = ", ".join(str(p) for p in SCRIPT_PORTS)
    mode = "remote" if remote_control else "local"
    print(f"UR e-Series emulator (UR10e, URControl {'.'.join(map(str, emulator.controller.version))}, "
          f"{mode} control) at {host}: dashboard {DASHBOARD_PORT}, RTDE {RTDE_PORT}, script {ports}. "
          "Ctrl-C stops it.", flush=True)
    end = None if duration is None else time.monotonic() + duration
    try:
        while end is None or time.monotonic() < end:
            time.sleep(0.1)
    except KeyboardInterrupt:
        print("stopping the emulator", flush=True)
    finally:
        emulator.stop()
    return 0
