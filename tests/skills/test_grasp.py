"""Two arms holding one body: the split of their wrenches into the part that moves the body and
the internal squeeze, with numbers; the split's algebra on random wrenches; and the COMPLY-based
correction that nulls a calibration squeeze while keeping a docking pull."""

from __future__ import annotations

import numpy as np
import pytest

from orbitree.skills import grapple as gr
from orbitree.skills import grasp as gp

PADS = np.array([[0.6, 0.0, 0.0], [-0.6, 0.0, 0.0]])  # m from the centre of mass, world axes


def test_a_squeeze_with_a_common_pull_splits_into_the_pull_and_a_5_n_squeeze():
    grasp = gp.make_grasp(PADS)
    wrenches = np.array([[-5.0, 2.0, 0.0, 0.0, 0.0, 0.0], [5.0, 2.0, 0.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(gp.net_wrench(grasp, wrenches), [0.0, 4.0, 0.0, 0.0, 0.0, 0.0], atol=1e-12)
    motion, internal = gp.split_wrenches(grasp, wrenches)
    np.testing.assert_allclose(motion, [[0.0, 2.0, 0.0, 0.0, 0.0, 0.0]] * 2, atol=1e-12)
    np.testing.assert_allclose(internal, [[-5.0, 0, 0, 0, 0, 0], [5.0, 0, 0, 0, 0, 0]], atol=1e-12)
    assert gp.squeeze(grasp, wrenches) == pytest.approx(5.0)  # compression
    assert gp.squeeze(grasp, -wrenches) == pytest.approx(-5.0)  # tension


def test_a_torque_is_made_by_opposite_tangential_forces_and_pad_moments_weighted_by_the_length():
    # minimise |f|² + |m|²/L²: f = τ r / (2 (r² + L²)), m = τ L² / (2 (r² + L²)) per arm
    tau, r, length = 6.0, 0.6, 0.3
    wrenches = gp.distribute(gp.make_grasp(PADS, length), np.array([0, 0, 0, 0, 0, tau]))
    force, moment = tau * r / (2 * (r * r + length**2)), tau * length**2 / (2 * (r * r + length**2))
    np.testing.assert_allclose(wrenches, [[0, force, 0, 0, 0, moment], [0, -force, 0, 0, 0, moment]], atol=1e-12)
    forces_only = gp.distribute(gp.make_grasp(PADS, 0.0), np.array([0, 0, 0, 0, 0, tau]))
    np.testing.assert_allclose(forces_only, [[0, 5.0, 0, 0, 0, 0], [0, -5.0, 0, 0, 0, 0]], atol=1e-12)


def test_the_internal_part_makes_no_net_wrench_and_the_motion_part_none_internal():
    rng = np.random.default_rng(0)
    grasp = gp.make_grasp(rng.normal(0.0, 0.5, (3, 3)), length=0.4)  # three arms too
    for _ in range(20):
        wrenches = rng.normal(0.0, 10.0, (3, 6))
        motion, internal = gp.split_wrenches(grasp, wrenches)
        np.testing.assert_allclose(gp.net_wrench(grasp, internal), np.zeros(6), atol=1e-10)
        np.testing.assert_allclose(gp.net_wrench(grasp, motion), gp.net_wrench(grasp, wrenches), atol=1e-10)
        np.testing.assert_allclose(gp.split_wrenches(grasp, motion)[1], np.zeros((3, 6)), atol=1e-10)
    pads_moments = np.array([[0, 0, 0, 0, 0, 1.0], [0, 0, 0, 0, 0, -1.0]])  # twisting the body between the pads
    np.testing.assert_allclose(gp.split_wrenches(gp.make_grasp(PADS), pads_moments)[1], pads_moments, atol=1e-12)


def test_pads_on_one_face_of_a_gimbal_mounted_body_despin_with_parallel_forces_the_pivot_takes():
    # the seed's pads sit "on either side of the task panel": one face, 0.5 m apart, 0.6 m out
    pads = np.array([[0.6, 0.25, 0.0], [0.6, -0.25, 0.0]])
    torque = np.array([0, 0, 0, 0, 0, 6.0])
    gimbal = gp.distribute(gp.make_grasp(pads, 0.0, mobility=np.hstack([np.zeros((3, 3)), np.eye(3)])), torque)
    np.testing.assert_allclose(np.linalg.norm(gimbal[:, :3], axis=1), 6.0 / (2 * 0.65), atol=1e-12)  # τ/(2|p|)
    np.testing.assert_allclose(np.sum(gimbal[:, :3] * pads, axis=1), 0.0, atol=1e-12)  # ⟂ to each lever arm
    free = gp.distribute(gp.make_grasp(pads, 0.0), torque)  # no pivot: a couple across the 0.5 m between pads
    np.testing.assert_allclose(free[:, :3], [[-12.0, 0, 0], [12.0, 0, 0]], atol=1e-12)


def _pad_rotations() -> np.ndarray:
    """Pad frames (3, 3) to world: z along each pad's outward normal (+x for the first, −x for the second)."""
    first = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    second = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    return np.stack([first, second])


def test_the_integral_correction_nulls_a_calibration_squeeze_and_keeps_the_docking_pull():
    stiffness, dt = 5000.0, 0.028  # N/m per pad (tool to pad), s
    drag = np.array([0.0, -20.0, 0.0])  # N on the body from the docking fixture's guide: the arms must pull +y
    nominal = PADS + np.array([[-0.003, 0.0, 0.0], [0.0, 0.0, 0.0]])  # arm 1 calibrated 3 mm in
    rotations = _pad_rotations()
    params = gr.ComplyParams(gain=(gr.comply_gain(stiffness, dt),) * 3 + (1.0,) * 3)
    states = [gr.ComplyState.zero(), gr.ComplyState.zero()]
    squeezes = []
    for _ in range(50):
        tools = np.array([nominal[i] + rotations[i] @ states[i].offset[:3] for i in range(2)])
        body = (np.sum(tools - PADS, axis=0) + drag / stiffness) / 2  # quasi-static: springs balance the drag
        forces = stiffness * (tools - (body + PADS))
        wrenches = np.concatenate([forces, np.zeros((2, 3))], axis=1)
        grasp = gp.make_grasp(PADS)
        squeezes.append(gp.squeeze(grasp, wrenches))
        errors = gp.internal_comply_errors(grasp, wrenches, rotations)
        states = [gr.comply_step(states[i], errors[i], dt, params) for i in range(2)]
    assert squeezes[0] == pytest.approx(7.5)  # N: 3 mm across two 5 kN/m springs in series
    assert abs(squeezes[-1]) < 1e-6
    np.testing.assert_allclose(forces, [[0.0, 10.0, 0.0], [0.0, 10.0, 0.0]], atol=1e-5)  # the pull is kept
    assert states[0].offset[2] == pytest.approx(0.0015, abs=1e-7)  # each arm backed off half of the 3 mm
    assert states[1].offset[2] == pytest.approx(0.0015, abs=1e-7)


def test_grasp_inputs_are_checked():
    with pytest.raises(ValueError, match=r"points must have shape \(n, 3\) with n >= 2"):
        gp.make_grasp(np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"wrenches must have shape \(2, 6\)"):
        gp.split_wrenches(gp.make_grasp(PADS), np.zeros((3, 6)))
    with pytest.raises(ValueError, match="two contacts"):
        gp.squeeze(gp.make_grasp(np.vstack([PADS, [[0.0, 0.6, 0.0]]])), np.zeros((3, 6)))
