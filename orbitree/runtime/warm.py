"""The compiled kernels, compiled or loaded before they are needed.

numba compiles the simulated world's kernels (the contact model's, the sim camera's faces'
coverage, markers' sampling, exposure and projection, the wrist sensor's, the arm's kinematics,
SVD and control period, the poses' solves) once per install and caches the machine code next to
their modules; each new process then loads it on the kernel's first call, about half a second in
all. :func:`warm_kernels` makes those first
calls: the Makefile's install step runs it (``python -m orbitree.runtime.warm``: the compiling,
~35 s, not in the first run or test), the test session and ``benchmarks/sim_speed.py`` before
their first run, and a process's first simulated world at its setup (:func:`warm_once`: the
loading, once per process, as a campaign's worker pays it once, before the first tick).
"""

from __future__ import annotations

import time

_WARMED: list[bool] = []  # [True] once this process has warmed the kernels


def warm_once() -> None:
    """:func:`warm_kernels` the first time a process builds a simulated world (its setup, before the
    first tick: a kernel loaded on its first call would take 5-25 ms out of a tick, a missed
    deadline with ``--realtime``); nothing after."""
    if not _WARMED:
        warm_kernels()


def warm_kernels() -> float:
    """Compile or load every kernel of the simulated world; the seconds it took."""
    started = time.perf_counter()
    from orbitree.drivers import sim_coverage, sim_expose, sim_ft_kernel, sim_project, sim_robot_svd, sim_texkernel
    from orbitree.skills import kinematics_kernels, pose_solve
    from orbitree.skills.contact import sirom_contact_model

    sirom_contact_model()  # its kernels' warm-up, on a model of the flagship's interfaces
    for module in (sim_coverage, sim_texkernel, sim_expose, sim_project, sim_ft_kernel, sim_robot_svd,
                   kinematics_kernels, pose_solve):
        module.warm_up()
    _WARMED.append(True)
    return time.perf_counter() - started


if __name__ == "__main__":
    print(f"kernels compiled or loaded in {warm_kernels():.1f} s")
