"""The ur_rtde driver's link to the controller (a base class of ``URRobot``).

``URConnection`` holds what :class:`~orbitree.drivers.ur_robot.URRobot` does to reach an arm and
let it go: ``setup()`` (the dashboard's remote-control check, the receive interface, the
e-stop and protective-stop checks, the control interface, the mission's TCP and the RTDE
watchdog), ``shutdown()``, ``is_connected()``, ``reconnect()`` with its back-off, and the checks
every command and read make that a link is up. The default factories import ur_rtde only when
called. The mapping of the Robot protocol onto ur_rtde calls, for these methods too, is in the
docstring of :mod:`orbitree.drivers.ur_robot`; the commands, reads and motion modes are there.
The methods use the attributes ``URRobot.__init__`` sets and its ``stop()`` and ``_command()``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.drivers.ur_common import (
    URCommandError,
    URConnectionError,
    URNotReadyError,
    URRobotError,
    pose_from_ur,
)

# the driver's log, named as before the connection moved out of ur_robot.py
_log = logging.getLogger("orbitree.drivers.ur_robot")

# setup() waits up to 1 s for the receive stream to report the TCP setTcp made (1 mm, 0.5 deg)
_TOOL_SETTLE_STEP = 0.002
_TOOL_SETTLE_POLLS = 500
_TOOL_SETTLE_METRES = 1e-3
_TOOL_SETTLE_RADIANS = np.radians(0.5)


def _default_control_factory(host: str, frequency: float) -> Any:
    import rtde_control

    return rtde_control.RTDEControlInterface(host, frequency)


def _default_receive_factory(host: str, frequency: float) -> Any:
    import rtde_receive

    return rtde_receive.RTDEReceiveInterface(host, frequency)


def _default_dashboard_factory(host: str) -> Any:
    import dashboard_client

    return dashboard_client.DashboardClient(host)


def _quietly(call: Callable[[], Any]) -> None:
    """Run a best-effort release step; log instead of raising so later steps still run."""
    try:
        call()
    except (RuntimeError, OSError) as exc:
        _log.warning("ur_rtde %s failed: %s", getattr(call, "__name__", call), exc)


class URConnection:
    """Connecting, checking and releasing the links of a ``URRobot``; see the module docstring."""

    # -- lifecycle -------------------------------------------------------------------------

    def setup(self) -> None:
        """Check the controller is ready, then connect receive and control interfaces."""
        if self._control is not None:
            return
        if self.check_remote_control:
            self._require_remote_control()
        receive = self._connect("RTDE receive", self._receive_factory)
        try:
            self._require_not_stopped(receive)
            control = self._connect("RTDE control", self._control_factory)
        except BaseException:
            _quietly(receive.disconnect)
            raise
        self._receive, self._control = receive, control
        self._mode, self._move_pending = "idle", False
        try:
            if self.tcp_offset is not None:  # the controller's TCP is the mission's tool
                self._command("setTcp", list(self.tcp_offset))
                self._await_tool_in_stream()
            if self.watchdog_hz is not None:
                self._command("setWatchdog", float(self.watchdog_hz))
        except BaseException:
            self.shutdown()
            raise

    def _await_tool_in_stream(self) -> None:
        """Return once the receive stream's TCP pose is the one ``setTcp`` just made.

        ``setTcp`` returns when the controller script has applied the offset, but data packets
        sampled before that are still in the receive interface's socket or thread: a ``read()``
        straight after ``setup()`` reported the flange 200 mm off the tool on a loaded machine.
        The controller's own forward kinematics with the new offset is the pose to wait for; the
        arm is at rest during setup, so the two agree to the encoders' noise.
        """
        expected = pose_from_ur(self._command("getForwardKinematics"))
        for _ in range(_TOOL_SETTLE_POLLS):
            reported = pose_from_ur(self._receive.getActualTCPPose())
            moved = np.linalg.norm(reported[:3, 3] - expected[:3, 3])
            turned = Rotation.from_matrix(reported[:3, :3].T @ expected[:3, :3]).magnitude()
            if moved < _TOOL_SETTLE_METRES and turned < _TOOL_SETTLE_RADIANS:
                return
            self._sleep(_TOOL_SETTLE_STEP)
        raise URCommandError(
            f"robot {self.name!r}: {self.host} accepted setTcp but its reported TCP pose is still "
            f"{moved * 1000:.1f} mm / {np.degrees(turned):.2f} deg from the tool's after "
            f"{_TOOL_SETTLE_POLLS * _TOOL_SETTLE_STEP:.0f} s (is the arm moving during setup?)"
        )

    def shutdown(self) -> None:
        """Stop the arm, stop the controller script and disconnect. Safe to call twice."""
        control, receive = self._control, self._receive
        if control is None and receive is None:
            return
        if control is not None:
            try:
                self.stop()
            except (URRobotError, RuntimeError, OSError) as exc:
                _log.warning("robot %s: stop during shutdown failed: %s", self.name, exc)
            if control.isConnected():  # on a dead link stopScript waits 300 s for a state that never comes
                _quietly(control.stopScript)
            _quietly(control.disconnect)
        if receive is not None:
            _quietly(receive.disconnect)
        self._control = self._receive = None
        self._mode, self._move_pending = "idle", False

    def is_connected(self) -> bool:
        """True when both RTDE interfaces report a live connection."""
        return bool(
            self._control is not None
            and self._receive is not None
            and self._control.isConnected()
            and self._receive.isConnected()
        )

    def reconnect(self) -> None:
        """Re-establish dropped RTDE links, backing off exponentially between attempts.

        Blocks (sleeps); call it from recovery code, not from a tick. Raises
        :class:`URConnectionError` after ``reconnect_attempts`` failed attempts.
        """
        if self._control is None or self._receive is None:
            raise URConnectionError(f"robot {self.name!r}: reconnect() before setup()")
        delay = self.reconnect_initial_delay
        last_error = "isConnected() stayed False"
        for attempt in range(1, self.reconnect_attempts + 1):
            try:
                for interface in (self._receive, self._control):
                    if not interface.isConnected():
                        interface.reconnect()
                if self.is_connected():
                    _log.info("robot %s: reconnected on attempt %d", self.name, attempt)
                    # The control script was re-uploaded: nothing of ours is running any more.
                    self._mode, self._move_pending = "idle", False
                    return
            except (RuntimeError, OSError) as exc:
                last_error = str(exc)
            if attempt < self.reconnect_attempts:
                _log.warning(
                    "robot %s: reconnect attempt %d/%d failed (%s); retrying in %.2f s",
                    self.name,
                    attempt,
                    self.reconnect_attempts,
                    last_error,
                    delay,
                )
                self._sleep(delay)
                delay = min(2.0 * delay, self.reconnect_max_delay)
        raise URConnectionError(
            f"robot {self.name!r}: gave up reconnecting to {self.host} after "
            f"{self.reconnect_attempts} attempts (last: {last_error})"
        )

    # -- links ---------------------------------------------------------------------------

    def _require_control(self) -> Any:
        if self._control is None:
            raise URConnectionError(f"robot {self.name!r}: not connected; call setup() first")
        return self._control

    def _require_receive(self) -> Any:
        if self._receive is None:
            raise URConnectionError(f"robot {self.name!r}: not connected; call setup() first")
        if not self._receive.isConnected():
            raise URConnectionError(
                f"robot {self.name!r}: RTDE receive link to {self.host} is down; call reconnect()"
            )
        return self._receive

    def _connect(self, what: str, factory: Callable[[str, float], Any]) -> Any:
        try:
            return factory(self.host, self.frequency)
        except (RuntimeError, OSError) as exc:
            raise URConnectionError(
                f"robot {self.name!r}: cannot open {what} to {self.host} at "
                f"{self.frequency:g} Hz ({exc}); check the address, the network and that no "
                "other RTDE client holds the registers"
            ) from exc

    def _require_remote_control(self) -> None:
        try:
            dashboard = self._dashboard_factory(self.host)
            dashboard.connect()
            try:
                remote = bool(dashboard.isInRemoteControl())
            finally:
                _quietly(dashboard.disconnect)
        except (RuntimeError, OSError) as exc:
            raise URConnectionError(
                f"robot {self.name!r}: cannot reach the dashboard server at {self.host}:29999 "
                f"({exc})"
            ) from exc
        if not remote:
            raise URNotReadyError(
                f"robot {self.name!r}: the controller at {self.host} is not in remote control. "
                "Fix: on the teach pendant switch Local to Remote (top-right; enable it under "
                "Settings > System > Remote Control first). On CB3 / PolyScope < 5.6, which "
                "cannot report this, pass check_remote_control=False."
            )

    def _require_not_stopped(self, receive: Any) -> None:
        if bool(receive.isEmergencyStopped()):
            raise URNotReadyError(
                f"robot {self.name!r}: the controller at {self.host} is emergency-stopped. "
                "Fix: release the e-stop button and re-enable the arm on the pendant."
            )
        if bool(receive.isProtectiveStopped()):
            raise URNotReadyError(
                f"robot {self.name!r}: the controller at {self.host} is protective-stopped. "
                "Fix: find the cause, then unlock the protective stop on the pendant "
                "(or dashboard 'unlock protective stop') before starting a mission."
            )
