"""orbitree.skills.contact(_geometry): the compliant-contact model of Suárez et al. on the SIROM pair.

The model is that of Suárez, Basañez and Colomé ([Suárez] in the README's Sources).

Overlap is checked with an independent oracle: for every pair of convex pieces, a linear
program (scipy's HiGHS) finds the deepest point common to both pieces shrunk by ``t``; two
pieces overlapping by a depth ``δ`` give ``t* = δ / 2`` (for a flat overlap), so ``t*`` must stay
below half the model's tolerance.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.spatial.transform import Rotation

from orbitree.skills import contact
from orbitree.skills import contact_geometry as geo
from orbitree.skills import contact_kernels as kernels

MM = 1e-3
K_DEFAULT = np.array(contact.DEFAULT_STIFFNESS)
#: The passive SIROM on the table as in the mission example: (0.6, 0.2, 0.05) m, 30 deg about z.
PASSIVE2BASE = np.eye(4)
PASSIVE2BASE[:3, :3] = Rotation.from_euler("z", 30.0, degrees=True).as_matrix()
PASSIVE2BASE[:3, 3] = [0.6, 0.2, 0.05]


@pytest.fixture(scope="module")
def model() -> contact.ContactModel:
    return contact.sirom_contact_model()


def _tcp2passive(offset_mm=(0.0, 0.0, 0.0), rotvec_deg=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Seated pose moved by ``offset`` and turned by ``rotvec`` (both in the passive frame)."""
    pose = geo.seated_tcp2passive()
    pose[:3, :3] = Rotation.from_rotvec(rotvec_deg, degrees=True).as_matrix() @ pose[:3, :3]
    pose[:3, 3] += np.asarray(offset_mm) * MM
    return pose


def _in_base(tcp2passive: np.ndarray) -> np.ndarray:
    return PASSIVE2BASE @ tcp2passive


def _in_passive(tcp2base: np.ndarray) -> np.ndarray:
    return np.linalg.inv(PASSIVE2BASE) @ tcp2base


def _force_in_passive(result: contact.ContactResult, commanded_tcp2base: np.ndarray) -> np.ndarray:
    """The wrench's force (compliance = commanded TCP frame) expressed in the passive frame."""
    return (np.linalg.inv(PASSIVE2BASE) @ commanded_tcp2base)[:3, :3] @ result.wrench_tcp[:3]


def _max_overlap(model: contact.ContactModel, tcp2passive: np.ndarray) -> float:
    """Largest inset ``t*`` common to an active and a passive piece (LP oracle), metres."""
    worst = -np.inf
    for active_piece in model.active.pieces:
        normals = active_piece.normals @ tcp2passive[:3, :3].T
        offsets = active_piece.offsets + normals @ tcp2passive[:3, 3]
        for passive_piece in model.passive.pieces:
            a_ub = np.vstack([np.column_stack([normals, np.ones(len(normals))]),
                              np.column_stack([passive_piece.normals,
                                               np.ones(len(passive_piece.normals))])])
            b_ub = np.concatenate([offsets, passive_piece.offsets])
            result = linprog([0.0, 0.0, 0.0, -1.0], A_ub=a_ub, b_ub=b_ub,
                             bounds=[(None, None)] * 3 + [(None, 1.0)], method="highs")
            worst = max(worst, result.x[3])
    return worst


def _descend(model, offset_mm, rotvec_deg=(0.0, 0.0, 0.0), start_mm=20.0, end_mm=-2.0):
    """Command the offset pose from ``start_mm`` above seated down to ``end_mm`` in 0.5 mm steps."""
    heights = np.arange(start_mm, end_mm - 1e-9, -0.5)
    previous_cmd = _in_base(_tcp2passive((*offset_mm[:2], heights[0]), rotvec_deg))
    real, results = previous_cmd, []
    for height in heights[1:]:
        cmd = _in_base(_tcp2passive((*offset_mm[:2], height), rotvec_deg))
        results.append(contact.solve_contact(model, cmd, PASSIVE2BASE, real, previous_cmd))
        real, previous_cmd = results[-1].real_tcp2base, cmd
    return previous_cmd, results


# ----------------------------------------------------------------------------- geometry


