"""The arm controller's thin SVD of its Jacobian, compiled: numpy's LAPACK call without numpy's wrapper.

The simulated arm's damped least squares (``SimRobotControl._dls``) takes the SVD of its (6, 6)
Jacobian every control period, four times a tick; ``np.linalg.svd`` spends ~5 of its ~12 µs in its
Python wrapper (the type checks, an ``errstate`` context, the result's conversions). numba's
``np.linalg.svd`` calls the same LAPACK routine (``dgesdd``, the thin ``jobz='S'`` form) on the same
column-major copy, through scipy's LAPACK rather than numpy's: the same routine in another build
of the library, which may or may not give the same bits. So the first call in a process checks the
kernel against numpy on 200 drawn matrices (:func:`matches_numpy`: Jacobian-like and random,
some of rank 5, ~10 ms) and keeps numpy's call if a single bit differs (the approach of
:mod:`orbitree.skills.kinematics_kernels`). Outside the singular zone (no damping: every period of
the flagship) :func:`undamped_dls` makes the whole DLS one compiled call (the SVD, the gains and
both matrix-vector products: ~5 µs of numpy's per-call overheads a period less), checked on the
same draws against the controller's numpy expressions. ``@njit(cache=True)``: compiled once per
install, loaded from numba's cache after (:func:`warm_up`, in the Makefile's WARM and the tests' conftest).

:func:`speed_period` goes one step further for ``speed_l`` outside the singular zone: after the
twist's ramp, the whole period (the DLS, the joint speed limits' one factor, the TCP limits' factor
on ``J q̇``, the acceleration limit's factor on the change of ``q̇``, the Euler step: a dozen
small-array calls, ~10 µs) in one compiled call, the same IEEE operations in the same order (no
fast-math; ``J q̇`` and the norms ``sqrt(v · v)`` by BLAS's matrix-vector product and dot, as numpy
calls them, through scipy's BLAS), checked at the first call against the controller's statements on
200 drawn periods (:func:`period_matches_numpy`, every limit binding in some); the controller keeps
its own code if a single bit differs, in the singular zone, and for a NaN.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def _svd(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    u, sigma, vt = np.linalg.svd(matrix, full_matrices=False)
    # numba's come column-major; numpy's row-major, and a product with them (the DLS's) hands BLAS
    # the other layout, which sums in another order: the same layout as numpy's
    return np.ascontiguousarray(u), sigma, np.ascontiguousarray(vt)


@numba.njit(cache=True)
def _dls(matrix: np.ndarray, twist: np.ndarray, threshold: float) -> tuple[np.ndarray, bool]:
    u, sigma, vt = _svd(matrix)
    last = sigma.shape[0] - 1
    if not sigma[last] >= threshold:  # the damped zone (or NaN): the controller's Python path
        return twist, False
    denominator = sigma * sigma  # ``sigma**2 + lam**2``, lam 0.0 here: numpy's square, plus 0.0
    for value in denominator:
        if not value > 1e-300:
            return twist, False
    return vt.T @ (sigma / denominator * (u.T @ twist)), True


def _dls_numpy(matrix: np.ndarray, twist: np.ndarray) -> np.ndarray:
    """The undamped DLS of ``SimRobotControl._dls`` on numpy's SVD, outside the damped zone."""
    u, sigma, vt = np.linalg.svd(matrix, full_matrices=False)
    denominator = sigma**2 + 0.0**2
    return vt.T @ (sigma / denominator * (u.T @ twist))


def matches_numpy(count: int = 200, seed: int = 0) -> bool:
    """Whether :func:`_svd` gives ``np.linalg.svd(m, full_matrices=False)``'s three arrays bit for bit,
    in the same memory layout, on ``count`` drawn (6, 6) matrices (one in four of rank 5, one in
    three scaled like a Jacobian's metres-and-radians rows)."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        matrix = rng.normal(0.0, 1.0, (6, 6))
        if k % 3 == 0:
            matrix[:3] *= 0.6
        if k % 4 == 0:
            matrix[:, 5] = matrix[:, :5] @ rng.normal(0.0, 1.0, 5)
        expected = np.linalg.svd(matrix, full_matrices=False)
        got = _svd(matrix)
        if any(a.tobytes() != b.tobytes() or a.flags.c_contiguous != b.flags.c_contiguous
               for a, b in zip(expected, got, strict=True)):
            return False
        twist = rng.normal(0.0, 0.2, 6)
        solution, undamped = _dls(matrix, twist, 0.0)
        if undamped and solution.tobytes() != _dls_numpy(matrix, twist).tobytes():
            return False
    return True


_FLOAT = np.dtype(float)
_VERIFIED: list[bool] = []  # [whether the kernel gives numpy's bits here], once checked


def _verified_dls() -> bool:
    """Whether the kernels give numpy's bits here (checked once per process)."""
    if not _VERIFIED:
        _VERIFIED.append(matches_numpy())
    return _VERIFIED[0]


