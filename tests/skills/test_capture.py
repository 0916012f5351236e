"""orbitree.skills.capture: SIROM limits, error convention, boundaries, standoff aim point."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orbitree.skills import capture, pbvs
from orbitree.skills.capture import SIROM_ENVELOPE, CaptureEnvelope, EnvelopeError

MM = 1e-3


def _pose(rotation: Rotation, translation: np.ndarray) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = rotation.as_matrix()
    pose[:3, 3] = translation
    return pose


def _random_pose(rng: np.random.Generator) -> np.ndarray:
    rotation = Rotation.random(random_state=int(rng.integers(1 << 31)))
    return _pose(rotation, rng.uniform(-1.0, 1.0, 3))


def _tcp_with_error(target2base: np.ndarray, offset_mm: list[float], turn_deg: list[float]):
    """TCP pose whose error, in the target frame, is the given offset and rotation vector."""
    docked = capture.SIROM_TCP2TARGET_DOCKED
    tcp2target = np.eye(4)
    tcp2target[:3, :3] = Rotation.from_rotvec(np.radians(turn_deg)).as_matrix() @ docked[:3, :3]
    tcp2target[:3, 3] = docked[:3, 3] + np.asarray(offset_mm) * MM
    return target2base @ tcp2target


def _error(*values: float) -> EnvelopeError:
    return EnvelopeError(*values)


def test_sirom_preset_holds_the_eross_numbers() -> None:
    assert SIROM_ENVELOPE.lower == pytest.approx(
        (-0.005, -0.005, 0.0, -math.radians(1.5), -math.radians(1.5), -math.radians(1.5))
    )
    assert SIROM_ENVELOPE.upper == pytest.approx(
        (0.005, 0.005, 0.010, math.radians(1.5), math.radians(1.5), math.radians(1.5))
    )
    assert SIROM_ENVELOPE.standoff == pytest.approx(0.0015)
    assert capture.ENVELOPES["sirom"] is SIROM_ENVELOPE


def test_error_is_zero_when_docked_whatever_the_base() -> None:
    rng = np.random.default_rng(0)
    for _ in range(10):
        target2base = _random_pose(rng)
        tcp2base = target2base @ capture.SIROM_TCP2TARGET_DOCKED
        error = capture.envelope_error(tcp2base, target2base)
        np.testing.assert_allclose(error.si(), np.zeros(6), atol=1e-9)


def test_error_is_expressed_in_the_target_frame() -> None:
    rng = np.random.default_rng(1)
    offset, turn = [1.0, -2.0, 3.0], [0.5, -1.0, 1.2]
    for _ in range(10):
        target2base = _random_pose(rng)
        error = capture.envelope_error(_tcp_with_error(target2base, offset, turn), target2base)
        values = list(error.as_dict().values())
        np.testing.assert_allclose(values, offset + turn, atol=1e-9)
        assert list(error.as_dict()) == list(capture.AXES)


def test_positive_z_means_standing_off_the_passive_face() -> None:
    target2base = np.eye(4)
    tcp2base = target2base @ capture.SIROM_TCP2TARGET_DOCKED
    tcp2base[2, 3] += 0.004  # 4 mm out along the passive z (out of its face)
    assert capture.envelope_error(tcp2base, target2base).z_mm == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("values", "violated"),
    [
        ((0.0, 0.0, 1.5, 0.0, 0.0, 0.0), ()),
        ((5.0, -5.0, 0.0, 1.5, -1.5, 1.5), ()),
        ((-5.0, 5.0, 10.0, -1.5, 1.5, -1.5), ()),
        ((5.001, 0.0, 1.5, 0.0, 0.0, 0.0), ("x_mm",)),
        ((0.0, -5.001, 1.5, 0.0, 0.0, 0.0), ("y_mm",)),
        ((0.0, 0.0, -0.001, 0.0, 0.0, 0.0), ("z_mm",)),
        ((0.0, 0.0, 10.001, 0.0, 0.0, 0.0), ("z_mm",)),
        ((0.0, 0.0, 1.5, 1.501, 0.0, 0.0), ("rx_deg",)),
        ((0.0, 0.0, 1.5, 0.0, -1.501, 0.0), ("ry_deg",)),
        ((0.0, 0.0, 1.5, 0.0, 0.0, 1.501), ("rz_deg",)),
        ((6.0, 0.0, -1.0, 0.0, 0.0, -2.0), ("x_mm", "z_mm", "rz_deg")),
    ],
)
def test_boundaries(values: tuple[float, ...], violated: tuple[str, ...]) -> None:
    error = _error(*values)
    assert capture.violated_axes(SIROM_ENVELOPE, error) == violated
    assert capture.inside(SIROM_ENVELOPE, error) is (not violated)


def test_boundaries_through_poses() -> None:
    target2base = _random_pose(np.random.default_rng(2))
    on_edge = _tcp_with_error(target2base, [5.0, -5.0, 10.0], [1.5, 0.0, 0.0])
    assert capture.inside(SIROM_ENVELOPE, capture.envelope_error(on_edge, target2base))
    beyond = _tcp_with_error(target2base, [5.0, -5.0, 10.0], [1.51, 0.0, 0.0])
    error = capture.envelope_error(beyond, target2base)
    assert capture.violated_axes(SIROM_ENVELOPE, error) == ("rx_deg",)


def test_error_si_round_trip() -> None:
    values = np.array([0.001, -0.002, 0.003, 0.01, -0.02, 0.03])
    np.testing.assert_allclose(EnvelopeError.from_si(values).si(), values, atol=1e-15)
    assert EnvelopeError.from_si(values).x_mm == pytest.approx(1.0)
    with pytest.raises(ValueError, match="6 finite numbers"):
        EnvelopeError.from_si(np.zeros(5))


def test_envelope_checks_its_limits() -> None:
    with pytest.raises(ValueError, match=r"z_mm: lower 0\.01 > upper 0\.0"):
        CaptureEnvelope(lower=(0, 0, 0.01, 0, 0, 0), upper=(0, 0, 0, 0, 0, 0))
    with pytest.raises(ValueError, match="lower must be 6 finite numbers"):
        CaptureEnvelope(lower=(0, 0, 0), upper=(0, 0, 0, 0, 0, 0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"standoff must lie in \[0.0, 0.01\] m, got 0.02"):
        CaptureEnvelope(lower=SIROM_ENVELOPE.lower, upper=SIROM_ENVELOPE.upper, standoff=0.02)


def test_envelope_error_rejects_bad_pose() -> None:
    with pytest.raises(ValueError, match=r"tcp2base must have shape \(4, 4\)"):
        capture.envelope_error(np.eye(3), np.eye(4))


def test_aim_point_keeps_the_standoff_and_is_inside() -> None:
    target2base = _random_pose(np.random.default_rng(3))
    tcp2base = target2base @ capture.aim_tcp2target()
    error = capture.envelope_error(tcp2base, target2base)
    np.testing.assert_allclose(error.si(), [0, 0, 0.0015, 0, 0, 0], atol=1e-12)
    assert capture.inside(SIROM_ENVELOPE, error)


def test_desired_board2cam_is_what_the_camera_sees_at_the_aim_point() -> None:
    rng = np.random.default_rng(4)
    cam2tcp = _pose(Rotation.from_euler("z", 30, degrees=True), np.array([0.0, -0.08, 0.05]))
    target2base = _random_pose(rng)
    tcp2base = target2base @ capture.aim_tcp2target()
    board2cam = np.linalg.inv(tcp2base @ cam2tcp) @ target2base
    desired = capture.desired_board2cam(cam2tcp)
    np.testing.assert_allclose(pbvs.pbvs_error(board2cam, desired), np.zeros(6), atol=1e-9)


def test_envelope_error_si_conversions_are_numpy_ones_bit_for_bit() -> None:
    """``from_si`` and ``si`` on Python floats: each field is numpy's ``x / 1e-3`` or
    ``np.degrees(x)`` to the bit and back numpy's ``* 1e-3`` or ``np.radians``; a non-finite
    value is still refused."""
    rng = np.random.default_rng(11)
    for scale in (1e-6, 1e-3, 0.1, 3.0):
        for values in rng.normal(0.0, scale, (500, 6)):
            error = EnvelopeError.from_si(values)
            expected = [*(values[:3] / 1e-3), *np.degrees(values[3:])]
            got = [error.x_mm, error.y_mm, error.z_mm, error.rx_deg, error.ry_deg, error.rz_deg]
            assert np.array_equal(np.array(got).view(np.int64), np.array(expected).view(np.int64))
            back = np.concatenate([np.array(got[:3]) * 1e-3, np.radians(got[3:])])
            assert np.array_equal(error.si().view(np.int64), back.view(np.int64))
    with pytest.raises(ValueError, match="6 finite numbers"):
        EnvelopeError.from_si(np.array([0.0, 0.0, np.inf, 0.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="6 finite numbers"):
        EnvelopeError.from_si(np.zeros(5))
