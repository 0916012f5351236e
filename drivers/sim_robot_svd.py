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
"""

from __future__ import annotations

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


def warm_up() -> None:
    """Load (or compile) the kernels and make the process's check, outside any tick."""
    thin_svd(np.eye(6))
    undamped_dls(np.eye(6), np.zeros(6), 0.05)