def test_convex_hull_of_a_cube_has_six_square_faces_with_outward_normals() -> None:
    cube = geo.convex_polyhedron(np.array(np.meshgrid([0, 1], [0, 1], [0, 1])).reshape(3, -1).T)
    assert len(cube.faces) == 6 and all(len(face) == 4 for face in cube.faces)
    assert len(cube.edges) == 12 and cube.edge_faces.shape == (12, 2)
    centre = np.full(3, 0.5)
    for face, normal, offset in zip(cube.faces, cube.normals, cube.offsets, strict=True):
        corners = cube.vertices[list(face)]
        np.testing.assert_allclose(corners @ normal, offset, atol=1e-12)
        assert normal @ (corners.mean(axis=0) - centre) == pytest.approx(0.5)
        # Counter-clockwise seen from outside: the polygon's winding agrees with the normal.
        assert np.cross(corners[1] - corners[0], corners[2] - corners[1]) @ normal > 0.0


def test_union_of_two_cubes_hides_the_shared_faces_and_seam_edges() -> None:
    grid = np.array(np.meshgrid([0, 1], [0, 1], [0, 1])).reshape(3, -1).T.astype(float)
    shifted = grid + np.array([1.0, 0.0, 0.0])
    body = geo.composite_body([geo.convex_polyhedron(grid), geo.convex_polyhedron(shifted)])
    # 2 x 6 faces, the two touching at x = 1 are inside the union.
    assert body.plane_external.sum() == 10
    # A 2x1x1 box has 12 edges; its 4 long ones are split at the seam: 16 crease segments.
    assert len(body.crease_edges) == 16
    assert not np.isclose(body.crease_edges[..., 0], 1.0).all(axis=1).any()
    assert len(body.vertices) == 12


def test_sirom_pair_seats_face_to_face_with_half_millimetre_petal_clearance(model) -> None:
    seated = _tcp2passive()
    assert not contact.interpenetrates(model, seated)
    assert _max_overlap(model, seated) <= 1e-9
    assert contact.interpenetrates(model, _tcp2passive((0.0, 0.0, -0.2)))
    # Petal 0's inner face faces the passive's side along +x: moving the tool 0.4 mm toward -x
    # is free, 0.7 mm is not; toward +x petals 1 and 2 close in at half the rate (1 mm of play).
    assert not contact.interpenetrates(model, _tcp2passive((-0.4, 0.0, 0.0)))
    assert contact.interpenetrates(model, _tcp2passive((-0.7, 0.0, 0.0)))
    assert not contact.interpenetrates(model, _tcp2passive((0.9, 0.0, 0.0)))
    assert contact.interpenetrates(model, _tcp2passive((1.1, 0.0, 0.0)))
    # Seated contacts: the 12 corners of the passive's flat face on the active face.
    contacts = contact.find_contacts(model, seated)
    touching = np.abs(contacts.distances) < 1e-12
    assert touching.sum() == 12
    assert set(contacts.kinds[touching].tolist()) == {contact.ContactKind.FACE_VERTEX.value}
    np.testing.assert_allclose(contacts.normals_passive[touching], [[0.0, 0.0, 1.0]] * 12,
                               atol=1e-12)


def test_the_passive_face_holds_the_whole_marker_board_clear_of_its_chamfer() -> None:
    from orbitree.skills.board_model import sirom_board_model

    board = sirom_board_model()
    centre = board.corners.mean(axis=1, keepdims=True)
    grow = (board.marker_side_m + 2 * board.border_m) / board.marker_side_m
    outline = (centre + (board.corners - centre) * grow).reshape(-1, 3)  # white borders included
    face = geo.sirom_passive().pieces[0]
    on_face = np.isclose(face.vertices[:, 2], 0.0)
    sides = np.deg2rad(np.arange(12) * 30.0)
    reach = (outline[:, :2] @ np.column_stack([np.cos(sides), np.sin(sides)]).T).max()
    # The paper's board reaches 44.7 mm from the centre; the flat face's apothem is 46 mm.
    assert reach == pytest.approx(0.0447, abs=5e-5)
    face_apothem = (face.vertices[on_face, :2] @ np.column_stack([np.cos(sides), np.sin(sides)]).T).max(axis=0)
    np.testing.assert_allclose(face_apothem, geo.PASSIVE_FACE_APOTHEM_M, atol=1e-12)
    assert geo.PASSIVE_FACE_APOTHEM_M - reach > 1e-3
    # every board point is on the flat face (inside all of its side planes at z = 0)
    inside = outline[:, :2] @ np.column_stack([np.cos(sides), np.sin(sides)]).T
    assert inside.max() < geo.PASSIVE_FACE_APOTHEM_M


