"""The safety monitor: invariants checked after every tick, and what happens when one breaks.

```yaml
safety:
  max_force: 120 N            # wrist force (norm), measured
  max_torque: 15 Nm
  max_tcp_speed: 300 mm/s
  workspace: {min: [-1.3, -0.9, 0.06], max: [0.3, 0.9, 1.3]}   # TCP box, robot base frame
  max_sensor_age: 100 ms      # robot state / wrench older than this is stale
  protective_stop: true       # a controller protective stop is a violation
  debounce: 2                 # consecutive ticks a force/torque reading must exceed its limit
  recovery: safe retreat      # optional: a subtree run after a violation (arm stopped first)
```

Each tick, after the tree, :class:`SafetyMonitor` reads every arm's readings from the blackboard
(``/robot/<name>/wrench``, ``tcp_twist``, ``tcp_pose``, ``protective_stop`` and the time each
was last written). A violation stops every arm at once (the commands of that tick are
overridden by ``stop``), is written to ``/safety/violations``, to the log (``safety_violation``
events) and to the summary. Then the executive either aborts (status ABORTED) or, when the
mission names a ``recovery`` subtree, halts the mission tree and ticks the recovery tree until it
finishes; the run still ends ABORTED (a safe stop), with the recovery's outcome in the reason.
During recovery, force, torque, speed and workspace violations stop the arm and end the run at
once (force and torque against 1.2 times the level that tripped, since a stopped arm may rest in
contact); stale sensors and a protective stop, which persist by nature, are left to the recovery's
own conditions (``retract`` refuses to move an arm in a protective stop).

Force and torque must exceed their limits for ``debounce`` consecutive readings: a one-sample
glitch of the sensor (``ft_spike``) is not a collision, and the admittance law, which saturates
its speed, cannot act on it within one tick either. Speed, workspace, staleness and protective
stops trip on the first tick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import py_trees

from orbitree.language.keys import robot_key
from orbitree.language.world_spec import SafetySpec
from orbitree.nodes.context import Context
from orbitree.skills.se3 import vector_norm

MOTION_KINDS = ("force", "torque", "tcp_speed", "workspace")




@dataclass
class SafetyMonitor:
    """Checks every arm of a run against ``spec``; call it after each tick."""

    spec: SafetySpec
    robots: list[str]
    over: dict[tuple[str, str], int] = field(default_factory=dict)
    started: float | None = None
    raised: dict[tuple[str, str], float] = field(default_factory=dict)  # limits during recovery

    def enter_recovery(self, violations: list[dict[str, Any]]) -> None:
        """The arm is stopped where the violation found it: a contact force may persist, a
        decelerating arm is still fast for a moment, a stopped arm may stand outside the box.
        While the recovery runs, each of those trips only if it grows beyond that level (20 %
        for force, torque and speed; 5 mm further out for the workspace)."""
        for v in violations:
            check, value = v.get("check"), float(v.get("value", 0.0))
            if check in ("force", "torque", "tcp_speed"):
                self.raised[(v["robot"], check)] = 1.2 * value
            elif check == "workspace":
                self.raised[(v["robot"], check)] = value + 0.005

    def __call__(self, ctx: Context) -> list[dict[str, Any]]:
        storage = py_trees.blackboard.Blackboard.storage
        if self.started is None:
            self.started = ctx.now
        found: list[dict[str, Any]] = []
        for name in self.robots:
            p = robot_key(name, "")
            found.extend(self._check_robot(ctx, storage, name, p))
        return found

    def _check_robot(self, ctx: Context, storage: dict, name: str, p: str) -> list[dict[str, Any]]:
        s = self.spec
        out: list[dict[str, Any]] = []

        def violation(kind: str, value: float, limit: float, message: str) -> None:
            out.append({"check": kind, "robot": name, "value": round(float(value), 6),
                        "limit": round(float(limit), 6), "message": message})

        wrench = storage.get(p + "wrench")
        if wrench is not None:
            force, torque = vector_norm(wrench[:3]), vector_norm(wrench[3:])
            f_max = max(s.max_force, self.raised.get((name, "force"), 0.0))
            t_max = max(s.max_torque, self.raised.get((name, "torque"), 0.0))
            # judged once per new reading (debounce counts readings, not ticks); a reading that
            # stopped coming is the age check's business
            fresh_reading = ctx.age(p + "wrench") in (None, 0.0)
            if fresh_reading and self._persistent(name, "force", force > f_max):
                violation("force", force, f_max, f"{name}: wrist force {force:.1f} N > {f_max:g} N")
            if fresh_reading and self._persistent(name, "torque", torque > t_max):
                violation("torque", torque, t_max, f"{name}: wrist torque {torque:.2f} N·m > {t_max:g} N·m")
        twist = storage.get(p + "tcp_twist")
        if twist is not None:
            speed = vector_norm(twist[:3])
            v_max = max(s.max_tcp_speed, self.raised.get((name, "tcp_speed"), 0.0))
            if speed > v_max:
                violation("tcp_speed", speed, v_max,
                          f"{name}: TCP speed {speed * 1e3:.0f} mm/s > {v_max * 1e3:g} mm/s")
        pose = storage.get(p + "tcp_pose")
        if pose is not None and s.workspace is not None:
            # how far outside the box, in plain floats (the same subtractions and maximum as
            # numpy's, without its per-call cost)
            x, y, z = np.asarray(pose)[:3, 3].tolist()
            (x0, y0, z0), (x1, y1, z1) = s.workspace.min, s.workspace.max
            outside = max(x0 - x, y0 - y, z0 - z, x - x1, y - y1, z - z1)
            if x != x or y != y or z != z:  # a NaN position: NaN, as numpy's maximum makes it
                outside = math.nan
            if outside > self.raised.get((name, "workspace"), 0.0):
                xyz = np.array([x, y, z])
                violation("workspace", outside, 0.0,
                          f"{name}: TCP {np.round(xyz, 3).tolist()} m is {outside * 1e3:.0f} mm "
                          "outside the workspace")
        for key in ("tcp_pose", "wrench"):
            age = ctx.age(p + key)
            if age is None:
                if key == "wrench":
                    continue  # an arm without a wrist sensor
                age = ctx.now - (self.started or 0.0)  # never written: stale since the start
            if age > s.max_sensor_age + 1e-9:
                violation("stale_sensor", age, s.max_sensor_age,
                          f"{name}: {key} is {age * 1e3:.0f} ms old (limit {s.max_sensor_age * 1e3:g} ms)")
                break
        if s.protective_stop and storage.get(p + "protective_stop"):
            violation("protective_stop", 1.0, 0.0, f"{name}: the controller is in a protective stop")
        return out

    def _persistent(self, robot: str, kind: str, exceeded: bool) -> bool:
        """``exceeded`` on ``debounce`` consecutive readings."""
        count = self.over.get((robot, kind), 0) + 1 if exceeded else 0
        self.over[(robot, kind)] = count
        return count >= self.spec.debounce


def stop_all(drivers: list[Any], ctx: Context) -> list[str]:
    """Stop every driver that moves something; returns the names it could not reach."""
    failed = []
    for driver in drivers:
        try:
            driver.stop()
            ctx.command(driver.name, "stop", reason="safety")
        except Exception as exc:  # a disconnected arm: its controller's watchdog stops it
            failed.append(f"{driver.name}: {type(exc).__name__}: {exc}")
    return failed
