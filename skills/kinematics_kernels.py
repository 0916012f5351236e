"""Compiled forward kinematics of a serial chain: the link frames and the tool's Jacobian in one call.

``kinematics.link_frames`` and ``kinematics.pose_and_jacobian`` run twice a tick in the simulated
arm (the controller's nominal table and the built arm's true one); written with numpy they paid
numpy's per-call overhead on a dozen small arrays, ~25-30 µs a call. :func:`chain` is the same
arithmetic compiled by numba (``@njit(cache=True)``; :func:`warm_up` loads it), bit for bit the
numpy code's (:func:`frames_numpy`, :func:`jacobian_numpy`):

* a link's rotation rows ``cos θ · F₀ − sin θ · F₁`` and ``sin θ · F₀ + cos θ · F₁``: each product
  rounded, then the sum (numpy's separate ufuncs; numba fuses nothing without ``fastmath``);
* a frame times a link, ``np.matmul`` of two (4, 4) arrays: numpy hands it to BLAS (``dgemm``),
  whose kernels on FMA hardware accumulate each entry as ``c = fma(a_ik, b_kj, c)`` from ``c = +0``
  over ``k = 0..3``; :func:`_product` does exactly that with LLVM's ``llvm.fma.f64`` (one rounding;
  in software where the hardware has no FMA);
* the Jacobian's columns ``z_i × (p − o_i)`` as the two rounded products and their difference.

The BLAS part is a property of the machine's BLAS, not a promise of numpy's: the first call of
:func:`frames_and_jacobian` in a process checks the kernel against the numpy code on 200 drawn
configurations (:func:`matches_numpy`, ~10 ms) and keeps the numpy code if a single bit differs.

Speed: ``pose_and_jacobian`` 30 -> 3.5 µs a call (the kernel itself 0.8 µs; the rest is the
input checks and the arrays).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` with one rounding (LLVM's ``llvm.fma.f64``)."""
    signature = numba.types.float64(numba.types.float64, numba.types.float64, numba.types.float64)

    def codegen(context, builder, sig, args):
        double = ir.DoubleType()
        function = cgutils.get_or_insert_function(builder.module, ir.FunctionType(double, [double] * 3),
                                                  "llvm.fma.f64")
        return builder.call(function, args)

    return signature, codegen