# --------------------------------------------------------------------- contact and QP


def test_no_contact_gives_zero_wrench_and_real_equals_commanded(model) -> None:
    previous = _in_base(_tcp2passive((4.0, -3.0, 30.0), (1.0, -1.0, 2.0)))
    commanded = _in_base(_tcp2passive((3.0, -2.0, 25.0), (0.5, 0.0, 1.0)))
    result = contact.solve_contact(model, commanded, PASSIVE2BASE, previous)
    np.testing.assert_array_equal(result.real_tcp2base, commanded)
    np.testing.assert_array_equal(result.wrench_tcp, np.zeros(6))
    assert len(result.contacts) == 0 and result.n_active == 0 and result.converged


def test_clear_motion_never_skips_a_motion_that_meets_the_passive_and_clears_one_2mm_above_it(model) -> None:
    # the broad phase the simulated world runs before solve_contact: random steps around the
    # passive, from the free pose before them; whenever it says clear, solve_contact agrees exactly
    rng = np.random.default_rng(7)
    clear = met = 0
    for k in range(300):
        height = rng.uniform(3.0, 14.0) if k % 2 else rng.uniform(14.0, 30.0)  # petal tips 12 mm ahead
        previous = _in_base(_tcp2passive((*rng.uniform(-10.0, 10.0, 2), height), rng.uniform(-3.0, 3.0, 3)))
        if contact._search(model, _in_passive(previous))[1]:
            continue  # not a free start
        step = _tcp2passive((*rng.uniform(-2.0, 2.0, 2), rng.uniform(-3.0, 1.0)), rng.uniform(-1.0, 1.0, 3))
        commanded = previous @ np.linalg.inv(geo.seated_tcp2passive()) @ step
        result = contact.solve_contact(model, commanded, PASSIVE2BASE, previous, previous)
        met += bool(result.wrench_tcp.any())
        if contact.clear_motion(model, commanded, PASSIVE2BASE, previous, previous):
            clear += 1
            np.testing.assert_array_equal(result.real_tcp2base, commanded)
            np.testing.assert_array_equal(result.wrench_tcp, np.zeros(6))
    assert clear > 50 and met > 15, (clear, met)
    # centred, the petal tips 12 mm ahead of the TCP: 15 mm above the face, a 0.5 mm step down is
    # clear; from 13.2 mm (0.2 mm beyond the 1 mm search margin and the step) it is not
    for height_mm, clear in ((15.0, True), (13.2, False)):
        previous = _in_base(_tcp2passive((0.0, 0.0, height_mm)))
        commanded = _in_base(_tcp2passive((0.0, 0.0, height_mm - 0.5)))
        assert contact.clear_motion(model, commanded, PASSIVE2BASE, previous, previous) is clear


@pytest.mark.parametrize("k_z", [2.0e4, 5.0e4])
@pytest.mark.parametrize("depth_mm", [0.5, 2.0])
def test_pressing_straight_in_gives_axial_force_k_z_times_depth_without_penetration(
    depth_mm: float, k_z: float
) -> None:
    model = contact.sirom_contact_model(stiffness=(2e4, 2e4, k_z, 300.0, 300.0, 300.0))
    previous = _in_base(_tcp2passive((0.0, 0.0, 1.0)))
    commanded = _in_base(_tcp2passive((0.0, 0.0, -depth_mm)))
    result = contact.solve_contact(model, commanded, PASSIVE2BASE, previous)
    # Pushing along +z_tcp into the face: the passive pushes back along -z_tcp.
    assert result.wrench_tcp[2] == pytest.approx(-k_z * depth_mm * MM, rel=0.01)
    np.testing.assert_allclose(result.wrench_tcp[[0, 1, 3, 4, 5]], 0.0, atol=1e-6)
    real = _in_passive(result.real_tcp2base)
    np.testing.assert_allclose(real, _tcp2passive(), atol=1e-9)
    assert result.n_active >= 3 and result.converged
    assert _max_overlap(model, real) <= 0.5 * model.tolerance_m


