"""orbitree.skills.kinematics: closed forms, finite differences, seeded random round trips."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills import kinematics as kin
from orbitree.skills import se3

UR_D1, UR_A2, UR_A3, UR_D4, UR_D5, UR_D6 = 0.1807, -0.6127, -0.57155, 0.17415, 0.11985, 0.11655


def _random_pose(rng: np.random.Generator, scale: float = 0.2) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = Rotation.random(random_state=rng.integers(1 << 31)).as_matrix()
    pose[:3, 3] = rng.uniform(-scale, scale, 3)
    return pose


def test_ur10e_fk_at_zero_lies_along_minus_x_with_table_signs() -> None:
    # a2 and a3 are negative in UR's table, so the stretched arm points along -x.
    flange2base = kin.forward_kinematics(kin.UR10E, np.zeros(6))
    expected_position = [UR_A2 + UR_A3, -(UR_D4 + UR_D6), UR_D1 - UR_D5]
    np.testing.assert_allclose(flange2base[:3, 3], expected_position, atol=1e-12)
    np.testing.assert_allclose(flange2base[:3, 3], [-1.18425, -0.2907, 0.06085], atol=1e-12)
    # Flange z (the tool axis) points along base -y at q = 0.
    np.testing.assert_allclose(flange2base[:3, 2], [0.0, -1.0, 0.0], atol=1e-12)


def test_ur10e_table_holds_the_official_numbers() -> None:
    assert kin.UR10E.d == (UR_D1, 0.0, 0.0, UR_D4, UR_D5, UR_D6)
    assert kin.UR10E.a == (0.0, UR_A2, UR_A3, 0.0, 0.0, 0.0)
    np.testing.assert_allclose(kin.UR10E.alpha, np.array([1, 0, 0, 1, -1, 0]) * np.pi / 2)
    np.testing.assert_allclose(
        np.rad2deg(kin.UR10E_MAX_JOINT_SPEED), [120, 120, 180, 180, 180, 180]
    )
    assert not kin.UR10E_MAX_JOINT_SPEED.flags.writeable


def test_kr5_sixx_table_converts_reference_mm_and_degrees_to_si() -> None:
    table = kin.KUKA_KR5_SIXX
    np.testing.assert_allclose(table.d, [0.335, 0.0, 0.0, 0.295, 0.0, 0.080])
    np.testing.assert_allclose(table.a, [0.075, 0.270, 0.090, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(np.rad2deg(table.theta_offset), [0, 0, 90, 0, 180, 0])
    np.testing.assert_allclose(np.rad2deg(table.alpha), [90, 0, 90, 90, 90, 0])
    assert table.beta == (0.0,) * 6
    assert table.hm == (False, True, False, False, False, False)
    assert table.as_array().shape == (6, 5)


def test_link_transform_is_the_documented_product_of_elementary_motions() -> None:
    rng = np.random.default_rng(1)
    for _ in range(10):
        d, theta, a, alpha, beta = rng.uniform(-2.0, 2.0, 5)
        expected = np.eye(4)
        rotation = Rotation.from_euler("z", theta) * Rotation.from_euler("x", alpha)
        expected[:3, :3] = (rotation * Rotation.from_euler("y", beta)).as_matrix()
        expected[:3, 3] = [a * np.cos(theta), a * np.sin(theta), d]
        np.testing.assert_allclose(
            kin.link_transform(d, theta, a, alpha, beta), expected, atol=1e-14
        )


def test_hm_with_zero_beta_equals_dh() -> None:
    rng = np.random.default_rng(2)
    for _ in range(10):
        theta, a, alpha = rng.uniform(-3.0, 3.0, 3)
        np.testing.assert_allclose(
            kin.hm_transform(theta, a, alpha, 0.0), kin.dh_transform(0.0, theta, a, alpha)
        )


def test_hm_beta_tilts_the_next_axis_about_the_link_y_axis() -> None:
    beta = 0.01
    link = kin.hm_transform(0.0, 0.27, 0.0, beta)
    # A nominally parallel next axis (z) leans by beta towards +x of the link frame.
    np.testing.assert_allclose(link[:3, 2], [np.sin(beta), 0.0, np.cos(beta)], atol=1e-15)


def test_dh_table_rejects_inconsistent_input() -> None:
    with pytest.raises(ValueError, match="theta_offset must have 2 entries"):
        kin.DHTable(d=(0.1, 0.0), theta_offset=(0.0,), a=(0.0, 0.0), alpha=(0.0, 0.0))
    with pytest.raises(ValueError, match="Hayati"):
        kin.DHTable(d=(0.1,), theta_offset=(0.0,), a=(0.0,), alpha=(0.0,), hm=(True,))
    with pytest.raises(ValueError, match="beta must be 0"):
        kin.DHTable(d=(0.1,), theta_offset=(0.0,), a=(0.0,), alpha=(0.0,), beta=(0.1,))


def test_fk_checks_shapes_with_clear_messages() -> None:
    with pytest.raises(ValueError, match=r"q must have shape \(6,\), got \(5,\)"):
        kin.forward_kinematics(kin.UR10E, np.zeros(5))
    with pytest.raises(ValueError, match="tool rotation block"):
        kin.forward_kinematics(kin.UR10E, np.zeros(6), tool=np.diag([1.0, 1.0, -1.0, 1.0]))


def test_link_frames_start_at_base_and_end_at_tool() -> None:
    rng = np.random.default_rng(3)
    q = rng.uniform(-np.pi, np.pi, 6)
    tool = _random_pose(rng)
    frames = kin.link_frames(kin.UR10E, q, tool)
    assert frames.shape == (8, 4, 4)
    np.testing.assert_allclose(frames[0], np.eye(4))
    np.testing.assert_allclose(frames[6] @ tool, frames[7])
    np.testing.assert_allclose(kin.forward_kinematics(kin.UR10E, q, tool), frames[7])


@pytest.mark.parametrize("table", [kin.UR10E, kin.KUKA_KR5_SIXX], ids=lambda t: t.name)
def test_jacobian_matches_central_differences_of_fk(table: kin.DHTable) -> None:
    rng = np.random.default_rng(4)
    h = 1e-6
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, 6)
        tool = _random_pose(rng)
        jacobian = kin.geometric_jacobian(table, q, tool)
        numeric = np.empty((6, 6))
        for i in range(6):
            step = np.zeros(6)
            step[i] = h
            plus = kin.forward_kinematics(table, q + step, tool)
            minus = kin.forward_kinematics(table, q - step, tool)
            numeric[:3, i] = (plus[:3, 3] - minus[:3, 3]) / (2 * h)
            turn = Rotation.from_matrix(plus[:3, :3] @ minus[:3, :3].T)
            numeric[3:, i] = turn.as_rotvec() / (2 * h)
        np.testing.assert_allclose(jacobian, numeric, atol=1e-6)


def test_jacobian_with_nonzero_hm_beta_matches_differences() -> None:
    table = kin.DHTable(
        d=kin.KUKA_KR5_SIXX.d,
        theta_offset=kin.KUKA_KR5_SIXX.theta_offset,
        a=kin.KUKA_KR5_SIXX.a,
        alpha=kin.KUKA_KR5_SIXX.alpha,
        beta=(0.0, 0.02, 0.0, 0.0, 0.0, 0.0),
        hm=kin.KUKA_KR5_SIXX.hm,
    )
    q = np.random.default_rng(5).uniform(-2.0, 2.0, 6)
    h = 1e-6
    jacobian = kin.geometric_jacobian(table, q)
    for i in range(6):
        step = np.zeros(6)
        step[i] = h
        plus, minus = (
            kin.forward_kinematics(table, q + step),
            kin.forward_kinematics(table, q - step),
        )
        np.testing.assert_allclose(jacobian[:3, i], (plus - minus)[:3, 3] / (2 * h), atol=1e-6)


def test_pose_and_jacobian_agree_with_separate_calls() -> None:
    q = np.random.default_rng(6).uniform(-3.0, 3.0, 6)
    pose, jacobian = kin.pose_and_jacobian(kin.UR10E, q)
    np.testing.assert_allclose(pose, kin.forward_kinematics(kin.UR10E, q))
    np.testing.assert_allclose(jacobian, kin.geometric_jacobian(kin.UR10E, q))


def test_pose_error_is_zero_for_equal_poses_and_recovers_a_known_offset() -> None:
    rng = np.random.default_rng(7)
    current = _random_pose(rng)
    np.testing.assert_allclose(se3.pose_error(current, current), np.zeros(6), atol=1e-15)
    offset = np.array([0.01, -0.02, 0.03, 0.1, -0.2, 0.05])
    target = np.eye(4)
    target[:3, :3] = Rotation.from_rotvec(offset[3:]).as_matrix() @ current[:3, :3]
    target[:3, 3] = current[:3, 3] + offset[:3]
    np.testing.assert_allclose(se3.pose_error(current, target), offset, atol=1e-12)


def test_dls_without_damping_solves_the_twist_exactly_away_from_singularities() -> None:
    rng = np.random.default_rng(8)
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, 6)
        jacobian = kin.geometric_jacobian(kin.UR10E, q)
        if np.linalg.svd(jacobian, compute_uv=False)[-1] < 0.05:
            continue
        twist = rng.normal(0.0, 0.1, 6)
        qd = kin.dls_joint_velocity(jacobian, twist)
        np.testing.assert_allclose(jacobian @ qd, twist, atol=1e-10)
        # The schedule leaves the solution untouched where sigma_min is above the threshold.
        scheduled = kin.dls_joint_velocity(jacobian, twist, 0.1, singular_threshold=0.05)
        np.testing.assert_allclose(scheduled, qd, atol=1e-12)


def test_dls_bounds_joint_speed_at_a_singularity() -> None:
    q = np.array([0.3, -1.2, 1.5, -0.8, 0.0, 0.4])  # q5 = 0: wrist singularity
    jacobian = kin.geometric_jacobian(kin.UR10E, q)
    assert np.linalg.svd(jacobian, compute_uv=False)[-1] < 1e-12
    twist = np.array([0.0, 0.0, 0.0, 0.3, 0.2, -0.1])
    damping = 0.05
    qd = kin.dls_joint_velocity(jacobian, twist, damping)
    # |qd| <= |twist| / (2 lambda) is the DLS bound.
    assert np.linalg.norm(qd) <= np.linalg.norm(twist) / (2 * damping) + 1e-12
    assert kin.scheduled_damping(0.0, damping, 0.05) == pytest.approx(damping)
    assert kin.scheduled_damping(0.06, damping, 0.05) == 0.0


def test_resolved_rate_tracks_a_commanded_twist_away_from_singularities() -> None:
    q = np.deg2rad([10.0, -80.0, 95.0, -100.0, -85.0, 20.0])
    start = kin.forward_kinematics(kin.UR10E, q)
    twist = np.array([0.05, -0.03, 0.02, 0.0, 0.0, 0.1])
    dt, steps = 0.002, 500  # one second
    for _ in range(steps):
        q, _ = kin.resolved_rate_step(kin.UR10E, q, twist, dt)
    end = kin.forward_kinematics(kin.UR10E, q)
    np.testing.assert_allclose(end[:3, 3] - start[:3, 3], twist[:3], rtol=0, atol=2e-4)
    turned = Rotation.from_matrix(end[:3, :3] @ start[:3, :3].T).as_rotvec()
    np.testing.assert_allclose(turned, twist[3:], atol=2e-4)


def test_resolved_rate_step_scales_joint_speeds_uniformly() -> None:
    q = np.deg2rad([0.0, -90.0, 90.0, -90.0, -90.0, 0.0])
    twist = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 10.0])
    limits = kin.UR10E_MAX_JOINT_SPEED
    _, free = kin.resolved_rate_step(kin.UR10E, q, twist, 0.01)
    _, limited = kin.resolved_rate_step(kin.UR10E, q, twist, 0.01, joint_speed_limits=limits)
    assert np.all(np.abs(limited) <= limits + 1e-12)
    factor = np.max(np.abs(free) / limits)
    np.testing.assert_allclose(limited, free / factor, atol=1e-12)


def test_uniform_scale_keeps_direction_and_reports_the_factor() -> None:
    scaled, factor = kin.uniform_scale(np.array([3.0, -1.0, 0.5]), np.array([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(scaled, [1.0, -1.0 / 3.0, 0.5 / 3.0])
    assert factor == pytest.approx(1.0 / 3.0)
    unchanged, one = kin.uniform_scale(np.array([0.1, 0.2]), 1.0)
    np.testing.assert_array_equal(unchanged, [0.1, 0.2])
    assert one == 1.0
    with pytest.raises(ValueError, match="limits must be > 0"):
        kin.uniform_scale(np.ones(2), 0.0)


def test_inverse_kinematics_round_trips_seeded_random_configurations() -> None:
    rng = np.random.default_rng(9)
    tool = _random_pose(rng, scale=0.1)
    for _ in range(10):
        q_true = rng.uniform(-np.pi, np.pi, 6)
        target = kin.forward_kinematics(kin.UR10E, q_true, tool)
        q_start = q_true + rng.normal(0.0, 0.1, 6)
        q, converged = kin.inverse_kinematics(kin.UR10E, target, q_start, tool)
        assert converged
        np.testing.assert_allclose(kin.forward_kinematics(kin.UR10E, q, tool), target, atol=1e-8)


def test_inverse_kinematics_reports_an_unreachable_pose() -> None:
    target = np.eye(4)
    target[:3, 3] = [3.0, 0.0, 0.0]  # beyond the 1.3 m reach
    _, converged = kin.inverse_kinematics(kin.UR10E, target, np.deg2rad([0, -90, 90, -90, -90, 0]))
    assert not converged


def test_trapezoid_profile_durations_follow_the_closed_forms() -> None:
    # Trapezoid: 1 m at 0.5 m/s, 1 m/s^2: ramps of 0.5 s (0.125 m each) and 1.5 s cruise.
    profile = kin.TrapezoidProfile(1.0, 0.5, 1.0)
    assert profile.duration == pytest.approx(2.5)
    assert profile.fraction(0.5) == pytest.approx(0.125)
    assert profile.fraction(1.25) == pytest.approx(0.5)
    assert profile.fraction(2.0) == pytest.approx(0.875)
    # Triangle: 0.04 m cannot reach 0.5 m/s at 1 m/s^2; peak sqrt(d a) = 0.2 m/s, 0.4 s in all.
    short = kin.TrapezoidProfile(0.04, 0.5, 1.0)
    assert short.peak == pytest.approx(0.2)
    assert short.duration == pytest.approx(0.4)
    assert kin.TrapezoidProfile(0.0, 0.5, 1.0).duration == 0.0


def test_trapezoid_profile_is_monotonic_continuous_and_within_its_speed() -> None:
    profile = kin.TrapezoidProfile(0.7, 0.3, 1.2)
    times = np.linspace(-0.1, profile.duration + 0.1, 4001)
    fractions = np.array([profile.fraction(t) for t in times])
    assert fractions[0] == 0.0 and fractions[-1] == 1.0
    assert np.all(np.diff(fractions) >= 0.0)
    speeds = np.diff(fractions) * profile.distance / np.diff(times)
    assert speeds.max() <= 0.3 + 1e-9
    with pytest.raises(ValueError, match="speed > 0"):
        kin.TrapezoidProfile(1.0, 0.0, 1.0)


def test_uniform_scale_scalar_limit_matches_the_per_joint_limit_bit_for_bit() -> None:
    # the scalar limit runs on Python floats; a (n,) array of the same limit runs on numpy
    rng = np.random.default_rng(11)
    for values in rng.normal(size=(300, 6)) * 10.0 ** rng.uniform(-3, 1, (300, 1)):
        limit = float(rng.uniform(0.01, 2.0))
        scaled, factor = kin.uniform_scale(values, limit)
        expected, expected_factor = kin.uniform_scale(values, np.full(6, limit))
        assert factor == expected_factor and np.array_equal(scaled, expected)
        assert np.max(np.abs(scaled)) <= limit * (1.0 + 1e-15)
    with pytest.raises(ValueError, match="limits must be > 0"):
        kin.uniform_scale(np.ones(6), 0.0)
