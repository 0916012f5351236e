"""orbitree.skills.circle_point: fits, Plücker lines, each geometric case of the link parameters
against hand-built axes, the measurement simulator, and the identification of [CirclePoint]'s
KUKA KR5 sixx (Table 3: noise-free, the nominal parameters come back)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills import circle_point as cp
from orbitree.skills.kinematics import KUKA_KR5_SIXX, DHTable, link_frames

DEG = np.pi / 180.0

# Table 2 of the thesis, in SI
TABLE2 = cp.Measurement(
    table=KUKA_KR5_SIXX,
    q0=np.array([15, 0, 0, 0, 0, 0]) * DEG,
    swept=np.array([45, 80, 100, 50, 200, 300]) * DEG,
    points=(15, 20, 30, 15, 25, 30),
    reflector=np.array([[100, 0, 0], [200, 0, 0], [0, 50, 0], [20, 0, 0], [0, 80, 0], [0, 60, 0]]) * 1e-3,
    robot2tracker=np.eye(4),
    noise_a=5e-6,
    noise_b=0.3e-6,
)


def _pose(rotvec_deg, xyz) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = Rotation.from_rotvec(np.deg2rad(rotvec_deg)).as_matrix()
    out[:3, 3] = xyz
    return out


def _noise_free_error(measurement: cp.Measurement) -> dict[str, float]:
    identified = cp.identify_measurement(measurement, cp.simulate(measurement, None))
    nominal = cp.nominal_parameters(measurement.table)
    return {name: abs(float(identified[name][0]) - nominal[name]) for name in nominal}


# ----------------------------------------------------------------------------------- Table 3


def test_noise_free_the_identified_kr5_parameters_equal_the_nominal_ones_to_1e_9():
    errors = _noise_free_error(TABLE2)
    assert len(errors) == 30 and list(errors) == list(cp.parameter_names(6))
    assert max(errors.values()) < 1e-9, {k: v for k, v in errors.items() if v >= 1e-9}


@pytest.mark.parametrize("robot2tracker", [
    _pose([0, 0, 180], [2.0, 0.5, -0.3]),
    _pose([10, -20, 35], [-1.2, 3.0, 0.8]),
], ids=["tracker-turned-about-z", "tracker-anywhere"])
def test_noise_free_identification_holds_for_any_robot_to_tracker_transform(robot2tracker):
    errors = _noise_free_error(dataclasses.replace(TABLE2, robot2tracker=robot2tracker))
    assert max(errors.values()) < 1e-9


def test_noise_free_identification_holds_from_other_start_joints_and_negative_sweeps():
    moved = dataclasses.replace(TABLE2, q0=np.array([-40, 20, -35, 70, 30, -90]) * DEG,
                                swept=np.array([-45, 80, -100, 50, -200, 300]) * DEG)
    assert max(_noise_free_error(moved).values()) < 1e-9


def test_a_tilted_and_shifted_kr5_is_identified_exactly_beta_included():
    # a real arm differs from its nominal table; the method must return the real parameters
    real = DHTable(d=(0.3352, 0.0, 0.0004, 0.2947, -0.0003, 0.08),
                   theta_offset=np.deg2rad([0.3, -0.2, 90.1, 0.4, 179.8, 0]),
                   a=(0.0748, 0.2703, 0.0898, 0.0006, -0.0002, 0.0),
                   alpha=np.deg2rad([90.2, 0.05, 89.9, 90.3, 89.7, 0]),
                   beta=(0.0, np.deg2rad(0.15), 0.0, 0.0, 0.0, 0.0), hm=KUKA_KR5_SIXX.hm)
    measured = dataclasses.replace(TABLE2, table=real)
    identified = cp.identify(
        [cp.fit_axis(p, towards=z) for p, z in zip(cp.simulate(measured, None),
                                                  cp.nominal_axes(KUKA_KR5_SIXX, measured.q_final, np.eye(4))[0],
                                                  strict=True)],
        KUKA_KR5_SIXX, measured.q_final, np.eye(4))  # the nominal table only says what to identify
    truth = cp.nominal_parameters(real)  # its last link and d2 are the nominal ones
    worst = max(abs(float(identified[n][0]) - truth[n]) for n in truth)
    assert worst < 1e-9
    assert identified["beta2"][0] == pytest.approx(0.15, abs=1e-9)


# ----------------------------------------------------------------------------------- fits


def _arc(centre, normal, radius, start_deg, sweep_deg, count):
    normal = np.asarray(normal, float) / np.linalg.norm(normal)
    u = np.cross(normal, [1.0, 0, 0] if abs(normal[0]) < 0.9 else [0, 1.0, 0])
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)
    turn = np.deg2rad(start_deg + np.linspace(0, sweep_deg, count))
    return np.asarray(centre) + radius * (np.cos(turn)[:, None] * u + np.sin(turn)[:, None] * v)


def test_plane_and_circle_fits_recover_an_exact_short_arc():
    points = _arc([0.3, -0.2, 0.5], [0.2, 0.3, 0.9], 0.02, 10, 40, 8)
    axis = cp.fit_axis(points[None], towards=np.array([0.0, 0.0, 1.0]))
    np.testing.assert_allclose(axis.direction[0], np.array([0.2, 0.3, 0.9]) / np.linalg.norm([0.2, 0.3, 0.9]),
                               atol=1e-13)
    np.testing.assert_allclose(axis.centre[0], [0.3, -0.2, 0.5], atol=1e-13)
    assert axis.radius[0] == pytest.approx(0.02, abs=1e-14)
    np.testing.assert_allclose(axis.moment[0], np.cross(axis.centre[0], axis.direction[0]), atol=1e-15)


def test_gauss_newton_lowers_the_geometric_residuals_of_the_algebraic_start_on_short_noisy_arcs():
    rng = np.random.default_rng(0)
    exact = _arc([0, 0, 0], [0, 0, 1], 0.05, 0, 30, 12)
    points = exact + rng.normal(scale=20e-6, size=(2000, *exact.shape))
    centroid, normal = cp.fit_plane(points)

    def cost(centre, radius):
        offset = points - centre[:, None, :]
        in_plane = offset - np.einsum("bni,bi->bn", offset, normal)[..., None] * normal[:, None, :]
        return ((np.linalg.norm(in_plane, axis=-1) - radius[:, None]) ** 2).sum(axis=-1)

    kasa = cost(*cp.fit_circle(points, centroid, normal, steps=0))
    geometric = cost(*cp.fit_circle(points, centroid, normal))
    assert np.all(geometric <= kasa * (1 + 1e-12))
    assert np.mean(geometric) < (1 - 1e-4) * np.mean(kasa)


def test_fits_run_on_a_batch_as_one_by_one():
    rng = np.random.default_rng(1)
    points = _arc([0.1, 0.2, 0.3], [1, 0, 0.2], 0.1, 0, 80, 20) + rng.normal(scale=1e-5, size=(5, 20, 3))
    batch = cp.fit_axis(points, towards=np.array([1.0, 0, 0]))
    for i in range(5):
        one = cp.fit_axis(points[i:i + 1], towards=np.array([1.0, 0, 0]))
        np.testing.assert_allclose(one.centre[0], batch.centre[i], atol=1e-15)
        np.testing.assert_allclose(one.direction[0], batch.direction[i], atol=1e-15)


# ----------------------------------------------------------------------------------- geometric cases


def _line(direction, point):
    return cp.plucker(np.asarray(direction, float), np.asarray(point, float))


def _link(line_j, line_k, *, hayati, theta0_deg=0.0, d_nominal=0.0):
    """The link from axis j = z through the origin (previous frame: the identity) to axis k, all
    turned by theta0 about z so that theta must come out as theta0."""
    turn = Rotation.from_euler("z", theta0_deg, degrees=True).as_matrix()
    (s_j, m_j), (s_k, m_k) = [(turn @ s, turn @ m) for s, m in (line_j, line_k)]
    x_nominal = turn @ np.array([1.0, 0.0, 0.0])
    link = cp.link_from_axes(s_j[None], m_j[None], s_k[None], m_k[None], np.zeros((1, 3)),
                             np.array([[1.0, 0.0, 0.0]]), x_nominal, hayati=hayati, d_nominal=d_nominal)
    return {k: float(np.squeeze(v)) for k, v in link._asdict().items() if k in cp.KINDS}


Z_AXIS = _line([0, 0, 1], [0, 0, 0])


def test_skew_axes_give_the_common_normal_d_a_alpha_and_no_beta():
    # axis k: through (a, 0, d) = (0.27, 0, 0.12), along Rx(35 deg) z = (0, -sin 35, cos 35)
    alpha = 35 * DEG
    k = _line([0, -np.sin(alpha), np.cos(alpha)], [0.27, 0, 0.12])
    assert cp.line_relation(*Z_AXIS, *k) == "skew"
    link = _link(Z_AXIS, k, hayati=False, theta0_deg=25)
    assert link == pytest.approx({"d": 0.12, "theta": 25 * DEG, "a": 0.27, "alpha": alpha, "beta": 0.0}, abs=1e-12)


def test_intersecting_axes_give_a_zero_and_the_crossing_point_as_d():
    # axis k crosses axis j at z = 0.295, at 90 deg: the wrist of the KR5
    k = _line([0, -1, 0], [0, 0.4, 0.295])
    assert cp.line_relation(*Z_AXIS, *k) == "intersecting"
    link = _link(Z_AXIS, k, hayati=False, theta0_deg=-60)
    assert link == pytest.approx({"d": 0.295, "theta": -60 * DEG, "a": 0.0, "alpha": 90 * DEG, "beta": 0.0},
                                 abs=1e-12)


def test_parallel_axes_give_beta_zero_with_hayati_and_the_normal_at_nominal_d_with_dh():
    k = _line([0, 0, 1], [0.27, 0, -0.4])  # parallel, 270 mm apart: the KR5's axes 2 and 3
    assert cp.line_relation(*Z_AXIS, *k) == "parallel"
    expected = {"d": 0.0, "theta": 30 * DEG, "a": 0.27, "alpha": 0.0, "beta": 0.0}
    assert _link(Z_AXIS, k, hayati=True, theta0_deg=30) == pytest.approx(expected, abs=1e-12)
    dh = _link(Z_AXIS, k, hayati=False, theta0_deg=30, d_nominal=0.05)  # no unique normal: d stays nominal
    assert dh == pytest.approx(expected | {"d": 0.05}, abs=1e-12)


def test_nearly_parallel_axes_give_hayati_beta_where_dh_d_runs_away():
    # HM with d = 0: axis k crosses the plane z = 0 at (a, 0, 0), along Rx(alpha) Ry(beta) z
    alpha, beta, a = 0.2 * DEG, 0.5 * DEG, 0.27
    direction = [np.sin(beta), -np.sin(alpha) * np.cos(beta), np.cos(alpha) * np.cos(beta)]
    k = _line(direction, [a, 0, 0])
    assert cp.line_relation(*Z_AXIS, *k) == "nearly parallel"
    link = _link(Z_AXIS, k, hayati=True, theta0_deg=-15)
    assert link == pytest.approx({"d": 0.0, "theta": -15 * DEG, "a": a, "alpha": alpha, "beta": beta}, abs=1e-12)
    # DH's common normal of the same two lines sits tens of centimetres away along the axis
    assert abs(_link(Z_AXIS, k, hayati=False)["d"]) > 10 * a


def test_line_relation_tells_coincident_from_parallel():
    assert cp.line_relation(*Z_AXIS, *_line([0, 0, -1], [0, 0, 2.0])) == "coincident"
    assert cp.line_relation(*Z_AXIS, *_line([0, 0, 1], [1e-3, 0, 0])) == "parallel"


def test_the_model_check_asks_for_hayati_on_parallel_axes_and_refuses_it_on_perpendicular_ones():
    dh_only = dataclasses.replace(KUKA_KR5_SIXX, beta=(0.0,) * 6, hm=(False,) * 6)
    problems = cp.check_model(dh_only, np.zeros(6))
    assert [i for i, _ in problems] == [1] and "parallel" in problems[0][1]
    hm_first = DHTable(d=(0.0, 0.0, 0.0, 0.295, 0.0, 0.08), theta_offset=KUKA_KR5_SIXX.theta_offset,
                       a=KUKA_KR5_SIXX.a, alpha=KUKA_KR5_SIXX.alpha, hm=(True, True, False, False, False, False))
    assert [i for i, _ in cp.check_model(hm_first, np.zeros(6))] == [0]
    assert cp.check_model(KUKA_KR5_SIXX, TABLE2.q_final) == []


# ----------------------------------------------------------------------------------- the simulator


def test_exact_points_lie_on_circles_about_the_nominal_axes_at_the_reflector_radius():
    points = cp.simulate(TABLE2, None)
    frames = link_frames(KUKA_KR5_SIXX, TABLE2.q_final)
    for j, p in enumerate(points):
        assert p.shape == (1, TABLE2.points[j], 3)
        axis, origin = frames[j][:3, 2], frames[j][:3, 3]
        radial = (p[0] - origin) - np.outer((p[0] - origin) @ axis, axis)
        np.testing.assert_allclose(np.linalg.norm(radial, axis=1), np.hypot(*TABLE2.reflector[j][:2]), atol=1e-12)
        np.testing.assert_allclose((p[0] - origin) @ axis, TABLE2.reflector[j][2], atol=1e-12)
    # the sweep: first and last stop turned by the angle swept about the axis
    first, last = points[4][0, 0] - frames[4][:3, 3], points[4][0, -1] - frames[4][:3, 3]
    cosine = first @ last / (np.linalg.norm(first) * np.linalg.norm(last))
    assert np.degrees(np.arccos(cosine)) == pytest.approx(360 - 200, abs=1e-9)


def test_tracker_noise_is_a_plus_b_times_the_distance_per_coordinate():
    far = np.eye(4)
    far[:3, 3] = [10.0, 0.0, 0.0]  # 10 m away: sigma = 5 um + 0.3 um/m * ~10 m = ~8 um
    measurement = dataclasses.replace(TABLE2, robot2tracker=far)
    exact = cp.simulate(measurement, None)
    noisy = cp.simulate(measurement, np.random.default_rng(2), batch=4000)
    for e, n in zip(exact, noisy, strict=True):
        expected = 5e-6 + 0.3e-6 * np.linalg.norm(e[0], axis=1)
        measured = (n - e).std(axis=0)  # (points, 3): per point and coordinate
        np.testing.assert_allclose(measured, np.broadcast_to(expected[:, None], measured.shape), rtol=0.06)
    assert np.mean(expected) == pytest.approx(8e-6, rel=0.05)


def _errors(joint: int, term: str, amplitude: float, jitter: float = 0.0, phase: float = 0.0) -> cp.JointErrors:
    values = {name: np.zeros((6, 5)) for name in ("amplitude", "jitter", "phase")}
    k = cp.ERROR_TERMS.index(term)
    values["amplitude"][joint, k], values["jitter"][joint, k], values["phase"][joint, k] = amplitude, jitter, phase
    return cp.JointErrors(values["amplitude"], np.full((6, 5), 2 * np.pi), values["phase"], values["jitter"])


def test_an_axial_error_motion_moves_the_points_along_the_axis_by_a_sin_q_plus_phase():
    errors = _errors(joint=1, term="dz", amplitude=50e-6, phase=0.3)
    moved = cp.simulate(dataclasses.replace(TABLE2, errors=errors), None)
    exact = cp.simulate(TABLE2, None)
    axis = link_frames(KUKA_KR5_SIXX, TABLE2.q_final)[1][:3, 2]
    shift = (moved[1][0] - exact[1][0]) @ axis
    np.testing.assert_allclose(shift, 50e-6 * np.sin(TABLE2.stops(1) + 0.3), atol=1e-15)
    np.testing.assert_allclose(moved[0], exact[0], atol=0)  # joint 1 has no error motion
    # joint 2 rests at its last stop, with that stop's error: the later joints' points move with it
    np.testing.assert_allclose((moved[2][0] - exact[2][0]) @ axis, 50e-6 * np.sin(TABLE2.stops(1)[-1] + 0.3),
                               atol=1e-15)


def test_a_tilt_error_motion_tilts_the_circle_and_its_jitter_is_random_per_point():
    tilt = cp.simulate(dataclasses.replace(TABLE2, errors=_errors(joint=5, term="ex", amplitude=0.01 * DEG)), None)
    frames = link_frames(KUKA_KR5_SIXX, TABLE2.q_final)
    height = (tilt[5][0] - frames[5][:3, 3]) @ frames[5][:3, 2]
    assert np.ptp(height) > 0.5 * 0.06 * 0.01 * DEG  # the 60 mm circle wobbles out of its plane
    jittery = dataclasses.replace(TABLE2, noise_a=0.0, noise_b=0.0, errors=_errors(3, "dx", 0.0, jitter=2e-6))
    points = cp.simulate(jittery, np.random.default_rng(3), batch=3000)
    spread = (points[3] - cp.simulate(TABLE2, None)[3]).std(axis=0)
    np.testing.assert_allclose(np.linalg.norm(spread, axis=-1), 2e-6, rtol=0.08)


# ----------------------------------------------------------------------------------- Monte Carlo behaviour


def _std(measurement: cp.Measurement, count: int = 800, seed: int = 7) -> dict[str, float]:
    identified = cp.identify_measurement(measurement, cp.simulate(measurement, np.random.default_rng(seed), count))
    return {name: float(np.std(identified[name])) for name in cp.identified_names(measurement.table)}


def test_noise_free_parameters_are_identified_and_the_rest_stay_nominal():
    names = cp.identified_names(KUKA_KR5_SIXX)
    assert len(names) == 20 and "d2" not in names and "beta2" in names and "beta1" not in names
    assert not any(name.endswith("6") for name in names)
    std = _std(TABLE2, count=200)
    assert all(std[name] > 0 for name in names)


def test_the_uncertainty_scales_with_the_tracker_noise():
    # the same draws, twice the noise: a linear method in the small-noise regime doubles every spread
    once, twice = _std(TABLE2), _std(dataclasses.replace(TABLE2, noise_a=10e-6, noise_b=0.6e-6))
    for name in once:
        assert twice[name] / once[name] == pytest.approx(2.0, rel=0.02), name


def test_a_wider_sweep_lowers_the_uncertainty_of_the_axes_parameters_several_fold():
    narrow, wide = _std(dataclasses.replace(TABLE2, swept=TABLE2.swept * 0.5)), _std(TABLE2)
    ratios = {name: narrow[name] / wide[name] for name in wide}
    assert min(ratios.values()) > 1.5
    assert np.median(list(ratios.values())) > 3.0  # short arcs: the spread grows about as 1 / angle^2


def test_a_reflector_farther_from_the_axis_lowers_the_direction_uncertainty_as_one_over_the_radius():
    near, far = _std(TABLE2), _std(dataclasses.replace(TABLE2, reflector=TABLE2.reflector * 2))
    for name in ("alpha1", "alpha3", "theta3", "beta2"):
        assert near[name] / far[name] == pytest.approx(2.0, rel=0.1), name
    # the distance between the parallel axes 2 and 3 comes from the circles' centres: radius-free
    assert near["a2"] / far["a2"] == pytest.approx(1.0, rel=0.1)


def test_more_points_per_circle_lower_the_uncertainty_about_as_one_over_root_n():
    few, many = _std(TABLE2), _std(dataclasses.replace(TABLE2, points=tuple(4 * n for n in TABLE2.points)))
    ratios = [few[name] / many[name] for name in few]
    assert np.median(ratios) == pytest.approx(2.0, rel=0.2)  # 4x the points: sqrt(4) = 2
