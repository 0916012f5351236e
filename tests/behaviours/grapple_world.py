"""A tiny simulated world for tick-by-tick tests of the grapple leaves (track, grapple, despin,
dock_pull, release): the JPL mockup (159 kg on a gimbal, two Velcro pads 0.6 m off its axis,
state at 2 Hz) and two UR10e arms either side of it, as in ``missions/jpl_grapple.yaml``, with a
tree given by the test.

``WorldBench.tick()`` does one executive tick (driver readings to the blackboard, one tick of the
tree, the world stepped one period) and keeps what the test asserts on: every node's status,
the commands sent (with their arguments) and the events of the tick.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import py_trees
from py_trees.common import Status

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive

WORLD = """
mission: grapple-bench
rate_hz: 35.7 Hz
max_duration: 60 s
seed: 1
robots:
  left:
    driver: sim
    base: {xyz: [0, 1.45, 0.2], rpy: [0, 0, -90]}
    q0: [0, -90, 90, -90, -90, 0]
    start_tcp: {xyz: [0, 0.72, 0.5], rpy: [90, 0, 0]}
    tcp_speed_limit: 1 m/s
  right:
    driver: sim
    base: {xyz: [0, -1.45, 0.2], rpy: [0, 0, 90]}
    q0: [0, -90, 90, -90, -90, 0]
    start_tcp: {xyz: [0, -0.72, 0.5], rpy: [-90, 0, 0]}
    tcp_speed_limit: 1 m/s
targets:
  mockup:
    kind: satellite
    pose: {xyz: [0, 0, 0.5], rpy: [0, 0, -50]}
    mass: 159 kg
    inertia: {principal: [22.8, 22.8, 28.6]}
    spin: {rate: SPIN, axis: [0, 0, 1]}
    mount: gimbal
    bearing: {viscous: 0.02 N*m*s/rad, coulomb: 0.01 N*m}
    fixtures:
      pad_left: {pose: {xyz: [0, 0.6, 0], rpy: [-90, 0, 0]}, radius: 50 mm}
      pad_right: {pose: {xyz: [0, -0.6, 0], rpy: [90, 0, 0]}, radius: 50 mm}
    state_sensor: {rate: 2 Hz, latency: 100 ms, sigma_position: 1 mm, sigma_attitude: 0.2 deg,
                   sigma_velocity: 1 mm/s, sigma_angular_velocity: 0.1 deg/s}
safety:
  max_force: 150 N
  max_torque: 30 Nm
  max_tcp_speed: 1 m/s
tree:
TREE
"""

GRAPPLE_BOTH = """\
  sequence:
    name: bench
    children:
      - parallel:
          name: both
          policy: all
          children:
            - sequence:
                name: left arm
                children:
                  - track: {name: track left, robot: left, target: mockup, fixture: pad_left}
                  - grapple: {name: grapple left, robot: left, target: mockup, fixture: pad_left,
                              partners: [right]}
            - sequence:
                name: right arm
                children:
                  - track: {name: track right, robot: right, target: mockup, fixture: pad_right}
                  - grapple: {name: grapple right, robot: right, target: mockup, fixture: pad_right,
                              partners: [left]}
"""
"""Both arms track and grapple their pads in the same revolution (the mission's first part)."""


@dataclass
class Tick:
    t: float
    status: dict[str, Status]
    commands: list[dict[str, Any]]
    events: list[dict[str, Any]]


@dataclass
class WorldBench:
    executive: Executive
    ticks: list[Tick] = field(default_factory=list)

    @classmethod
    def make(cls, tree: str, tmp_path: Path, spin: str = "2 rpm", extra: str = "") -> WorldBench:
        """The world with ``tree`` (YAML, indented two spaces) and ``extra`` mission keys."""
        path = tmp_path / "bench.yaml"
        path.write_text(WORLD.replace("SPIN", spin).replace("TREE", tree) + extra, encoding="utf-8")
        executive = Executive(load_mission(path))
        executive._setup()
        return cls(executive)

    @property
    def ctx(self):
        return self.executive.ctx

    @property
    def world(self):
        return self.executive.ctx.world

    def node(self, name: str) -> py_trees.behaviour.Behaviour:
        return next(b for b in self.executive.tree.behaviours if b.name == name)

    def get(self, key: str) -> Any:
        """A blackboard key's value (None while nothing wrote it)."""
        return py_trees.blackboard.Blackboard.storage.get(key)

    def tick(self) -> Tick:
        ex = self.executive
        now = self.ctx.now if self.ticks else 0.0
        ex._tick(now)
        _, commands, events = self.ctx.take_tick_records()
        tick = Tick(now, {b.name: b.status for b in ex.tree.behaviours}, commands, events)
        self.ticks.append(tick)
        for driver in ex.drivers:
            driver.after_tick(self.ctx.period)
        self.ctx.now = now + self.ctx.period
        return tick

    def until(self, name: str, *statuses: Status, limit: float = 20.0) -> Tick:
        """Tick until node ``name`` is in one of ``statuses`` (at most ``limit`` s of mission time)."""
        while True:
            tick = self.tick()
            if tick.status[name] in statuses:
                return tick
            assert tick.t < limit, f"{name} still {tick.status[name]} after {limit} s"

    def halt(self) -> None:
        self.executive.tree.root.stop(Status.INVALID)
        self.ctx.take_tick_records()

    def pad(self, fixture: str) -> np.ndarray:
        """pad2world (4, 4), ground truth now."""
        return self.world.satellites["mockup"].fixture_pose(fixture)

    def tool(self, robot: str) -> np.ndarray:
        """tcp2world (4, 4), ground truth now."""
        return self.world.tcp_pose(robot)

    def base(self, robot: str) -> np.ndarray:
        return self.world.base_pose(robot)

    def contact(self, robot: str):
        """The world's pad contact of ``robot``'s tool (None before it ever touched)."""
        return next((c for c in self.world.pads.values() if c.robot == robot), None)