def test_lateral_misalignment_of_3mm_is_pushed_toward_alignment_by_the_chamfer(model) -> None:
    # Petal 0 points along passive +x: a -3 mm offset moves it inward, its tip onto the chamfer.
    commanded, results = _descend(model, (-3.0, 0.0), end_mm=1.5)
    force = _force_in_passive(results[-1], commanded)
    real = _in_passive(results[-1].real_tcp2base)
    assert force[0] > 10.0  # toward +x, i.e. toward the centred pose
    assert force[2] > 10.0  # and back away from the face (passive +z)
    # Frictionless 45 deg chamfer and equal lateral/axial stiffness: |f_x| ~= |f_z|.
    assert force[0] / force[2] == pytest.approx(1.0, rel=0.05)
    assert -2.9 * MM < real[0, 3] < -0.5 * MM  # slid part-way down the chamfer
    assert _max_overlap(model, real) <= 0.5 * model.tolerance_m


def test_lateral_misalignment_of_3mm_pressed_home_seats_against_the_passive_side(model) -> None:
    commanded, results = _descend(model, (-3.0, 0.0))
    force = _force_in_passive(results[-1], commanded)
    real = _in_passive(results[-1].real_tcp2base)
    # The petal ends on the side (0.5 mm clearance): the spring holds the remaining 2.5 mm.
    assert real[0, 3] == pytest.approx(-0.5 * MM, abs=0.01 * MM)
    assert force[0] == pytest.approx(K_DEFAULT[0] * 2.5 * MM, rel=0.02)
    assert abs(real[2, 3]) <= model.tolerance_m  # faces together
    assert all(r.converged for r in results)
    assert _max_overlap(model, real) <= 0.5 * model.tolerance_m


@pytest.mark.parametrize("direction_deg", [0.0, 90.0, 200.0])
def test_chamfers_self_align_a_3mm_misalignment_in_any_direction(model, direction_deg) -> None:
    heading = np.deg2rad(direction_deg)
    offset = 3.0 * np.array([np.cos(heading), np.sin(heading)])
    commanded, results = _descend(model, offset)
    force = _force_in_passive(results[-1], commanded)
    real = _in_passive(results[-1].real_tcp2base)
    unit = np.append(offset / 3.0, 0.0)
    assert force @ unit < -20.0  # the contact force opposes the misalignment
    assert np.linalg.norm(real[:2, 3]) < 1.5 * MM  # the tool moved toward the centre
    assert real[2, 3] < 2.0 * MM  # and the 12 mm petals went in (tilted by the wall forces)
    assert _max_overlap(model, real) <= 0.5 * model.tolerance_m


def test_misalignment_of_15mm_outside_the_chamfers_is_blocked_on_the_face(model) -> None:
    _, results = _descend(model, (-15.0, 0.0))  # petal 0 (along +x) moved 15 mm inward
    result = results[-1]
    real = _in_passive(result.real_tcp2base)
    # Petal 0's tip rests on the passive face: the active face stays ~9.5 mm above it (tilted
    # on that petal, whose 12 mm end in a 2 mm chamfer).
    assert real[2, 3] > 9.0 * MM
    assert result.wrench_tcp[2] < -200.0  # large axial force (k_z = 20 N/mm, ~13 mm short)
    tips = geo.transform_points(real, model.active.pieces[1].vertices)
    assert tips[:, 2].min() >= -model.tolerance_m
    assert _max_overlap(model, real) <= 0.5 * model.tolerance_m


def _pressed_contact_problem(model) -> tuple[np.ndarray, np.ndarray]:
    """A, b with face, wall and chamfer-edge contacts: seated with a 0.5 mm offset, pushed."""
    real = _tcp2passive((-0.4, 0.0, 0.0), (0.0, 0.0, 0.3))
    commanded = _tcp2passive((-3.0, 1.0, -2.0), (0.5, -0.3, 0.8))
    contacts = contact.find_contacts(model, real)
    assert set(contacts.kinds.tolist()) == {kind.value for kind in contact.ContactKind}
    return contact.linearise_contacts(contacts, commanded, real)


