"""``np.linalg.solve`` of two (4, 4) poses at under half its cost, bit for bit: the tick's calls.

:func:`solve_poses` hands two writable C-contiguous float (4, 4) arrays (the tick's arrays: a single
specialisation of the kernel to load per process) to the compiled LAPACK call of
:mod:`orbitree.skills.solve_kernel` (imported, with numba, by the first call: a mission refused at
loading imports no numba) where the process's check found it gives numpy's bits; anything else,
and whatever the kernel refuses (a singular or non-finite matrix: numpy then raises its own error
or returns its own result), goes to ``np.linalg.solve``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_SHAPE = (4, 4)
_FLOAT = np.dtype(float)
_KERNEL: list[Callable[[np.ndarray, np.ndarray], np.ndarray] | None] = []  # [kernel, or None: numpy's]


def _load() -> None:
    from orbitree.skills import solve_kernel

    _KERNEL.append(solve_kernel.solve if solve_kernel.matches_numpy() else None)


def solve_poses(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.linalg.solve(a, b)``, the same array bit for bit: ``a2world``, ``b2world`` (4, 4) give
    ``b2a`` (4, 4); any other system numpy solves takes numpy's call."""
    if not _KERNEL:
        _load()
    kernel = _KERNEL[0]
    if (kernel is not None and type(a) is np.ndarray and type(b) is np.ndarray and a.shape == _SHAPE
            and b.shape == _SHAPE and a.dtype == _FLOAT and b.dtype == _FLOAT and a.flags.c_contiguous
            and b.flags.c_contiguous and a.flags.writeable and b.flags.writeable):
        try:
            return kernel(a, b)
        except np.linalg.LinAlgError:  # singular or not finite: numpy's own error, or its result
            pass
    return np.linalg.solve(a, b)


def warm_up() -> None:
    """Load (or compile) the kernel and make the process's check, outside any tick."""
    solve_poses(np.eye(4), np.eye(4))
