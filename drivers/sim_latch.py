"""Simulated docking latch: the hooks of the active interface, driven along their stroke.

``close()`` and ``open()`` return at once; the hook motors drive the stroke (0 open .. 1 closed)
at ``1 / travel_time`` per second of simulated time (stepped by the sim world), and ``state()``
reports OPENING / CLOSING until they arrive. ``jammed`` (fault injection) makes the hooks stop
where they are and report FAULT.

A latch alone (a bench actuator, ``step(dt)``) just travels. In the sim world the hooks meet the
passive interface (``step(dt, passive)``, :class:`Passive`: where the passive face is and how
hard the hooks pull), with the mechanics of :class:`HookMechanics`:

* the first ``swing`` of the stroke swings the hooks in over the passive's catches: they
  engage only if the passive is then within their reach (laterally and axially);
* the rest of the stroke pulls the hook tips from ``reach_axial`` above the passive face to
  ``preload / stiffness`` past it; engaged, the hooks pull the tool toward the face with
  ``stiffness × (gap − tip depth)`` (solved with the contact model by the world);
* the motors pull at most ``max_pull``: the stroke advances only as far as that pull allows
  (the stroke waits for the arm to follow); pulling at 90 % of it or more for ``stall_time``
  with less than ``min_progress`` of stroke gained, the hooks have stalled and the latch reports
  FAULT, a jam (``fault`` says why). The window is set by how slowly a complying arm may still
  be following: a petal sliding off a chamfer with friction leaves only a few newtons
  unbalanced, and an admittance follows that at F/D (the capture's 3 N dead band over its
  24000 N·s/m: 0.125 mm/s), after first relaxing the structure's preload (D/K = 0.24 s at
  100 N/mm). 1 % of the stroke (0.21 mm of the tips) in 2 s is 0.10 mm/s, below that: a tool
  still sliding in is not a jam; a wedged one stops within a few D/K and is reported;
* CLOSED only at the end of the stroke with the passive in the hooks, which the stroke's end
  means seated within ``(max_pull − preload) / stiffness`` of the face; a full stroke with
  nothing engaged is a FAULT too (the passive was not within reach).

The hook figures are model assumptions (the SIROM paper gives none): 8 mm lateral and 12 mm
axial reach, a 60 N/mm linkage, 60 N motors, 30 N of preload.
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitree.drivers.interfaces import LatchState


@dataclass(frozen=True)
class HookMechanics:
    """Reach (m), the share of the stroke spent swinging in, linkage stiffness (N/m), motor pull
    and preload (N), and how long a stall may last (s) gaining less than ``min_progress`` of the
    stroke (1 %: 0.21 mm of the tips' travel) before it is a jam (2 s: see the module's docstring;
    with 0.5 s the flagship's capture at 1.2 mm and 0.8° was called a jam while still sliding in)."""

    reach_lateral: float = 0.008
    reach_axial: float = 0.012
    swing: float = 0.4
    stiffness: float = 6.0e4
    max_pull: float = 60.0
    preload: float = 30.0
    stall_time: float = 2.0
    min_progress: float = 0.01

    def __post_init__(self) -> None:
        if not 0.0 <= self.swing < 1.0:
            raise ValueError(f"swing must be in [0, 1), got {self.swing}")
        for key in ("reach_lateral", "reach_axial", "stiffness", "max_pull", "preload", "stall_time"):
            if not getattr(self, key) > 0.0:
                raise ValueError(f"HookMechanics.{key} must be > 0, got {getattr(self, key)}")
        if self.preload >= self.max_pull:
            raise ValueError(f"preload ({self.preload} N) must be below max_pull ({self.max_pull} N)")

    def depth(self, stroke: float) -> float | None:
        """Height of the hook tips over the passive face (m) at ``stroke``; None while they swing."""
        if stroke < self.swing:
            return None
        pulled = (stroke - self.swing) / (1.0 - self.swing)
        return self.reach_axial - (self.reach_axial + self.preload / self.stiffness) * pulled

    @property
    def seated_within(self) -> float:
        """How far off the face (m) the tool can be when the stroke ends: the pull is then max_pull."""
        return (self.max_pull - self.preload) / self.stiffness


@dataclass(frozen=True)
class Passive:
    """What the hooks meet: the tool origin's height over the passive face and its lateral
    offset (m, passive frame), and the pull the hooks exert now (N, from the contact model)."""

    gap: float
    lateral: float
    tension: float = 0.0


class SimLatch:
    def __init__(self, name: str = "latch", travel_time: float = 1.0, hooks: HookMechanics | None = None) -> None:
        if travel_time <= 0:
            raise ValueError(f"travel_time must be > 0 s, got {travel_time}")
        self.name = name
        self.travel_time = travel_time
        self.hooks = hooks or HookMechanics()
        self.closure = 0.0  # the stroke
        self._direction = 0  # +1 closing, -1 opening, 0 still
        self.jammed = False
        self.engaged = False  # the hooks hold the passive's catches
        self.fault: str | None = None  # why the latch reports FAULT (a jam, an empty closure)
        self._stalled = 0.0  # time pulling hard without progress
        self._stall_from = 0.0  # the stroke when that began

    def setup(self) -> None:
        pass

    def shutdown(self) -> None:
        self._direction = 0

    def close(self) -> None:
        if not self.jammed:
            self._direction, self.fault, self._stalled, self._stall_from = 1, None, 0.0, self.closure

    def open(self) -> None:
        if not self.jammed:
            self._direction, self.fault = -1, None

    def state(self) -> LatchState:
        if self.jammed or self.fault is not None:
            return LatchState.FAULT
        if self._direction > 0:
            return LatchState.CLOSING
        if self._direction < 0:
            return LatchState.OPENING
        return LatchState.CLOSED if self.closure >= 1.0 else LatchState.OPEN

    def depth(self) -> float | None:
        """Where the engaged hooks hold the passive face (m, see :meth:`HookMechanics.depth`);
        None when they hold nothing."""
        return self.hooks.depth(self.closure) if self.engaged else None

    def step(self, dt: float, passive: Passive | bool | None = False) -> None:
        """Advance ``dt`` seconds. ``passive``: False for a latch on its own (it just travels),
        None when no passive interface is near, else where it is (:class:`Passive`)."""
        if self.jammed or self._direction == 0:
            return
        if self._direction < 0:
            self.closure = max(0.0, self.closure - dt / self.travel_time)
            if self.closure < self.hooks.swing:
                self.engaged = False
            if self.closure == 0.0:
                self._direction = 0
            return
        if passive is False:
            self.closure = min(1.0, self.closure + dt / self.travel_time)
            self.engaged = False
            if self.closure == 1.0:
                self._direction = 0
            return
        self._close_on(dt, passive if isinstance(passive, Passive) else None)

    def _close_on(self, dt: float, passive: Passive | None) -> None:
        hooks = self.hooks
        wanted = min(1.0, self.closure + dt / self.travel_time)
        if not self.engaged and self.closure < hooks.swing <= wanted:  # the hooks swing in now
            self.engaged = (passive is not None and passive.lateral < hooks.reach_lateral
                            and passive.gap < hooks.reach_axial)
        if self.engaged and passive is not None and wanted > hooks.swing:
            # the motors pull no harder than max_pull: with the passive held where it is, the
            # tips may go (max_pull − tension) / stiffness further
            slope = (hooks.reach_axial + hooks.preload / hooks.stiffness) / (1.0 - hooks.swing)
            room = max(0.0, hooks.max_pull - passive.tension) / hooks.stiffness / slope
            wanted = max(self.closure, min(wanted, max(self.closure, hooks.swing) + room))
        pull = 0.0 if passive is None else passive.tension
        if pull < 0.9 * hooks.max_pull or wanted - self._stall_from >= hooks.min_progress:
            self._stalled, self._stall_from = 0.0, wanted
        else:
            self._stalled += dt
            if self._stalled >= hooks.stall_time - 1e-9:
                gap = "" if passive is None else f", the passive {passive.gap * 1e3:.1f} mm off the face"
                self.fault = (f"jammed: the hooks stalled at {self.closure:.0%} of their stroke pulling "
                              f"{pull:.0f} N{gap}")
                self._direction = 0
                return
        self.closure = wanted
        if self.closure >= 1.0:
            self._direction = 0
            if not self.engaged:
                self.fault = "closed on nothing: the passive interface was not within the hooks' reach"
