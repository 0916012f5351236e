"""Safety supervision of one run: the hooks after every tick, the stop, and the recovery tree.

After each tick the hooks (the mission's safety monitor, and any a caller adds) report
violations. A violation stops every driver at once, overriding the tick's commands. Without a
recovery subtree the run then ends ABORTED; with one, the mission tree is halted and the recovery
tree is ticked instead until it finishes (the run still ends ABORTED: a safety stop, however well
recovered, is not a success). During recovery only motion checks (force, torque, speed,
workspace) count, against the levels the violation found (``enter_recovery``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from py_trees.common import Status

from orbitree.language.keys import SAFETY_VIOLATIONS
from orbitree.nodes.build import BuiltTree
from orbitree.nodes.context import Context
from orbitree.runtime.safety import MOTION_KINDS, stop_all

SafetyHook = Callable[[Context], list[dict[str, Any]]]
VIOLATIONS_KEY = SAFETY_VIOLATIONS


class Supervisor:
    def __init__(
        self,
        hooks: Sequence[SafetyHook],
        ctx: Context,
        drivers: Sequence[Any],
        write: Callable[[str, Any], None],
        recovery: BuiltTree | None = None,
        recovery_name: str | None = None,
    ) -> None:
        self.hooks = list(hooks)
        self.ctx = ctx
        self.drivers = drivers
        self.write = write  # the executive's blackboard writer
        self.recovery = recovery
        self.recovery_name = recovery_name
        self.violations: list[dict[str, Any]] = []
        self.recovering: dict[str, Any] | None = None  # the violation that started the recovery

    def check(self, mission: BuiltTree) -> list[dict[str, Any]]:
        """Run the hooks after a tick; stop the drivers on a violation, start the recovery if there
        is one. Returns the violations that end the run (none when the recovery takes over)."""
        fresh: list[dict[str, Any]] = []
        for hook in self.hooks:
            found = hook(self.ctx)
            if found and self.recovering is not None:
                # stale sensors and protective stops persist: the recovery checks them
                found = [v for v in found if v.get("check") in MOTION_KINDS]
            fresh.extend(found or ())
        if not fresh:
            return []
        self.violations.extend(fresh)
        self.write(VIOLATIONS_KEY, list(self.violations))
        for item in fresh:
            self.ctx.event("safety_violation", **item)
        unreachable = stop_all(self.drivers, self.ctx)  # override this tick's commands
        if unreachable:
            self.ctx.event("stop_failed", drivers=unreachable)
        if self.recovering is None and self.recovery is not None:
            mission.root.stop(Status.INVALID)  # halt the mission: leaves stop arms
            self.recovering = fresh[0]
            for hook in self.hooks:
                if hasattr(hook, "enter_recovery"):
                    hook.enter_recovery(fresh)
            self.ctx.event("recovery", phase="start", subtree=self.recovery_name)
            return []
        return fresh

    def verdict(self, fresh: list[dict[str, Any]]) -> tuple[str, str] | None:
        """(status, reason) when safety ends the run after this tick, else None."""
        first = self.violations[0].get("message", self.violations[0]) if self.violations else None
        if fresh:
            during = "; during recovery: " + str(fresh[0].get("message")) if self.recovering else ""
            return "ABORTED", f"safety: {first}{during}"
        if self.recovering is None or self.recovery is None:
            return None
        outcome = self.recovery.root.status
        if outcome not in (Status.SUCCESS, Status.FAILURE):
            return None
        self.ctx.event("recovery", phase="end", subtree=self.recovery_name, status=outcome.name)
        first = self.recovering.get("message", self.recovering)
        return "ABORTED", f"safety: {first}; recovery {self.recovery_name!r} {outcome.name}"

    def out_of_time(self) -> tuple[str, str] | None:
        """The verdict when ``max_duration`` runs out during a recovery: still a safety stop."""
        if self.recovering is None:
            return None
        first = self.recovering.get("message", self.recovering)
        return "ABORTED", f"safety: {first}; recovery {self.recovery_name!r} did not finish"
