"""The state sensor: its noise has the covariance it reports; its rate, latency and stamps."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.transform import Rotation

from orbitree.drivers.state_sensor import StateSensor, diagonal_covariance

POSE = np.eye(4)
POSE[:3, :3] = Rotation.from_euler("xyz", [10, 20, 30], degrees=True).as_matrix()
POSE[:3, 3] = [1.0, 0.2, 0.5]
V, W = np.array([0.01, 0.0, 0.0]), np.array([0.0, 0.0, 0.2])


def _errors(message) -> np.ndarray:
    attitude = (Rotation.from_quat(message.quaternion) * Rotation.from_matrix(POSE[:3, :3]).inv()).as_rotvec()
    return np.concatenate([message.position - POSE[:3, 3], attitude, message.velocity - V,
                           message.angular_velocity - W])


def test_noise_statistics_match_the_covariance_the_sensor_reports():
    # a correlated covariance, not just a diagonal: position x with velocity x, attitude z with rate z
    sigma = diagonal_covariance(0.002, np.radians(0.5), 0.002, np.radians(0.2))
    sigma[0, 6] = sigma[6, 0] = 0.7 * 0.002 * 0.002
    sigma[5, 11] = sigma[11, 5] = -0.5 * np.radians(0.5) * np.radians(0.2)
    sensor = StateSensor(lambda: (POSE, V, W), 2.0, 0.1, sigma, np.random.default_rng(3))
    n = 6000
    messages = [sensor.measure(0.0) for _ in range(n)]
    assert all(np.array_equal(m.covariance, sigma) for m in messages[:5])
    e = np.array([_errors(m) for m in messages])
    assert np.abs(e.mean(axis=0) / np.sqrt(np.diag(sigma))).max() < 4.5 / np.sqrt(n)  # unbiased
    sample = np.cov(e.T)
    scale = np.sqrt(np.outer(np.diag(sigma), np.diag(sigma)))
    assert np.abs((sample - sigma) / scale).max() < 0.06  # every entry, relative to its sigmas
    # Mahalanobis distances are chi-square with 12 degrees of freedom
    d2 = np.einsum("ij,jk,ik->i", e, np.linalg.inv(sigma), e)
    assert stats.kstest(d2, stats.chi2(12).cdf).pvalue > 0.01
    assert d2.mean() == pytest.approx(12.0, abs=4 * np.sqrt(24 / n))


def test_messages_come_at_the_rate_and_arrive_after_the_latency_stamped_when_measured():
    sensor = StateSensor(lambda: (POSE, V, W), 2.0, 0.1, np.zeros((12, 12)), np.random.default_rng(0))
    arrivals = []
    for k in range(501):  # 10 s of 20 ms ticks
        now = k * 0.02
        arrivals += [(now, m) for m in sensor.poll(now)]
    stamps = [m.stamp for _, m in arrivals]
    assert stamps == pytest.approx([0.5 * i for i in range(20)])
    assert [now - m.stamp for now, m in arrivals] == pytest.approx([0.1] * 20)
    exact = arrivals[0][1]
    assert np.allclose(exact.pose(), POSE) and np.allclose(exact.twist(), np.concatenate([V, W]))


def test_the_noise_is_drawn_from_the_seed():
    sigma = diagonal_covariance(0.002, 0.01, 0.002, 0.003)
    a = [StateSensor(lambda: (POSE, V, W), 2.0, 0.1, sigma, np.random.default_rng([s, 0, 7])).measure(0.0).position
         for s in (1, 1, 2)]
    assert np.array_equal(a[0], a[1]) and not np.array_equal(a[0], a[2])