def test_qp_solution_satisfies_the_constraints_and_kkt_with_daqp_matching_quadprog(model) -> None:
    a, b = _pressed_contact_problem(model)
    assert len(b) >= 10
    fast = contact.solve_deformation(K_DEFAULT, a, b, "daqp")
    check = contact.solve_deformation(K_DEFAULT, a, b, "quadprog")
    np.testing.assert_allclose(fast.deformation, check.deformation, atol=1e-9)
    for solution in (fast, check):
        e, lam = solution.deformation, solution.multipliers
        slack = a @ e - b
        assert slack.min() >= -1e-12  # primal feasible
        assert lam.min() >= 0.0  # dual feasible
        scale = np.abs(K_DEFAULT * e).max()
        np.testing.assert_allclose(K_DEFAULT * e, a.T @ lam, atol=1e-9 * scale)  # stationarity
        assert np.abs(lam * slack).max() <= 1e-9  # complementary slackness
    assert (fast.multipliers > 0).any()


def test_daqp_and_quadprog_agree_on_random_feasible_contact_qps() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.normal(size=(12, 6))
        b = a @ rng.normal(scale=1e-3, size=6) - rng.uniform(0.0, 1e-3, size=12)
        stiffness = rng.uniform(1e2, 5e4, size=6)
        fast = contact.solve_deformation(stiffness, a, b, "daqp").deformation
        check = contact.solve_deformation(stiffness, a, b, "quadprog").deformation
        np.testing.assert_allclose(fast, check, atol=1e-9)


def test_linearised_rows_predict_contact_distances_to_second_order(model) -> None:
    # A turned commanded frame and a rotated deformation exercise the left Jacobian.
    real = _tcp2passive((0.2, -0.1, 0.3), (0.4, 0.3, 0.2))
    commanded = _tcp2passive((1.0, 0.5, -1.5), (-0.8, 0.6, 3.0))
    contacts = contact.find_contacts(model, real)
    a, b = contact.linearise_contacts(contacts, commanded, real)
    e0 = contact.deformation(commanded, real)
    np.testing.assert_allclose(a @ e0 - b, contacts.distances, atol=1e-15)
    step = np.array([1.0, -0.5, 0.7, 0.0, 0.0, 0.0]) * 1e-6 + np.array([0, 0, 0, 2, -1, 1]) * 1e-5
    moved = contact.find_contacts(model, contact.apply_deformation(commanded, e0 + step))
    assert len(moved) == len(contacts)
    error = (a @ (e0 + step) - b) - moved.distances
    assert np.abs(error).max() < 1e-8  # first-order exact: error ~ |step|^2 * lever


def test_solve_time_of_a_typical_contact_tick_is_printed(model) -> None:
    # Pressed home with the petal against the wall, the command sliding 0.04 mm per tick
    # (5 mm/s at 125 Hz): the steady state the simulator runs while docking.
    previous_cmd = _in_base(_tcp2passive((-1.5, 0.0, -2.0)))
    real = contact.solve_contact(model, previous_cmd, PASSIVE2BASE,
                                 _in_base(_tcp2passive((0.0, 0.0, 1.0)))).real_tcp2base
    times, results = [], []
    for tick in range(1, 101):
        cmd = _in_base(_tcp2passive((-1.5 - 0.04 * tick, 0.0, -2.0)))
        start = time.perf_counter()
        results.append(contact.solve_contact(model, cmd, PASSIVE2BASE, real, previous_cmd))
        times.append(time.perf_counter() - start)
        real, previous_cmd = results[-1].real_tcp2base, cmd
    print(f"\ncontact solve: median {np.median(times) * 1e6:.0f} us, "
          f"max {np.max(times) * 1e6:.0f} us, {results[-1].n_active} contacts active, "
          f"{np.mean([r.iterations for r in results]):.1f} QP solves per tick")
    assert all(r.converged for r in results)


