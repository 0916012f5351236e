"""The arm controller's thin SVD of its Jacobian, compiled: numpy's LAPACK call without numpy's wrapper.

The simulated arm's damped least squares (``SimRobotControl._dls``) takes the SVD of its (6, 6)
Jacobian every control period, four times a tick; ``np.linalg.svd`` spends ~5 of its ~12 µs in its
Python wrapper (the type checks, an ``errstate`` context, the result's conversions). numba's
``np.linalg.svd`` calls the same LAPACK routine (``dgesdd``, the thin ``jobz='S'`` form) on the same
column-major copy, through scipy's LAPACK rather than numpy's: the same routine in another build
of the library, which may or may not give the same bits. So the first call in a process checks the
kernel against numpy on 200 drawn matrices (:func:`matches_numpy`: Jacobian-like and random,
some of rank 5, ~10 ms) and keeps numpy's call if a single bit differs (the approach of
:mod:`orbitree.skills.kinematics_kernels`). ``@njit(cache=True)``: compiled once per install,
loaded from numba's cache after (:func:`warm_up`, in the Makefile's WARM and the tests' conftest).
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
    return True


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


def warm_up() -> None:
    """Load (or compile) the kernel and make the process's check, outside any tick."""
    thin_svd(np.eye(6))
