"""Dashboard server commands (port 29999): one line in, one line out, as PolyScope 5 answers them
(the commands ur_rtde's ``DashboardClient`` sends, and the usual others). In local control
mode the commands that would move or start the arm are refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .controller import PLAYING, ROBOT_MODE_NAMES, SAFETY_MODE_NAMES

if TYPE_CHECKING:
    from .controller import URController

WELCOME = "Connected: Universal Robots Dashboard Server"
SERIAL_NUMBER = "20235500001"
_REMOTE_ONLY = ("power on", "power off", "brake release", "play", "pause", "stop", "load ",
                "unlock protective stop", "restart safety", "shutdown")


def answer(ctl: URController, line: str) -> str:
    """The dashboard server's reply to ``line`` (without its newline)."""
    command = line.strip()
    lower = command.lower()
    if not ctl.remote_control and any(lower.startswith(c) for c in _REMOTE_ONLY):
        return "Command is not allowed due to safety reasons: the robot is in local control"
    major, minor, bugfix, build = ctl.version
    with ctl.lock:
        if lower == "polyscopeversion":
            return f"URSoftware {major}.{minor}.{bugfix}.{build} (emulated)"
        if lower == "version":
            return f"{major}.{minor}.{bugfix}.{build}"
        if lower == "is in remote control":
            return "true" if ctl.remote_control else "false"
        if lower == "get serial number":
            return SERIAL_NUMBER
        if lower == "get robot model":
            return "UR10"
        if lower == "robotmode":
            return f"Robotmode: {ROBOT_MODE_NAMES[ctl.robot_mode]}"
        if lower == "safetymode":
            return f"Safetymode: {SAFETY_MODE_NAMES[ctl.safety_mode]}"
        if lower == "safetystatus":
            return f"Safetystatus: {SAFETY_MODE_NAMES[ctl.safety_mode]}"
        if lower == "running":
            return f"Program running: {'true' if ctl.runtime_state == PLAYING else 'false'}"
        if lower == "programstate":
            name = ctl.loaded_program or "<unnamed>"
            return f"{'PLAYING' if ctl.runtime_state == PLAYING else 'STOPPED'} {name}"
        if lower == "get loaded program":
            return f"Loaded program: {ctl.loaded_program}" if ctl.loaded_program else "No program loaded"
        if lower == "isprogramsaved":
            return f"true {ctl.loaded_program}"
        if lower == "power on":
            ctl.power(True)
            return "Powering on"
        if lower == "power off":
            ctl.power(False)
            return "Powering off"
        if lower == "brake release":
            ctl.release_brakes()
            return "Brake releasing"
        if lower == "unlock protective stop":
            refused = ctl.unlock_protective_stop()
            return refused or "Protective stop releasing"
        if lower == "close safety popup":
            return "closing safety popup"
        if lower == "close popup":
            return "closing popup"
        if lower.startswith("popup "):
            return "showing popup"
        if lower.startswith("addtolog "):
            return "Added log message"
        if lower.startswith("setuserrole "):
            return f"Setting user role: {command[12:].strip()}"
        if lower == "get operational mode":
            return "NONE"
        if lower == "restart safety":
            return "Restarting safety"
        if lower == "stop":
            # "Stopped" also when nothing runs: ur_rtde's reconnect stops its script, then calls this
            # and raises on any other answer
            if ctl.program is not None:
                ctl.end_program("stopped from the dashboard")
            return "Stopped"
        if lower == "pause":
            return "Failed to execute: pause"
        if lower == "play":
            # only URScript sent to the script ports runs here; a .urp program cannot be played
            return "Failed to execute: play"
        if lower.startswith("load "):
            return f"File not found: {command[5:].strip()}"
        if lower == "shutdown":
            ctl.power(False)
            return "Shutting down"
        if lower == "quit":
            return "Disconnected"
    return f"could not understand: '{command}'"