def test_stepping_half_millimetres_toward_seated_converges_with_bounded_force(model) -> None:
    offset, tilt = np.array([-3.0, 0.0]), np.array([1.0, 0.0, 0.0])
    commanded, results = _descend(model, offset, tilt)
    real = results[-1].real_tcp2base
    # Then walk the command back to the seated pose, 0.5 mm (and 0.17 deg) at a time.
    for fraction in np.linspace(5.0 / 6.0, 0.0, 6):
        cmd = _in_base(_tcp2passive((*(fraction * offset), -2.0 * fraction), fraction * tilt))
        results.append(contact.solve_contact(model, cmd, PASSIVE2BASE, real, commanded))
        real, commanded = results[-1].real_tcp2base, cmd
    for _ in range(3):
        results.append(contact.solve_contact(model, commanded, PASSIVE2BASE, real, commanded))
        real = results[-1].real_tcp2base
    forces = [np.linalg.norm(r.wrench_tcp[:3]) for r in results]
    assert max(forces) < 100.0
    assert all(r.converged for r in results)
    np.testing.assert_allclose(_in_passive(real), _tcp2passive(), atol=1e-6)
    np.testing.assert_allclose(results[-1].wrench_tcp, 0.0, atol=1e-3)
    for result in results[::6]:
        assert _max_overlap(model, _in_passive(result.real_tcp2base)) <= 0.5 * model.tolerance_m


# ------------------------------------------------------------------------- input checks


def test_model_rejects_bad_stiffness_and_options() -> None:
    with pytest.raises(ValueError, match="stiffness must be > 0"):
        contact.sirom_contact_model(stiffness=(2e4, 2e4, -1.0, 300.0, 300.0, 300.0))
    with pytest.raises(ValueError, match=r"stiffness must have shape \(6,\)"):
        contact.sirom_contact_model(stiffness=(2e4, 2e4, 2e4))
    with pytest.raises(ValueError, match="margin_m must exceed tolerance_m"):
        contact.sirom_contact_model(margin_m=1e-5)
    with pytest.raises(ValueError, match="solver must be"):
        contact.sirom_contact_model(solver="slsqp")


def test_solve_contact_rejects_bad_poses_and_a_penetrating_start(model) -> None:
    free = _in_base(_tcp2passive((0.0, 0.0, 5.0)))
    with pytest.raises(ValueError, match=r"commanded_tcp2base must have shape \(4, 4\)"):
        contact.solve_contact(model, np.eye(3), PASSIVE2BASE, free)
    with pytest.raises(ValueError, match="passive2base rotation block"):
        contact.solve_contact(model, free, np.diag([2.0, 1.0, 1.0, 1.0]), free)
    sunk = _in_base(_tcp2passive((0.0, 0.0, -1.0)))
    with pytest.raises(ValueError, match="interpenetrates the passive body"):
        contact.solve_contact(model, free, PASSIVE2BASE, sunk)


# ------------------------------------------------------------- the solver's compiled geometry


def test_compiled_interpenetration_matches_the_geometry_function_near_seated(model) -> None:
    """The solver tests a pose for interpenetration with a compiled kernel (all plane distances
    at once, Cyrus-Beck only on the pairs not wholly outside): on poses around seated (1 mm
    aside, -0.5 to 2.5 mm up, 0.5 deg), it must say what ``contact_geometry.interpenetrate``
    says, and its search must find what the interpreted search finds."""
    rng = np.random.default_rng(15)
    verdicts, touching = [], 0
    for _ in range(300):
        pose = _tcp2passive(rng.uniform((-1.0, -1.0, -0.5), (1.0, 1.0, 2.5)), rng.uniform(-0.5, 0.5, 3))
        expected = geo.interpenetrate(model.active, pose, model.passive, model.tolerance_m)
        assert contact._penetrates(model, pose) == expected
        verdicts.append(expected)
        if not expected:
            fresh = contact.find_contacts(model, pose)
            interpreted = kernels.search.py_func(pose[:3, :3], pose[:3, 3], *model.tables.geometry,
                                                 model.tolerance_m, model.margin_m)
            touching += len(fresh) > 0
            np.testing.assert_array_equal(interpreted[0], fresh.kinds)
            np.testing.assert_allclose(interpreted[1], fresh.points_passive, atol=1e-15)
            np.testing.assert_allclose(interpreted[3], fresh.distances, atol=1e-15)
    assert 30 < sum(verdicts) < 270 and touching > 30  # both verdicts, and contacts, exercised
