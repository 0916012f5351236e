"""``np.linalg.solve`` of two (4, 4) poses, compiled: numpy's LAPACK call without numpy's wrapper.

A tick solves ``A X = B`` on 4 x 4 homogeneous matrices a few times (the world's hooks read the
tool in the passive's frame, the approach the board in the camera's, the capture leaves their
error in the target's): ``np.linalg.solve`` spends ~4.5 of its ~6 µs there in its Python wrapper
(the type checks, an ``errstate`` context, the gufunc's set-up). numba's ``np.linalg.solve`` calls
the same LAPACK routine (``dgesv``, on column-major copies of both) through scipy's LAPACK rather
than numpy's: the same routine in another build of the library, which may or may not give the
same bits. So the first call in a process checks the kernel against numpy on 200 drawn pairs
(:func:`matches_numpy`: rigid poses and general matrices, ~5 ms) and keeps numpy's call if a
single bit differs (the approach of :mod:`orbitree.skills.kinematics_kernels` and the arm's SVD).
The call site is :func:`orbitree.skills.pose_solve.solve_poses` (which imports this module, and
numba, with its first call: a mission refused at loading imports no numba). ``@njit(cache=True)``:
compiled once per install, loaded from numba's cache after (``pose_solve.warm_up``).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # numba's comes column-major, numpy's row-major (a product with it hands BLAS the other
    # layout, which sums in another order): the same layout as numpy's
    return np.ascontiguousarray(np.linalg.solve(a, b))


def _pose(rng: np.random.Generator) -> np.ndarray:
    """A drawn rigid pose (4, 4): a rotation from a normalised quaternion, a translation ~0.5 m."""
    w, x, y, z = rng.normal(0.0, 1.0, 4).tolist()
    s = 2.0 / (w * w + x * x + y * y + z * z)
    pose = np.eye(4)
    pose[:3, :3] = [[1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)],
                    [s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x)],
                    [s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)]]
    pose[:3, 3] = rng.normal(0.0, 0.5, 3)
    return pose


def matches_numpy(count: int = 200, seed: int = 0) -> bool:
    """Whether :func:`solve` gives ``np.linalg.solve(a, b)``'s array bit for bit, in the same memory
    layout, on ``count`` drawn (4, 4) pairs (two in three rigid poses, the others general)."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        if k % 3:
            a, b = _pose(rng), _pose(rng)
        else:
            a, b = rng.normal(0.0, 1.0, (4, 4)), rng.normal(0.0, 1.0, (4, 4))
        expected, got = np.linalg.solve(a, b), solve(a, b)
        if expected.tobytes() != got.tobytes() or expected.flags.c_contiguous != got.flags.c_contiguous:
            return False
    return True
