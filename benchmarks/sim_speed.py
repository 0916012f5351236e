"""Simulated-to-wall time ratio of the flagship mission (missions/sirom_dock.yaml).

Runs the docking mission from the example misalignment of the SIROM self-coupling paper ([SIROM]
in the README's Sources) on the simulated clock, as fast as the CPU allows, several times, and
prints per run the mission time, the wall time and their ratio (above 1: faster than real time),
the ratio to the process's CPU time too (on a virtual machine the wall clock also counts the time
the host gave to others, which varies by several per cent from one invocation to the next), then
the medians, with each run's final error (the docking error the mission ends with: same
seed, same errors, whatever the speed). The compiled kernels are loaded from numba's cache and the
SIROM contact model made before the runs (printed: 0.3-0.7 s, once per process, which a campaign's
worker pays once), and one second of the flagship is run (seed 0, untimed: the modules, shared
textures and checks a process makes in its first run, 0.3 s; without it the first timed run,
seed 1's, took ~0.3 s more). On Linux it pins itself to one core (``--core``, default 0;
``--core -1``: no pinning), so the figure is "times real time on one core". A second table
splits the wall time of one run by where it goes (rendering, perception: the BoardTracker's
update or a full estimate_board_pose, contact model, the tree's tick), measured with cProfile on a
separate run so the timed runs stay unperturbed. The parts nest: the camera's frames are rendered
when perception reads them (``LazyFrame``), inside the tracker's time, which is inside the tick's.

    python benchmarks/sim_speed.py [--runs 3] [--no-profile] [--core N]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import time
from pathlib import Path

from orbitree.behaviours.catalogue import load_mission
from orbitree.drivers.sim_camera import SimCamera
from orbitree.runtime.executive import Executive
from orbitree.runtime.warm import warm_kernels

MISSION = Path(__file__).resolve().parents[1] / "missions" / "sirom_dock.yaml"
SEED_START = "robots.arm.start={target: sirom, offset: {xyz: [20 mm, 170 mm, 350 mm], rpy: [-45, 18, 25]}}"
PARTS = {  # cumulative time of these functions, by part (several: summed, none nests another)
    # frames are rendered when read (LazyFrame): inside perception's time, itself in the tree's tick
    "render (sim camera)": (("sim_camera.py", "render", SimCamera.render.__code__.co_firstlineno),),
    "perception (its frames' rendering included)": (("board_tracker.py", "update", None),
                                                    ("board.py", "estimate_board_pose", None)),
    "contact model": (("contact.py", "solve_contact", None),),
    "tree tick (leaves, perception included)": (("timing.py", "tick", None),),
}


def run_once(seed: int) -> tuple[float, float, str, dict]:
    """(mission time s, wall time s, status, final error) of one run of the flagship."""
    sim, wall, _, status, final = timed_run(seed)
    return sim, wall, status, final


def timed_run(seed: int) -> tuple[float, float, float, str, dict]:
    """(mission time s, wall time s, CPU time s of the process, status, final error) of one run."""
    mission = load_mission(MISSION, [SEED_START, *(["max_duration=1 s"] if SMOKE else [])])
    started, cpu = time.perf_counter(), time.process_time()
    result = Executive(mission, seed=seed).run()
    return (result.summary["sim_time_s"], time.perf_counter() - started, time.process_time() - cpu,
            result.status, result.summary.get("final_error") or {})


def profile_once() -> dict[str, float]:
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    run_once(0)
    profiler.disable()
    total = time.perf_counter() - started
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (cc, nc, tt, ct, callers)
    parts = {"total": total}
    for label, functions in PARTS.items():
        parts[label] = sum(v[3] for k, v in stats.items() for file, name, line in functions
                           if k[0].endswith(file) and k[2] == name and line in (None, k[1]))
    return parts


def _error(final: dict) -> str:
    """The final error as 'xyz mm / angle deg' (the summary's final_error, whatever its keys)."""
    if not final:
        return "-"
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in final.items())


# ORBITREE_BENCH_SMOKE=1: one short repetition, to check the command works (README's commands
# are all run by the test suite); the figures then mean nothing.
SMOKE = os.environ.get("ORBITREE_BENCH_SMOKE") == "1"

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1 if SMOKE else 3)
    parser.add_argument("--no-profile", action="store_true", default=SMOKE)
    parser.add_argument("--core", type=int, default=0, help="CPU to pin to (Linux); -1: no pinning")
    args = parser.parse_args()
    if args.core >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
        print(f"pinned to CPU {args.core}")
    # the compiled kernels loaded from numba's cache first, as a campaign's worker has them after
    # its first run: the runs below time the simulation, not the process's one-time loading
    print(f"kernels loaded, contact model made in {warm_kernels():.2f} s (once per process, before the runs)")
    # then one second of the flagship (seed 0, not timed): what else a process does once, as a
    # campaign's worker does in its first run (the simulated world's modules imported, the shared
    # marker textures made, the arm kinematics' check against numpy, OpenCV's first calls)
    mission = load_mission(MISSION, [SEED_START, "max_duration=1 s"])
    started = time.perf_counter()
    Executive(mission, seed=0).run()
    print(f"one second of the flagship run first (seed 0): {time.perf_counter() - started:.2f} s")
    sims, walls, ratios, cpu_ratios = [], [], [], []
    print(f"{'run':>4} {'status':>8} {'sim s':>8} {'wall s':>8} {'sim/wall':>9} {'sim/CPU':>8}  final error")
    for i in range(args.runs):
        sim, wall, cpu, status, final = timed_run(seed=i + 1)
        sims.append(sim)
        walls.append(wall)
        ratios.append(sim / wall)
        cpu_ratios.append(sim / cpu)
        print(f"{i + 1:>4} {status:>8} {sim:>8.2f} {wall:>8.2f} {sim / wall:>9.2f} {sim / cpu:>8.2f}  "
              f"{_error(final)}")
    print(f"median: sim {statistics.median(sims):.2f} s, wall {statistics.median(walls):.2f} s, "
          f"sim/wall {statistics.median(ratios):.2f}, sim/CPU {statistics.median(cpu_ratios):.2f}")
    if not args.no_profile:
        parts = profile_once()
        total = parts.pop("total")
        print(f"\nwhere the wall time of one profiled run goes ({total:.1f} s under cProfile; the parts nest:")
        print("the frames are rendered as perception reads them, perception runs in the tree's tick):")
        for label, seconds in parts.items():
            print(f"  {label:<44} {seconds:7.2f} s  {100 * seconds / total:5.1f} %")


if __name__ == "__main__":
    main()
