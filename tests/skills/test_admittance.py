"""orbitree.skills.admittance: step responses, dead band, joint form vs Cartesian, UR10e inertia."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills import admittance as adm
from orbitree.skills import kinematics as kin
from orbitree.skills import se3
from orbitree.skills.admittance import UR_ADMITTANCE, AdmittanceParams

DT = 0.002  # 500 Hz, the e-Series RTDE rate
Q_GENERIC = np.array([0.3, -1.2, 1.6, -1.9, -1.5, 0.4])  # a docking-like, non-singular posture


def _tool() -> np.ndarray:
    tool = np.eye(4)
    tool[:3, 3] = [0.0, 0.0, 0.18]  # SIROM-sized tool
    return tool


def _run(
    wrench: np.ndarray, seconds: float, params: AdmittanceParams = UR_ADMITTANCE
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    twist, offset = np.zeros(6), np.zeros(6)
    history = []
    for _ in range(round(seconds / DT)):
        twist, offset = adm.admittance_step(wrench, twist, offset, DT, params)
        history.append(twist)
    return twist, offset, history


def test_defaults_are_the_urscript_example() -> None:
    assert UR_ADMITTANCE.mass == pytest.approx(tuple(0.5 * v for v in (22.5,) * 3 + (1.0,) * 3))
    assert UR_ADMITTANCE.damping == pytest.approx(tuple(0.5 * v for v in (25.0,) * 3 + (2.0,) * 3))
    assert UR_ADMITTANCE.stiffness == (0.0,) * 6
    assert (UR_ADMITTANCE.force_dead_band, UR_ADMITTANCE.torque_dead_band) == (3.0, 0.2)


def test_constant_force_converges_to_force_over_damping() -> None:
    wrench = np.array([10.0, 0.0, -20.0, 0.0, 0.0, 0.5])
    twist, _, history = _run(wrench, 15.0)
    np.testing.assert_allclose(twist, wrench / np.asarray(UR_ADMITTANCE.damping), rtol=1e-5)
    # And follows the first-order response F/D (1 − exp(−t D / M)) on the way.
    t = DT * np.arange(1, len(history) + 1)
    tau = 11.25 / 12.5
    expected = (-20.0 / 12.5) * (1.0 - np.exp(-t / tau))
    np.testing.assert_allclose(np.array(history)[:, 2], expected, atol=3e-3)


def test_constant_force_with_stiffness_converges_to_force_over_stiffness() -> None:
    params = AdmittanceParams(stiffness=(200.0, 200.0, 200.0, 5.0, 5.0, 5.0))
    wrench = np.array([0.0, 8.0, 6.0, 0.3, 0.0, 0.0])
    twist, offset, _ = _run(wrench, 30.0, params)
    np.testing.assert_allclose(offset, wrench / np.asarray(params.stiffness), rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(twist, np.zeros(6), atol=1e-6)


def test_target_wrench_is_subtracted() -> None:
    params = AdmittanceParams(target_wrench=(0.0, 0.0, 10.0, 0.0, 0.0, 0.0))
    twist, _, _ = _run(np.array([0.0, 0.0, 10.0, 0.0, 0.0, 0.0]), 5.0, params)
    np.testing.assert_allclose(twist, np.zeros(6), atol=1e-15)


def test_dead_band_gives_no_motion_below_the_threshold() -> None:
    small = np.array([1.7, -1.7, 1.7, 0.1, 0.1, -0.1])  # ‖f‖ = 2.94 N, ‖τ‖ = 0.17 N·m
    twist, offset, _ = _run(small, 5.0)
    np.testing.assert_array_equal(twist, np.zeros(6))
    np.testing.assert_array_equal(offset, np.zeros(6))
    # Just above each band, the reading passes unchanged.
    np.testing.assert_array_equal(adm.apply_dead_band([3.01, 0, 0, 0, 0, 0]), [3.01, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(adm.apply_dead_band([0, 0, 0, 0, 0.21, 0]), [0, 0, 0, 0, 0.21, 0])
    # The two bands are independent.
    np.testing.assert_array_equal(adm.apply_dead_band([5, 0, 0, 0.1, 0, 0]), [5, 0, 0, 0, 0, 0])


def test_motion_decays_when_the_force_goes_away() -> None:
    twist, offset = np.array([0.05, 0.0, 0.0, 0.0, 0.1, 0.0]), np.zeros(6)
    for _ in range(round(10.0 / DT)):
        twist, offset = adm.admittance_step(np.zeros(6), twist, offset, DT)
    np.testing.assert_allclose(twist, np.zeros(6), atol=1e-5)


def test_step_is_stable_for_a_huge_dt() -> None:
    params = AdmittanceParams(stiffness=(1e4,) * 6)
    twist, offset = np.ones(6), np.zeros(6)
    for _ in range(50):
        twist, offset = adm.admittance_step(np.zeros(6), twist, offset, 1.0, params)
    assert np.all(np.abs(twist) < 1.0) and np.all(np.abs(offset) < 1.0)


def test_wrench_to_base_rotates_force_and_torque() -> None:
    tcp2base = np.eye(4)
    tcp2base[:3, :3] = Rotation.from_euler("z", 90, degrees=True).as_matrix()
    tcp2base[:3, 3] = [1.0, 2.0, 3.0]  # the point stays the TCP: no moment arm
    wrench = se3.wrench_tcp_to_base(np.array([1.0, 0, 0, 0, 2.0, 0]), tcp2base)
    np.testing.assert_allclose(wrench, [0, 1.0, 0, -2.0, 0, 0], atol=1e-15)


# ---------------------------------------------------------------------------- joint form


def _cartesian_mass() -> np.ndarray:
    return np.diag(UR_ADMITTANCE.mass)


def test_joint_form_reduces_to_the_cartesian_one_with_ur10e_jacobian() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = Q_GENERIC + rng.uniform(-0.3, 0.3, 6)
        jacobian = kin.geometric_jacobian(kin.UR10E, q, _tool())
        inertia = jacobian.T @ _cartesian_mass() @ jacobian
        wrench = rng.normal(size=6) * [10, 10, 10, 1, 1, 1]
        qdd = adm.joint_acceleration(jacobian, inertia, wrench)
        np.testing.assert_allclose(
            jacobian @ qdd, wrench / np.asarray(UR_ADMITTANCE.mass), rtol=1e-6, atol=1e-9
        )


def test_joint_step_matches_cartesian_step_with_matched_damping() -> None:
    rng = np.random.default_rng(1)
    q = Q_GENERIC
    jacobian = kin.geometric_jacobian(kin.UR10E, q, _tool())
    inertia = jacobian.T @ _cartesian_mass() @ jacobian
    joint_damping = jacobian.T @ np.diag(UR_ADMITTANCE.damping) @ jacobian
    qd = rng.normal(size=6) * 0.05
    wrench = np.array([5.0, -4.0, 12.0, 0.3, -0.4, 0.25])  # above both dead bands
    qd_new = adm.joint_admittance_step(jacobian, inertia, wrench, qd, DT, joint_damping)
    twist_new, _ = adm.admittance_step(wrench, jacobian @ qd, np.zeros(6), DT)
    np.testing.assert_allclose(jacobian @ qd_new, twist_new, rtol=1e-6, atol=1e-10)


def test_undamped_joint_step_is_explicit_in_the_force() -> None:
    jacobian = kin.geometric_jacobian(kin.UR10E, Q_GENERIC)
    inertia = adm.ur10e_joint_inertia(Q_GENERIC)
    wrench = np.array([0.0, 0.0, 20.0, 0.0, 0.0, 0.0])
    qd_new = adm.joint_admittance_step(jacobian, inertia, wrench, np.zeros(6), DT)
    np.testing.assert_allclose(qd_new, DT * adm.joint_acceleration(jacobian, inertia, wrench))
    diagonal = adm.joint_admittance_step(jacobian, inertia, wrench, np.zeros(6), DT, np.ones(6))
    full = adm.joint_admittance_step(jacobian, inertia, wrench, np.zeros(6), DT, np.eye(6))
    np.testing.assert_allclose(diagonal, full)


def test_ur10e_inertia_is_symmetric_positive_definite_everywhere() -> None:
    rng = np.random.default_rng(2)
    postures = [np.zeros(6), np.array([0, -np.pi / 2, 0, -np.pi / 2, 0, 0])]
    postures += [rng.uniform(-np.pi, np.pi, 6) for _ in range(20)]
    for q in postures:
        inertia = adm.ur10e_joint_inertia(q, payload_mass=5.0, payload_com=[0, 0, 0.1])
        np.testing.assert_allclose(inertia, inertia.T, atol=1e-12)
        assert np.linalg.eigvalsh(inertia).min() >= min(adm.UR10E_ARMATURE) - 1e-9


def test_ur10e_inertia_gives_the_point_mass_kinetic_energy() -> None:
    # ½ q̇ᵀ H q̇ = Σ ½ m |ṗ_com|² + ½ q̇ᵀ diag(armature) q̇, ṗ by finite differences of FK.
    rng = np.random.default_rng(3)
    q, qd, h = rng.uniform(-np.pi, np.pi, 6), rng.normal(size=6), 1e-6
    payload_com = np.array([0.01, -0.02, 0.12])

    def centres(joints: np.ndarray) -> np.ndarray:
        frames = kin.link_frames(kin.UR10E, joints)
        links = [(i + 1, np.asarray(c)) for i, c in enumerate(adm.UR10E_LINK_COM)]
        links.append((6, payload_com))
        return np.array([frames[i, :3, :3] @ c + frames[i, :3, 3] for i, c in links])

    velocities = (centres(q + h * qd) - centres(q - h * qd)) / (2 * h)
    masses = np.array([*adm.UR10E_LINK_MASS, 4.0])
    expected = 0.5 * np.sum(masses * np.sum(velocities**2, axis=1))
    expected += 0.5 * qd @ np.diag(adm.UR10E_ARMATURE) @ qd
    inertia = adm.ur10e_joint_inertia(q, payload_mass=4.0, payload_com=payload_com)
    assert 0.5 * qd @ inertia @ qd == pytest.approx(expected, rel=1e-7)


# ---------------------------------------------------------------------------- input checks


def test_parameters_and_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="mass must be > 0 on every axis"):
        AdmittanceParams(mass=(1, 1, 1, 1, 1, 0))
    with pytest.raises(ValueError, match="damping must be >= 0"):
        AdmittanceParams(damping=(1, 1, 1, 1, 1, -1))
    with pytest.raises(ValueError, match="stiffness must be 6 finite numbers"):
        AdmittanceParams(stiffness=(1, 1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="force_dead_band must be finite and >= 0, got -1"):
        AdmittanceParams(force_dead_band=-1)
    with pytest.raises(ValueError, match=r"twist must have shape \(6,\), got \(3,\)"):
        adm.admittance_step(np.zeros(6), np.zeros(3), np.zeros(6), DT)
    with pytest.raises(ValueError, match="dt must be finite and > 0, got 0"):
        adm.admittance_step(np.zeros(6), np.zeros(6), np.zeros(6), 0)
    with pytest.raises(ValueError, match=r"joint_inertia must be a finite \(6, 6\) matrix"):
        adm.joint_acceleration(np.zeros((6, 6)), np.eye(5), np.zeros(6))
    with pytest.raises(ValueError, match="joint_inertia must be symmetric"):
        adm.joint_acceleration(np.zeros((6, 6)), np.triu(np.ones((6, 6))), np.zeros(6))
    with pytest.raises(ValueError, match="joint_damping must be finite"):
        adm.joint_admittance_step(
            np.zeros((6, 6)), np.eye(6), np.zeros(6), np.zeros(6), DT, np.ones(5)
        )
