"""orbitree.skills.pbvs: θu convention, interaction matrix, closed loop, twist conversion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

from orbitree.skills import pbvs, se3
from orbitree.skills.gain import AdaptiveGain
from orbitree.skills.rotation_bits import rotvec_of_rotation

MM = 1e-3


def _pose(rotation: Rotation, translation: np.ndarray) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = rotation.as_matrix()
    pose[:3, 3] = translation
    return pose


def _random_pose(rng: np.random.Generator, scale: float = 0.3) -> np.ndarray:
    rotation = Rotation.random(random_state=int(rng.integers(1 << 31)))
    return _pose(rotation, rng.uniform(-scale, scale, 3))


def _hat(twist: np.ndarray) -> np.ndarray:
    """se(3) matrix (4, 4) of a twist [v, ω]."""
    matrix = np.zeros((4, 4))
    matrix[:3, :3] = se3.skew(twist[3:])
    matrix[:3, 3] = twist[:3]
    return matrix


def _exp(twist: np.ndarray, dt: float) -> np.ndarray:
    """SE(3) exponential ``expm(dt · hat(twist))`` in closed form (scipy's expm is slow here)."""
    rotvec = dt * twist[3:]
    theta = float(np.linalg.norm(rotvec))
    cross = se3.skew(rotvec)
    if theta < 1e-8:
        left_jacobian = np.eye(3) + 0.5 * cross
    else:
        left_jacobian = (
            np.eye(3)
            + (1.0 - math.cos(theta)) / theta**2 * cross
            + (theta - math.sin(theta)) / theta**3 * cross @ cross
        )
    return _pose(Rotation.from_rotvec(rotvec), left_jacobian @ (dt * twist[:3]))


def test_closed_form_exponential_matches_expm() -> None:
    rng = np.random.default_rng(0)
    twist = rng.normal(size=6)
    np.testing.assert_allclose(_exp(twist, 0.3), expm(0.3 * _hat(twist)), atol=1e-12)


def _move_camera(board2cam: np.ndarray, twist_cam: np.ndarray, dt: float) -> np.ndarray:
    """The target seen from a camera that held the body twist ``twist_cam`` for ``dt``."""
    # cam_new2world = cam2world · exp(dt ξ)  =>  board2cam_new = exp(−dt ξ) · board2cam
    return _exp(twist_cam, -dt) @ board2cam


# The desired view: the board 0.25 m straight ahead, its z axis facing the camera.
DESIRED = _pose(Rotation.from_euler("x", 180.0, degrees=True), np.array([0.0, 0.0, 0.25]))


def _seed_start() -> np.ndarray:
    """The SIROM paper's example misalignment [SIROM]: (20, 170, 350) mm and (-45, 18, 25) deg roll-pitch-yaw,
    taken as the current camera pose in the desired camera frame (cam2desired)."""
    rpy = Rotation.from_euler("xyz", [-45.0, 18.0, 25.0], degrees=True)  # Rz(y)·Ry(p)·Rx(r)
    cam2desired = _pose(rpy, np.array([20.0, 170.0, 350.0]) * MM)
    return np.linalg.inv(cam2desired) @ DESIRED


# ---------------------------------------------------------------------------- error convention


def test_error_is_zero_at_the_goal() -> None:
    np.testing.assert_allclose(pbvs.pbvs_error(DESIRED, DESIRED), np.zeros(6), atol=1e-15)


def test_theta_u_is_the_rotation_vector_of_cam2desired() -> None:
    # Current camera turned +10 deg about the desired camera's z axis: cam2desired = Rz(10 deg).
    cam2desired = _pose(Rotation.from_euler("z", 10.0, degrees=True), np.zeros(3))
    board2cam = np.linalg.inv(cam2desired) @ DESIRED
    error = pbvs.pbvs_error(board2cam, DESIRED)
    np.testing.assert_allclose(error[3:], [0.0, 0.0, math.radians(10.0)], atol=1e-12)


def test_translation_error_is_current_minus_desired_in_camera_frames() -> None:
    rng = np.random.default_rng(1)
    current, desired = _random_pose(rng), _random_pose(rng)
    error = pbvs.pbvs_error(current, desired)
    np.testing.assert_allclose(error[:3], current[:3, 3] - desired[:3, 3], atol=1e-15)
    cam2desired = Rotation.from_rotvec(error[3:]).as_matrix()
    np.testing.assert_allclose(cam2desired, desired[:3, :3] @ current[:3, :3].T, atol=1e-12)


def test_error_rejects_bad_poses() -> None:
    with pytest.raises(ValueError, match=r"board2cam must have shape \(4, 4\), got \(3, 3\)"):
        pbvs.pbvs_error(np.eye(3), DESIRED)
    with pytest.raises(ValueError, match="board2cam_desired rotation block"):
        pbvs.pbvs_error(DESIRED, np.diag([1.0, 1.0, -1.0, 1.0]))


# ---------------------------------------------------------------------------- interaction


def _l_theta_u_alternative_closed_form(theta_u: np.ndarray) -> np.ndarray:
    """Inverse right Jacobian of SO(3), written with cos/sin instead of sinc."""
    theta = np.linalg.norm(theta_u)
    cross = se3.skew(theta_u)
    quadratic = 1.0 / theta**2 - (1.0 + math.cos(theta)) / (2.0 * theta * math.sin(theta))
    return np.eye(3) + 0.5 * cross + quadratic * cross @ cross


def _l_theta_u_as_printed(theta_u: np.ndarray) -> np.ndarray:
    """As Chaumette & Hutchinson (2006) print it (the SIROM paper [SIROM] uses it), with −(θ/2)[u]×."""
    theta = np.linalg.norm(theta_u)
    u_cross = se3.skew(theta_u / theta)
    sinc = np.sinc(theta / np.pi) / np.sinc(theta / (2.0 * np.pi)) ** 2
    return np.eye(3) - 0.5 * theta * u_cross + (1.0 - sinc) * u_cross @ u_cross


def test_l_theta_u_matches_its_closed_form() -> None:
    rng = np.random.default_rng(2)
    for _ in range(50):
        axis = rng.normal(size=3)
        theta_u = axis / np.linalg.norm(axis) * rng.uniform(1e-3, math.pi - 1e-3)
        np.testing.assert_allclose(
            pbvs.theta_u_interaction(theta_u),
            _l_theta_u_alternative_closed_form(theta_u),
            atol=1e-10,
        )
        # Chaumette's printed form is the transpose ([u]× is antisymmetric, [u]×² symmetric).
        np.testing.assert_allclose(
            pbvs.theta_u_interaction(theta_u).T, _l_theta_u_as_printed(theta_u), atol=1e-10
        )


def test_l_theta_u_small_angle_limit_is_identity_and_continuous() -> None:
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    np.testing.assert_allclose(pbvs.theta_u_interaction(np.zeros(3)), np.eye(3), atol=0.0)
    np.testing.assert_allclose(pbvs.theta_u_interaction(1e-9 * axis), np.eye(3), atol=1e-9)
    # Both sides of the series switch (θ = 1e-4) agree.
    below = pbvs.theta_u_interaction((1e-4 - 1e-12) * axis)
    above = pbvs.theta_u_interaction((1e-4 + 1e-12) * axis)
    np.testing.assert_allclose(below, above, atol=1e-12)
    # First order: I + [θu]×/2.
    theta_u = 1e-3 * axis
    np.testing.assert_allclose(
        pbvs.theta_u_interaction(theta_u), np.eye(3) + 0.5 * se3.skew(theta_u), atol=1e-7
    )


def test_l_theta_u_leaves_theta_u_unchanged() -> None:
    theta_u = np.array([0.4, -1.1, 0.9])
    np.testing.assert_allclose(pbvs.theta_u_interaction(theta_u) @ theta_u, theta_u, atol=1e-12)


def test_interaction_matrix_is_the_error_derivative() -> None:
    # de/dt = L_e · v_c for the camera moving with body twist v_c: this pins the θu sign.
    rng = np.random.default_rng(3)
    dt = 1e-6
    for _ in range(20):
        current, desired, twist = _random_pose(rng), _random_pose(rng), rng.normal(size=6)
        error = pbvs.pbvs_error(current, desired)
        ahead = pbvs.pbvs_error(_move_camera(current, twist, dt), desired)
        behind = pbvs.pbvs_error(_move_camera(current, twist, -dt), desired)
        derivative = (ahead - behind) / (2.0 * dt)
        interaction = pbvs.interaction_matrix(current[:3, 3], error[3:])
        np.testing.assert_allclose(interaction @ twist, derivative, atol=1e-6)


def test_law_is_the_same_with_the_printed_l_theta_u() -> None:
    rng = np.random.default_rng(4)
    error = np.concatenate([rng.normal(size=3), [0.3, -0.7, 1.2]])
    translation = rng.normal(size=3)
    exact = pbvs.interaction_matrix(translation, error[3:])
    printed = exact.copy()
    printed[3:, 3:] = _l_theta_u_as_printed(error[3:])
    law = pbvs.control_law(error, exact, 0.7)
    np.testing.assert_allclose(law, pbvs.control_law(error, printed, 0.7), atol=1e-12)
    np.testing.assert_allclose(law[3:], -0.7 * error[3:], atol=1e-12)
    expected_v = 0.7 * error[:3] - 0.7 * np.cross(translation, error[3:])
    np.testing.assert_allclose(law[:3], expected_v, atol=1e-12)


def test_control_law_rejects_bad_gain() -> None:
    with pytest.raises(ValueError, match="gain must be finite and > 0, got 0"):
        pbvs.control_law(np.ones(6), np.eye(6), 0)


# ---------------------------------------------------------------------------- closed loop


def _servo(
    board2cam: np.ndarray, gain: AdaptiveGain | float, dt: float, max_steps: int
) -> tuple[list[float], list[float]]:
    norms: list[float] = []
    gains: list[float] = []
    for _ in range(max_steps):
        command = pbvs.camera_velocity(board2cam, DESIRED, gain)
        norms.append(command.error_norm)
        gains.append(command.gain)
        if command.error_norm < 1e-3:
            break
        board2cam = _move_camera(board2cam, command.twist, dt)
    return norms, gains


def test_closed_loop_from_the_seed_misalignment_decreases_exponentially() -> None:
    dt = 1.0 / 125.0
    norms, gains = _servo(_seed_start(), AdaptiveGain(1.5, 0.4, 30.0), dt, 5000)
    assert norms[0] > 0.9  # ≈ 0.39 m and ≈ 0.91 rad
    assert norms[-1] < 1e-3, f"did not converge: {norms[-1]:.2e} after {len(norms)} ticks"
    steps = np.diff(norms)
    assert np.all(steps < 0.0), "error norm must decrease at every tick"
    # Per tick the norm shrinks by exp(-λ dt) to second order in dt.
    ratios = np.array(norms[1:]) / np.array(norms[:-1])
    np.testing.assert_allclose(ratios, np.exp(-np.array(gains[:-1]) * dt), atol=2e-4)
    # The adaptive gain starts near λ∞ and ends near λ0.
    assert gains[0] == pytest.approx(0.4, abs=1e-6)
    assert gains[-1] > 1.4
    assert len(norms) * dt < 20.0


def test_closed_loop_with_saturation_still_decreases_monotonically() -> None:
    dt = 1.0 / 125.0
    board2cam = _seed_start()
    norms = []
    for _ in range(20000):
        command = pbvs.camera_velocity(board2cam, DESIRED)
        norms.append(command.error_norm)
        if command.error_norm < 1e-3:
            break
        twist = pbvs.saturate_twist(command.twist, 0.05, math.radians(5.0))
        board2cam = _move_camera(board2cam, twist, dt)
    assert norms[-1] < 1e-3
    assert np.all(np.diff(norms) < 0.0)


def test_infinity_norm_option() -> None:
    command = pbvs.camera_velocity(_seed_start(), DESIRED, AdaptiveGain(), norm="infinity")
    assert command.error_norm == pytest.approx(np.max(np.abs(command.error)))
    with pytest.raises(ValueError, match="norm must be"):
        pbvs.camera_velocity(_seed_start(), DESIRED, norm="l1")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- twists


def test_camera_twist_to_tcp_twist_matches_finite_difference_of_poses() -> None:
    rng = np.random.default_rng(5)
    dt = 1e-6
    for _ in range(20):
        cam2tcp, tcp2base, twist_cam = _random_pose(rng), _random_pose(rng, 1.0), rng.normal(size=6)
        cam2base = tcp2base @ cam2tcp

        tcp2cam = np.linalg.inv(cam2tcp)
        ahead, behind = (cam2base @ _exp(twist_cam, step) @ tcp2cam for step in (dt, -dt))
        linear = (ahead[:3, 3] - behind[:3, 3]) / (2.0 * dt)
        turn = Rotation.from_matrix(ahead[:3, :3] @ behind[:3, :3].T).as_rotvec() / (2.0 * dt)
        twist_base = pbvs.camera_to_tcp_twist(twist_cam, cam2tcp, tcp2base)
        np.testing.assert_allclose(twist_base, np.concatenate([linear, turn]), atol=1e-6)


def test_twist_conversion_round_trip() -> None:
    rng = np.random.default_rng(6)
    for _ in range(20):
        cam2tcp, tcp2base, twist = _random_pose(rng), _random_pose(rng, 1.0), rng.normal(size=6)
        there = pbvs.camera_to_tcp_twist(twist, cam2tcp, tcp2base)
        np.testing.assert_allclose(pbvs.tcp_to_camera_twist(there, cam2tcp, tcp2base), twist)


def test_adjoint_of_a_composition_is_the_product() -> None:
    rng = np.random.default_rng(7)
    a2b, b2c = _random_pose(rng), _random_pose(rng)
    np.testing.assert_allclose(
        se3.adjoint(b2c @ a2b), se3.adjoint(b2c) @ se3.adjoint(a2b), atol=1e-12
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-10.0, 10.0), min_size=6, max_size=6),
    st.floats(1e-3, 5.0),
    st.floats(1e-3, 5.0),
)
def test_saturation_keeps_direction_and_limits(
    values: list[float], max_linear: float, max_angular: float
) -> None:
    twist = np.array(values)
    saturated = pbvs.saturate_twist(twist, max_linear, max_angular)
    assert np.linalg.norm(saturated[:3]) <= max_linear * (1.0 + 1e-12)
    assert np.linalg.norm(saturated[3:]) <= max_angular * (1.0 + 1e-12)
    # Same direction: a non-negative multiple of the input, at most 1.
    factor = float(saturated @ twist) / max(float(twist @ twist), 1e-300)
    assert 0.0 <= factor <= 1.0 + 1e-12
    np.testing.assert_allclose(saturated, factor * twist, atol=1e-12)


