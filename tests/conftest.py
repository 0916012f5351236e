"""Shared test scaffolding: a scripted stub leaf and a tiny harness that ticks trees by hand."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import py_trees
import pytest
from py_trees.common import Status
from pydantic import Field

from orbitree.behaviours.catalogue import load_mission, make_registry
from orbitree.language.loader import Mission
from orbitree.language.params import NodeParams
from orbitree.nodes.build import BuiltTree, build_tree
from orbitree.nodes.context import Context
from orbitree.nodes.leaf import Leaf

LETTER = {Status.RUNNING: "R", Status.SUCCESS: "S", Status.FAILURE: "F", Status.INVALID: "-"}


class ScriptParams(NodeParams):
    statuses: list[Literal["S", "F", "R"]] = Field(default_factory=lambda: ["S"])


class Scripted(Leaf):
    """Returns the scripted statuses one per tick (then repeats the last); journals its hooks."""

    kind = "script"
    Params = ScriptParams
    shorthand: ClassVar[str | None] = "statuses"
    params: ScriptParams

    def __init__(self, name: str, params: ScriptParams, ctx: Context) -> None:
        super().__init__(name, params, ctx)
        self.step = 0

    def initialise(self) -> None:
        self.ctx.event("initialise", node=self.name)

    def update(self) -> Status:
        code = self.params.statuses[min(self.step, len(self.params.statuses) - 1)]
        self.step += 1
        return {"S": Status.SUCCESS, "F": Status.FAILURE, "R": Status.RUNNING}[code]

    def terminate(self, new_status: Status) -> None:
        self.ctx.event("terminate", node=self.name, status=new_status.name)


TEST_REGISTRY = make_registry((Scripted,))


@dataclass
class Harness:
    mission: Mission
    tree: BuiltTree
    ctx: Context

    def tick(self) -> str:
        """Tick once, advance the clock one period, return every node's status letter in order."""
        self.tree.root.tick_once()
        self.ctx.now += self.ctx.period
        return self.state()

    def state(self) -> str:
        return " ".join(
            f"{s.name}={LETTER[b.status]}"
            for s, b in zip(self.tree.specs, self.tree.behaviours, strict=True)
        )

    def journal(self, kind: str | None = None) -> list[str]:
        out = []
        for e in self.ctx.events:
            if kind is None or e["kind"] == kind:
                out.append(
                    f"{e['kind']}:{e.get('node')}" + (f":{e['status']}" if "status" in e else "")
                )
        return out


def write_mission(tmp_path: Path, tree_yaml: str, extra: str = "", name: str = "m.yaml") -> Path:
    extra = textwrap.dedent(extra)
    rate = "" if "rate_hz" in extra else "rate_hz: 10\n"
    body = (
        "mission: test\n"
        + rate
        + extra
        + "tree:\n"
        + textwrap.indent(textwrap.dedent(tree_yaml).strip("\n"), "  ")
    )
    path = tmp_path / name
    path.write_text(body + "\n", encoding="utf-8")
    return path


@pytest.fixture
def harness(tmp_path: Path):
    """``harness(tree_yaml, extra_top_level_yaml)`` -> a Harness on a freshly built tree."""

    def make(tree_yaml: str, extra: str = "") -> Harness:
        mission = load_mission(write_mission(tmp_path, tree_yaml, extra), registry=TEST_REGISTRY)
        py_trees.blackboard.Blackboard.clear()
        ctx = Context(period=0.1)
        tree = build_tree(mission.root, ctx)
        for key, value in mission.model.blackboard.items():
            py_trees.blackboard.Blackboard.set(key, value)
            ctx.touched(key)
        return Harness(mission, tree, ctx)

    return make


@pytest.fixture(autouse=True)
def _fresh_blackboard():
    py_trees.blackboard.Blackboard.clear()
    yield
    py_trees.blackboard.Blackboard.clear()


class RaiseParams(NodeParams):
    after: int = 0  # ticks that return RUNNING before the exception
    error: Literal["RuntimeError", "KeyboardInterrupt"] = "RuntimeError"


class Raiser(Leaf):
    """Stays RUNNING for ``after`` ticks, then raises (a bug in a leaf, or Ctrl-C)."""

    kind = "explode"
    Params = RaiseParams
    params: RaiseParams

    def initialise(self) -> None:
        self.count = 0

    def update(self) -> Status:
        self.count += 1
        if self.count > self.params.after:
            raise {"RuntimeError": RuntimeError, "KeyboardInterrupt": KeyboardInterrupt}[
                self.params.error
            ]("sensor frame out of range")
        return Status.RUNNING


class FakeDriver:
    """A driver adapter that journals every call the executive makes."""

    def __init__(self, name: str = "arm") -> None:
        self.name = name
        self.calls: list[str] = []
        self.reads = 0

    def keys(self) -> list[str]:
        return [f"/robot/{self.name}/speed"]

    def setup(self) -> None:
        self.calls.append("setup")

    def read(self, now: float) -> dict:
        self.reads += 1
        return {f"/robot/{self.name}/speed": 0.01 * self.reads}

    def after_tick(self, period: float) -> None:
        pass

    def stop(self) -> None:
        self.calls.append("stop")

    def shutdown(self) -> None:
        self.calls.append("shutdown")


TEST_REGISTRY = make_registry((Scripted, Raiser))


def pytest_configure(config: pytest.Config) -> None:
    """Compile the contact model's, the sim camera's, the wrist sensor's and the kinematics' numba
    kernels (or load them from numba's cache) once, in the controlling process, before test workers
    start: a test that runs a mission in a subprocess must not spend its time budget on the first
    compilation (~35 s after an install)."""
    if not hasattr(config, "workerinput"):
        from orbitree.runtime.warm import warm_kernels

        warm_kernels()