def thin_svd(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(u (m, k), sigma (k,), vt (k, n))`` of a finite float (m, n) C-contiguous ``matrix``, as
    ``np.linalg.svd(matrix, full_matrices=False)`` (the kernel's where it gave numpy's bits)."""
    if not _VERIFIED:
        _VERIFIED.append(matches_numpy())
    if _VERIFIED[0]:
        return _svd(matrix)
    u, sigma, vt = np.linalg.svd(matrix, full_matrices=False)
    return u, sigma, vt


def undamped_dls(matrix: np.ndarray, twist: np.ndarray, threshold: float) -> np.ndarray | None:
    """``SimRobotControl._dls``'s joint velocity (n,) for a (6, n) C-contiguous finite float Jacobian
    and a (6,) float twist where the smallest singular value is at least ``threshold`` (no damping,
    no singular-zone test): the SVD, the gains and both products in one compiled call, the same bits
    (checked with the SVD's); None elsewhere (the damped zone, a vanishing singular value, a kernel
    that did not give numpy's bits), for the controller's own path."""
    if not _VERIFIED:
        _VERIFIED.append(matches_numpy())
    if not _VERIFIED[0] or twist.dtype != _FLOAT:
        return None
    solution, undamped = _dls(matrix, twist, threshold)
    return solution if undamped else None


# ------------------------------------------------------------- one speed_l period

@numba.njit(cache=True)
def _smallest_quotient(values: np.ndarray, limits: np.ndarray) -> float:
    """``min(limit / |v| for v over its limit)``, 2.0 (no factor) when none is over."""
    smallest = 2.0
    for i in range(values.shape[0]):
        magnitude = abs(values[i])
        if magnitude > limits[i]:
            quotient = limits[i] / magnitude
            if quotient < smallest:
                smallest = quotient
    return smallest


@numba.njit(cache=True)
def _smallest_quotient_of(values: np.ndarray, limit: float) -> float:
    """``min(limit / |v| for v over limit)``, 2.0 (no factor) when none is over."""
    smallest = 2.0
    for i in range(values.shape[0]):
        magnitude = abs(values[i])
        if magnitude > limit:
            quotient = limit / magnitude
            if quotient < smallest:
                smallest = quotient
    return smallest


@numba.njit(cache=True)
def _period(jacobian: np.ndarray, twist: np.ndarray, threshold: float, speed_limit: np.ndarray,
            tcp_speed: float, tcp_angular_speed: float, qd_old: np.ndarray, q_old: np.ndarray,
            accel_step: float, h: float) -> tuple[np.ndarray, np.ndarray, bool]:
    qd, undamped = _dls(jacobian, twist, threshold)
    if not undamped:
        return qd, qd, False
    for value in qd:
        if value != value:  # NaN: the controller's own code
            return qd, qd, False
    moving = False
    for value in qd:
        if value != 0.0:
            moving = True
    if moving:  # _limit_speed: the joints' factor, then the TCP's (_tcp_scale)
        factor = _smallest_quotient(qd, speed_limit)
        if factor <= 1.0:
            qd = qd * factor
        tcp = jacobian @ qd
        linear_part, angular_part = tcp[:3], tcp[3:]
        linear = math.sqrt(np.dot(linear_part, linear_part))
        angular = math.sqrt(np.dot(angular_part, angular_part))
        factor = 1.0
        if linear > tcp_speed:
            factor = tcp_speed / linear
        if angular > tcp_angular_speed:
            factor = min(factor, tcp_angular_speed / angular)
        qd = qd * factor
    change = qd - qd_old  # _scaled: the acceleration limit's factor (the array itself when none)
    factor = _smallest_quotient_of(change, accel_step)
    if factor <= 1.0:
        change = change * factor
    qd_new = qd_old + change
    return q_old + qd_new * h, qd_new, True


def _period_numpy(jacobian: np.ndarray, twist: np.ndarray, speed_limit: np.ndarray, tcp_speed: float,
                  tcp_angular_speed: float, qd_old: np.ndarray, q_old: np.ndarray, accel: float,
                  h: float) -> tuple[np.ndarray, np.ndarray]:
    """The controller's statements for an undamped period (``_limit_speed``, ``_tcp_scale``,
    ``_scaled``, the Euler step), on numpy's DLS."""
    qd = _dls_numpy(jacobian, twist)
    if any(qd.tolist()):
        quotients = [b / m for b, m in zip(speed_limit.tolist(), map(abs, qd.tolist()), strict=True) if m > b]
        if quotients:
            qd = qd * min(quotients)
        tcp = jacobian @ qd
        linear, angular = math.sqrt(tcp[:3].dot(tcp[:3])), math.sqrt(tcp[3:].dot(tcp[3:]))
        factor = 1.0
        if linear > tcp_speed:
            factor = tcp_speed / linear
        if angular > tcp_angular_speed:
            factor = min(factor, tcp_angular_speed / angular)
        qd = qd * factor
    change = qd - qd_old
    quotients = [accel / m for m in map(abs, change.tolist()) if m > accel]
    change = change * min(quotients) if quotients else change
    qd_new = qd_old + change
    return q_old + qd_new * h, qd_new


def period_matches_numpy(count: int = 200, seed: int = 0) -> bool:
    """Whether :func:`_period` gives :func:`_period_numpy`'s ``q`` and ``q̇`` bit for bit on ``count``
    drawn periods (Jacobian-like matrices; slow and fast twists, so that every limit binds in some)."""
    rng = np.random.default_rng(seed)
    speed_limit = np.array([2.1, 2.1, 3.1, 3.1, 3.1, 3.1])
    for k in range(count):
        jacobian = rng.normal(0.0, 1.0, (6, 6))
        jacobian[:3] *= 0.6
        twist = rng.normal(0.0, (0.02, 0.3, 3.0)[k % 3], 6)
        qd_old, q_old = rng.normal(0.0, (0.01, 0.5)[k % 2], 6), rng.normal(0.0, 1.0, 6)
        accel = (0.016, 0.064, 10.0)[k % 3]
        q, qd, ok = _period(jacobian, twist, 0.0, speed_limit, 0.25, 1.0, qd_old, q_old, accel, 0.008)
        if ok:
            expected = _period_numpy(jacobian, twist, speed_limit, 0.25, 1.0, qd_old, q_old, accel, 0.008)
            if q.tobytes() != expected[0].tobytes() or qd.tobytes() != expected[1].tobytes():
                return False
    return True


_PERIOD_VERIFIED: list[bool] = []  # [whether the kernel gives the controller's bits here], once checked


def speed_period(jacobian: np.ndarray, twist: np.ndarray, threshold: float, speed_limit: np.ndarray,
                 tcp_speed: float, tcp_angular_speed: float, qd: np.ndarray, q: np.ndarray,
                 accel_step: float, h: float) -> tuple[np.ndarray, np.ndarray] | None:
    """``(q, q̇)`` (n,) after one undamped ``speed_l`` period from ``(q, q̇)`` with the ramped
    ``twist`` (6,) and the Jacobian (6, n) (C-contiguous float, finite); ``speed_limit`` (n,) rad/s,
    the TCP limits m/s and rad/s, ``accel_step`` the joint acceleration limit times ``h``, ``h`` s
    (floats). None where the controller's own code must run (the singular zone, a NaN, a twist
    not float, a kernel that did not give its bits)."""
    if not _PERIOD_VERIFIED:
        _PERIOD_VERIFIED.append(_verified_dls() and period_matches_numpy())
    if not _PERIOD_VERIFIED[0] or twist.dtype != _FLOAT:
        return None
    q_new, qd_new, ok = _period(jacobian, twist, threshold, speed_limit, tcp_speed, tcp_angular_speed, qd, q,
                                accel_step, h)
    return (q_new, qd_new) if ok else None


def _warm_period() -> None:
    speed_period(np.eye(6), np.zeros(6), 0.05, np.ones(6), 1.0, 1.0, np.zeros(6), np.zeros(6), 0.064, 0.008)


def warm_up() -> None:
    """Load (or compile) the kernels and make the process's check, outside any tick."""
    thin_svd(np.eye(6))
    undamped_dls(np.eye(6), np.zeros(6), 0.05)
    _warm_period()
