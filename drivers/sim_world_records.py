"""The records the sim world (:class:`~orbitree.drivers.sim_world.SimWorld`) keeps of its contacts.

:class:`Docking`: one arm's tool against a target's interface (the contact model, the tool's last
real pose, the wrench, the hooks' pull); :class:`Push`: a bumped target on its way along an
offset (the target_bumped fault), how far it got and how hard a tool held it back;
:class:`PadContact`: one tool against one satellite pad (force, depth, the Velcro's anchor and
events). :mod:`orbitree.drivers.sim_world` steps them and re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from orbitree.skills.contact import ContactModel


@dataclass
class Docking:
    """Contact state of one arm's tool: the model, the last real pose, the hooks' pull."""

    model: ContactModel
    target: str | None = None
    real: np.ndarray | None = None  # tool pose (4, 4), base frame
    commanded: np.ndarray | None = None
    wrench: np.ndarray = field(default_factory=lambda: np.zeros(6))
    hook_tension: float = 0.0
    contacts: int = 0
    solve_s: float = 0.0
    solves: int = 0


@dataclass(eq=False)  # pushes are found in lists by identity; their arrays do not compare
class Push:
    """A target pushed along ``offset`` (its own frame) at a finite speed with at most ``force``
    (the target_bumped fault). The push lasts ``duration``, the time the offset takes free; a
    tool in the way holds the target back (the push advances only as far as the contact's
    resistance along the motion stays within ``force``), and when the time is up the target
    rests where it got to."""

    target: str
    origin: np.ndarray  # board2world when the push began
    xyz: np.ndarray  # offset translation, target frame
    rotvec: np.ndarray  # offset rotation, target frame
    duration: float
    force: float
    start: float
    elapsed: float = 0.0
    progress: float = 0.0  # fraction of the offset done
    peak_resistance_n: float = 0.0
    held_s: float = 0.0  # time the contact held the target back

    def pose(self, s: float) -> np.ndarray:
        offset = np.eye(4)
        offset[:3, :3] = Rotation.from_rotvec(s * self.rotvec).as_matrix()
        offset[:3, 3] = s * self.xyz
        return self.origin @ offset

    def record(self, now: float) -> dict[str, object]:
        return {"target": self.target, "start": round(self.start, 6), "end": round(now, 6),
                "reached": round(self.progress, 4), "peak_resistance_n": round(self.peak_resistance_n, 3),
                "held_s": round(self.held_s, 6)}


@dataclass
class PadContact:
    """One tool against one pad: the force on the tool (world, N), how deep it presses (m), and
    the Velcro: ``anchor`` (pad frame, on its surface) while engaged, else None; ``events``
    (``engaged`` / ``released``, time s, force N)."""

    robot: str
    target: str
    fixture: str
    force: np.ndarray = field(default_factory=lambda: np.zeros(3))
    depth: float = 0.0
    anchor: np.ndarray | None = None
    peak_n: float = 0.0
    events: list[tuple[str, float, float]] = field(default_factory=list)

    @property
    def attached(self) -> bool:
        return self.anchor is not None
