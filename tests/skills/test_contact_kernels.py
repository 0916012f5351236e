"""The contact model's compiled kernels (skills/contact_kernels.py and the modules it re-exports)
against the model they replaced and against their own interpreted code.

tests/skills/data/contact_ticks.json holds 30 solve_contact calls of the flagship at 500 Hz (seed
start of benchmarks/sim_speed.py): no contact, hooks pulling in free space, and hooks with 1-6 QP
solves against the passive interface, with the outputs of the numpy model before the kernels.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from orbitree.skills import contact, contact_kernels
from orbitree.skills.contact_geometry import invert_pose
from orbitree.skills.se3 import rotvec_of

TICKS = json.loads((Path(__file__).parent / "data" / "contact_ticks.json").read_text())


@pytest.fixture(scope="module")
def model() -> contact.ContactModel:
    spec = TICKS["model"]
    return contact.sirom_contact_model(spec["stiffness"], friction=spec["friction"])


def _solve(model: contact.ContactModel, tick: dict) -> contact.ContactResult:
    hook = None if tick["hook"] is None else contact.HookPull(*tick["hook"])
    poses = [np.array(tick[k]) for k in ("commanded_tcp2base", "passive2base", "previous_real_tcp2base",
                                         "previous_commanded_tcp2base")]
    return contact.solve_contact(model, *poses, hook=hook)


def test_flagship_contact_ticks_give_the_numpy_models_pose_wrench_and_counts(model) -> None:
    worst_m = worst_n = 0.0
    for tick in TICKS["ticks"]:
        result = _solve(model, tick)
        worst_m = max(worst_m, np.abs(result.real_tcp2base - np.array(tick["real_tcp2base"])).max())
        worst_n = max(worst_n, np.abs(result.wrench_tcp - np.array(tick["wrench_tcp"])).max())
        assert (result.n_active, len(result.contacts), result.iterations, result.converged) == (
            tick["n_active"], tick["n_contacts"], tick["iterations"], tick["converged"]), tick["call"]
        assert result.hook_tension == pytest.approx(tick["hook_tension"], abs=1e-9)
    assert worst_m < 1e-12 and worst_n < 1e-9, (worst_m, worst_n)
    # the sample covers what the flagship's contact does: hooks, contacts, several QP solves
    assert max(t["iterations"] for t in TICKS["ticks"]) >= 4
    assert sum(t["n_contacts"] > 0 for t in TICKS["ticks"]) >= 20


def _configurations(model: contact.ContactModel) -> list[np.ndarray]:
    """tcp2passive poses of the recorded ticks: the previous real pose, the commanded pose and
    the real pose found (in contact, entering the passive, clear of it)."""
    poses = []
    for tick in TICKS["ticks"]:
        to_passive = invert_pose(np.array(tick["passive2base"]))
        poses += [to_passive @ np.array(tick[k]) for k in ("previous_real_tcp2base", "commanded_tcp2base",
                                                          "real_tcp2base")]
    return poses


def test_compiled_search_and_interpenetration_equal_their_interpreted_code_on_flagship_poses(model) -> None:
    tables, tol, margin = model.tables, model.tolerance_m, model.margin_m
    found = entered = 0
    for pose in _configurations(model):
        compiled = contact_kernels.search(pose[:3, :3], pose[:3, 3], *tables.geometry, tol, margin)
        interpreted = contact_kernels.search.py_func(pose[:3, :3], pose[:3, 3], *tables.geometry, tol, margin)
        np.testing.assert_array_equal(compiled[0], interpreted[0])
        for got, want in zip(compiled[1:4], interpreted[1:4], strict=True):
            np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-15)
        assert compiled[4] == interpreted[4]
        found += len(compiled[3])
        placed = contact_kernels.place(tables.active_points, pose[:3, :3], pose[:3, 3])
        ee = contact_kernels._edge_edge(placed, tables.n_active_planar, pose[:3, :3], pose[:3, 3],
                                        *tables.geometry[14:], tables.geometry[13], tol, margin)
        ee_py = contact_kernels._edge_edge.py_func(placed, tables.n_active_planar, pose[:3, :3], pose[:3, 3],
                                                   *tables.geometry[14:], tables.geometry[13], tol, margin)
        for got, want in zip(ee, ee_py, strict=True):
            np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-15)
        for depth in (0.0, tol):
            verdict = contact_kernels.penetrates(pose[:3, :3], pose[:3, 3], *tables.solid, depth)
            assert verdict == contact_kernels.penetrates.py_func(pose[:3, :3], pose[:3, 3], *tables.solid, depth)
            entered += verdict
    assert found > 200 and entered > 10, (found, entered)


def test_compiled_qp_rows_pose_algebra_and_bisection_equal_their_interpreted_code_on_flagship_poses(model) -> None:
    tables = model.tables
    poses = _configurations(model)
    rows = bisections = 0
    for start, commanded, real in zip(poses[::3], poses[1::3], poses[2::3], strict=True):
        contacts = contact._search(model, real)[0]
        e0 = contact.deformation(commanded, real)
        np.testing.assert_allclose(contact_kernels.deformation(commanded, real), e0, rtol=0.0, atol=1e-15)
        args = (commanded, real, e0, contacts.normals_passive, contacts.points_passive, contacts.distances,
                model.friction, tables.cos_flat, tables.sin_flat, True, 1e-3)
        for got, want in zip(contact_kernels.qp_rows(*args), contact_kernels.qp_rows.py_func(*args), strict=True):
            np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-15)
        rows += len(contacts)
        assert contact_kernels.gap(start, commanded) == contact_kernels.gap.py_func(start, commanded)
        moved = contact_kernels.apply(commanded, e0)
        np.testing.assert_array_equal(moved, contact_kernels.apply.py_func(commanded, e0))
        np.testing.assert_allclose(moved, real, rtol=0.0, atol=1e-15)
        if contact._penetrates(model, commanded):
            step = rotvec_of(start[:3, :3].T @ commanded[:3, :3])
            distance, angle = contact._gap(start, commanded)
            args = (start, commanded, step, distance + angle * model.active.radius, model.tolerance_m,
                    *tables.solid)
            assert contact_kernels.bisect(*args) == contact_kernels.bisect.py_func(*args)
            bisections += 1
    assert rows > 50 and bisections >= 1, (rows, bisections)
