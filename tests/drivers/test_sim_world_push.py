"""A bumped target (SimWorld.push_target): finite speed, finite force, held back by a tool."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive

MISSION = Path(__file__).resolve().parents[2] / "missions" / "sirom_dock.yaml"
DT = 0.008


def world(offset: str):
    """The docking mission's world, the arm's TCP at the docked pose moved by ``offset``."""
    mission = load_mission(MISSION, [f"robots.arm.start={{target: sirom, offset: {offset}}}"])
    sim = Executive(mission).ctx.world
    for _ in range(3):
        sim.step(DT)
    return sim


def lateral(metres: float) -> np.ndarray:
    out = np.eye(4)
    out[0, 3] = metres
    return out


def test_a_free_push_moves_the_target_at_its_speed_and_ends_at_the_offset():
    sim = world("{xyz: [0, 0, 300 mm]}")  # the tool far above: nothing in the way
    before = sim.target_pose("sirom")
    sim.push_target("sirom", lateral(0.02), speed=0.1, force=50.0)  # 0.2 s
    for _ in range(12):  # 0.096 s
        sim.step(DT)
    halfway = np.linalg.solve(before, sim.target_pose("sirom"))[0, 3]
    assert halfway == pytest.approx(0.1 * 12 * DT, abs=1e-9)
    for _ in range(20):
        sim.step(DT)
    np.testing.assert_allclose(np.linalg.solve(before, sim.target_pose("sirom")), lateral(0.02), atol=1e-12)
    (record,) = sim.pushed
    assert record["reached"] == 1.0 and record["held_s"] == 0.0 and record["peak_resistance_n"] == 0.0
    assert sim.peaks["force_n"] == 0.0


@pytest.mark.parametrize("force", [30.0, 50.0])
def test_an_engaged_tool_holds_the_push_back_at_the_push_force(force):
    sim = world("{xyz: [0, 0, 0]}")  # petals in the receptacle, the arm holding still
    sim.push_target("sirom", lateral(0.03), speed=0.1, force=force)
    for _ in range(50):
        sim.step(DT)
    (record,) = sim.pushed
    assert record["reached"] < 0.25  # under 7.5 mm of the 30 mm
    assert record["held_s"] > 0.2
    # the wrist carries what the push forces through, and no more
    assert force - 2.0 < record["peak_resistance_n"] <= force
    assert sim.peaks["force_n"] < 1.1 * force
    held = float(np.linalg.norm(sim.docking["arm"].wrench[:3]))
    assert held == pytest.approx(record["peak_resistance_n"], abs=2.0)


def test_a_hard_knock_carries_an_engaged_tool_along_through_the_arms_structure():
    sim = world("{xyz: [0, 0, 0]}")
    sim.push_target("sirom", lateral(0.03), speed=0.1, force=5000.0)
    for _ in range(50):
        sim.step(DT)
    (record,) = sim.pushed
    assert record["reached"] == 1.0
    assert sim.peaks["force_n"] > 2000.0  # tens of millimetres of the 100 N/mm structure


def test_a_second_bump_on_another_target_and_a_new_bump_on_the_same_target():
    sim = world("{xyz: [0, 0, 300 mm]}")
    board = sim.boards["sirom"]
    sim.add_target("spare", board, sim.target_pose("sirom") @ lateral(0.5))
    first = sim.push_target("sirom", lateral(0.02))
    sim.push_target("spare", lateral(0.05))  # 0.5 s: still going when the second sirom push ends
    sim.step(DT)
    sim.push_target("sirom", lateral(-0.02))  # ends the first where it is (0.8 mm along)
    for _ in range(80):
        sim.step(DT)
    assert [(r["target"], r["reached"]) for r in sim.pushed] == [("sirom", 0.04), ("sirom", 1.0), ("spare", 1.0)]
    moved = np.linalg.solve(first.origin, sim.target_pose("sirom"))[0, 3]
    assert moved == pytest.approx(0.0008 - 0.02, abs=1e-9)