@numba.njit(cache=True)
def _product(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` for (4, 4) arrays, each entry accumulated as BLAS's dgemm does (see the module)."""
    for i in range(4):
        for j in range(4):
            c = 0.0
            for k in range(4):
                c = _fma(a[i, k], b[k, j], c)
            out[i, j] = c


@numba.njit(cache=True)
def chain(fixed: np.ndarray, thetas: np.ndarray, tool: np.ndarray, with_tool: bool,
          frames: np.ndarray, jacobian: np.ndarray) -> None:
    """The chain's frames and the tool point's geometric Jacobian, written into ``frames`` and
    ``jacobian``.

    ``fixed`` (n, 4, 4): each joint's link transform at θ = 0; ``thetas`` (n,) rad: joint angles
    plus offsets; ``tool`` (4, 4) tcp2flange, used when ``with_tool``; ``frames`` (n + 2, 4, 4):
    base (identity), frame 1..n, tool (the flange's copy without a tool); ``jacobian`` (6, n): linear
    rows first, base frame (``kinematics._jacobian_from_frames``'s layout)."""
    n = fixed.shape[0]
    link = np.empty((4, 4))
    for r in range(4):
        for c in range(4):
            frames[0, r, c] = 1.0 if r == c else 0.0
    for i in range(n):
        ct, st = math.cos(thetas[i]), math.sin(thetas[i])
        for c in range(4):
            f0, f1 = fixed[i, 0, c], fixed[i, 1, c]
            link[0, c] = ct * f0 - st * f1
            link[1, c] = st * f0 + ct * f1
            link[2, c] = fixed[i, 2, c]
            link[3, c] = fixed[i, 3, c]
        _product(frames[i], link, frames[i + 1])
    if with_tool:
        _product(frames[n], tool, frames[n + 1])
    else:
        frames[n + 1] = frames[n]
    tip = frames[n + 1]
    for i in range(n):
        z0, z1, z2 = frames[i, 0, 2], frames[i, 1, 2], frames[i, 2, 2]
        l0, l1, l2 = tip[0, 3] - frames[i, 0, 3], tip[1, 3] - frames[i, 1, 3], tip[2, 3] - frames[i, 2, 3]
        jacobian[0, i] = z1 * l2 - z2 * l1
        jacobian[1, i] = z2 * l0 - z0 * l2
        jacobian[2, i] = z0 * l1 - z1 * l0
        jacobian[3, i] = z0
        jacobian[4, i] = z1
        jacobian[5, i] = z2


def frames_numpy(fixed: np.ndarray, thetas: np.ndarray, tool: np.ndarray | None) -> np.ndarray:
    """The chain's frames (n + 2, 4, 4) with numpy (:func:`chain`'s arguments; ``tool`` None: none):
    the reference the kernel is checked against, and the code where it does not match."""
    n = fixed.shape[0]
    frames = np.empty((n + 2, 4, 4))
    frames[0] = np.eye(4)
    # the link transforms in one array: Rz(theta) times the joint's constant Tz(d)·Tx(a)·Rx(alpha)·Ry(beta)
    ct = np.array([math.cos(theta) for theta in thetas.tolist()])[:, None]
    st = np.array([math.sin(theta) for theta in thetas.tolist()])[:, None]
    links = fixed.copy()
    links[:, 0] = ct * fixed[:, 0] - st * fixed[:, 1]
    links[:, 1] = st * fixed[:, 0] + ct * fixed[:, 1]
    for i in range(n):
        np.matmul(frames[i], links[i], out=frames[i + 1])
    if tool is None:
        frames[n + 1] = frames[n]
    else:
        np.matmul(frames[n], tool, out=frames[n + 1])
    return frames


_NEXT, _AFTER = np.array([1, 2, 0]), np.array([2, 0, 1])


def jacobian_numpy(frames: np.ndarray) -> np.ndarray:
    """The tool point's geometric Jacobian (6, n) from :func:`frames_numpy`'s frames, with numpy."""
    tip = frames[-1, :3, 3]
    axes = frames[:-2, :3, 2]  # z_0 .. z_{n-1}: joint i + 1 turns about z_i
    lever = tip - frames[:-2, :3, 3]
    jacobian = np.empty((6, len(axes)))
    jacobian[:3] = (axes.take(_NEXT, axis=1) * lever.take(_AFTER, axis=1)
                    - axes.take(_AFTER, axis=1) * lever.take(_NEXT, axis=1)).T
    jacobian[3:] = axes.T
    return jacobian


_I4 = np.eye(4)  # the kernel's tool argument without a tool (unused; writable, as compiled for)
_VERIFIED: list[bool] = []  # [whether the kernel gives the numpy code's bits here], once checked


def frames_and_jacobian(fixed: np.ndarray, thetas: np.ndarray, tool: np.ndarray | None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(frames (n + 2, 4, 4), Jacobian (6, n)) of the chain (:func:`chain`'s arguments, ``tool``
    None: none): the kernel's, or the numpy code's where the kernel did not pass :func:`matches_numpy`."""
    if not (_VERIFIED[0] if _VERIFIED else _verify(fixed)):
        frames = frames_numpy(fixed, thetas, tool)
        return frames, jacobian_numpy(frames)
    n = fixed.shape[0]
    frames, jacobian = np.empty((n + 2, 4, 4)), np.empty((6, n))
    if tool is None:
        chain(fixed, thetas, _I4, False, frames, jacobian)
    else:  # the kernel's one signature: a writable C-contiguous (4, 4)
        chain(fixed, thetas, tool if tool.flags.writeable and tool.flags.c_contiguous else tool.copy(), True,
              frames, jacobian)
    return frames, jacobian


def matches_numpy(fixed: np.ndarray, count: int = 200, seed: int = 0) -> bool:
    """Whether :func:`chain` gives, bit for bit, :func:`frames_numpy` and :func:`jacobian_numpy`'s
    arrays on ``count`` drawn joint configurations of the chain ``fixed`` (angles over two turns,
    some exactly 0; three in four with a turned and shifted tool)."""
    rng = np.random.default_rng(seed)
    n = fixed.shape[0]
    tool = np.eye(4)
    c, s = math.cos(0.7), math.sin(0.7)
    tool[:3, :3] = [[c, 0.0, s], [s * s, c, -s * c], [-s * c, s, c * c]]
    tool[:3, 3] = [0.01, -0.02, 0.2]
    for k in range(count):
        thetas = rng.uniform(-2.0 * math.pi, 2.0 * math.pi, n)
        if k % 3 == 0:
            thetas[k % n] = 0.0
        used = tool if k % 4 else None
        expected = frames_numpy(fixed, thetas, used)
        frames, jacobian = np.empty_like(expected), np.empty((6, n))
        chain(fixed, thetas, _I4 if used is None else tool, used is not None, frames, jacobian)
        if frames.tobytes() != expected.tobytes() or jacobian.tobytes() != jacobian_numpy(expected).tobytes():
            return False
    return True


def _verify(fixed: np.ndarray) -> bool:
    _VERIFIED[:] = [matches_numpy(fixed)]
    return _VERIFIED[0]


def warm_up() -> None:
    """Load (or compile) the kernel once, outside any tick."""
    fixed = np.tile(np.eye(4), (6, 1, 1))
    chain(fixed, np.zeros(6), np.eye(4), True, np.empty((8, 4, 4)), np.empty((6, 6)))
    fixed.flags.writeable = False  # the arm's table of fixed links is kept read-only: its own specialisation
    chain(fixed, np.zeros(6), np.eye(4), True, np.empty((8, 4, 4)), np.empty((6, 6)))
    from orbitree.skills import pose_solve  # the poses' compiled solve, which the same ticks call

    pose_solve.warm_up()
