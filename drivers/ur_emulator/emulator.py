"""One emulated controller: its controller thread and its servers on one address (see the
package notes)."""

from __future__ import annotations

import random
from typing import Any

from orbitree.drivers.sim_robot import SimRobot

from .controller import URController
from .servers import Servers, bind


class UREmulator:
    """One emulated controller (see the module notes); ``start`` binds and runs it, ``stop``
    closes every socket and joins every thread. Usable as a context manager."""

    def __init__(self, robot: SimRobot | None = None, *, remote_control: bool = True,
                 unlock_delay: float = 5.0) -> None:
        self.robot = robot if robot is not None else SimRobot("ur")
        self.controller = URController(self.robot, remote_control=remote_control, unlock_delay=unlock_delay)
        self.host: str | None = None
        self._servers: Servers | None = None

    def start(self, host: str | None = None) -> UREmulator:
        """Serve on ``host`` (a free 127.x.y.z when None); OSError if its UR ports are taken."""
        if self._servers is not None:
            return self
        if host is None:
            host, sockets = _free_loopback()
        else:
            sockets = bind(host)
        self.host = host
        self.controller.start()
        self._servers = Servers(self.controller, host, sockets)
        return self

    def stop(self) -> None:
        if self._servers is not None:
            self._servers.close()
            self._servers = None
        self.controller.stop()

    def drop_connections(self) -> int:
        """Close every client connection, keep listening (a network cut); how many closed."""
        return self._servers.drop_connections() if self._servers is not None else 0

    def trigger_protective_stop(self, reason: str = "triggered in the emulator") -> None:
        self.controller.trigger_protective_stop(reason)

    def set_remote_control(self, remote: bool) -> None:
        self.controller.remote_control = remote

    def __enter__(self) -> UREmulator:
        return self.start() if self._servers is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_loopback(attempts: int = 200) -> tuple[str, dict[int, Any]]:
    """A loopback address whose UR ports are all free, with its listening sockets bound."""
    rng = random.Random()
    last: OSError | None = None
    for _ in range(attempts):
        host = f"127.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
        try:
            return host, bind(host)
        except OSError as exc:
            last = exc
    raise OSError(f"no free loopback address for the UR ports after {attempts} tries ({last})")