def test_saturation_leaves_slow_twists_alone_and_scales_by_the_tighter_limit() -> None:
    slow = np.array([0.01, 0.0, 0.0, 0.0, 0.0, 0.01])
    np.testing.assert_array_equal(pbvs.saturate_twist(slow, 0.1, 0.1), slow)
    fast = np.array([0.3, 0.0, 0.4, 0.0, 0.2, 0.0])  # ‖v‖ = 0.5, ‖ω‖ = 0.2
    saturated = pbvs.saturate_twist(fast, 0.25, 0.15)  # factors 0.5 and 0.75
    np.testing.assert_allclose(saturated, 0.5 * fast)
    assert pbvs.saturate_twist(fast, math.inf, 0.1)[4] == pytest.approx(0.1)
    with pytest.raises(ValueError, match=r"max_linear must be > 0, got 0\.0"):
        pbvs.saturate_twist(fast, 0.0, 1.0)


def test_camera_velocity_is_the_law_with_the_whole_interaction_matrix() -> None:
    """camera_velocity solves the law in closed form; it is control_law on interaction_matrix."""
    rng = np.random.default_rng(15)
    worst = 0.0
    for _ in range(500):
        current, desired = np.eye(4), np.eye(4)
        current[:3, :3] = Rotation.from_rotvec(rng.normal(size=3) * rng.uniform(0.0, 2.5)).as_matrix()
        desired[:3, :3] = Rotation.from_rotvec(rng.normal(size=3) * 0.5).as_matrix()
        current[:3, 3], desired[:3, 3] = rng.normal(size=3), rng.normal(size=3)
        command = pbvs.camera_velocity(current, desired, 0.7)
        interaction = pbvs.interaction_matrix(current[:3, 3], command.error[3:])
        reference = pbvs.control_law(command.error, interaction, 0.7)
        worst = max(worst, float(np.abs(command.twist - reference).max() / np.abs(reference).max()))
    assert worst < 1e-12


def test_camera_velocity_on_floats_is_numpys_closed_form_bit_for_bit():
    # the error and the twist as numpy computes them (subtraction, np.cross, concatenation)
    rng = np.random.default_rng(21)
    for k in range(300):
        board2cam, desired = np.eye(4), np.eye(4)
        board2cam[:3, :3] = Rotation.from_rotvec(rng.normal(0.0, 1e-4 if k % 3 == 0 else 0.8, 3)).as_matrix()
        board2cam[:3, 3] = rng.normal(0.0, 0.3, 3)
        desired[:3, :3] = Rotation.from_rotvec(rng.normal(0.0, 0.3, 3)).as_matrix()
        desired[:3, 3] = rng.normal(0.0, 0.3, 3)
        error = np.concatenate([board2cam[:3, 3] - desired[:3, 3],
                                rotvec_of_rotation(desired[:3, :3] @ board2cam[:3, :3].T)])
        lam = 0.4 + k / 300.0
        twist = np.concatenate([lam * (error[:3] - np.cross(board2cam[:3, 3], error[3:])), -lam * error[3:]])
        command = pbvs.camera_velocity(board2cam, desired, lam)
        assert command.error.tobytes() == error.tobytes()
        assert command.twist.tobytes() == twist.tobytes()
