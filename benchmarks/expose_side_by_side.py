"""The sim camera's exposure, compiled (drivers/sim_expose.py) against OpenCV's passes, on the flagship's frames.

Runs the flagship mission (missions/sirom_dock.yaml from the SIROM paper's example misalignment,
seed 0) once, keeping every N-th albedo frame the camera's sensor exposes (what the renderer
painted, before light, blur, noise and quantisation) with its sensor model and noise draw, then
exposes each kept frame with ``ImageSensor.expose`` both ways, alternating which goes first, in
one process pinned to one core. Prints the median CPU time per frame of each, their ratio, and
the pixels of the 8-bit images that differ (and by how much).

    python benchmarks/expose_side_by_side.py [--every 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from orbitree.behaviours.catalogue import load_mission
from orbitree.drivers.sim_sensor import ImageSensor
from orbitree.runtime.executive import Executive

MISSION = Path(__file__).resolve().parents[1] / "missions" / "sirom_dock.yaml"
SEED_START = "robots.arm.start={target: sirom, offset: {xyz: [20 mm, 170 mm, 350 mm], rpy: [-45, 18, 25]}}"


def record(every: int) -> list[tuple]:
    """(albedo, model, lens, origin, draw) of every ``every``-th frame the mission exposes."""
    frames, count = [], [0]
    original = ImageSensor.expose

    def expose(self, albedo, model, lens, origin=None, draw=None):
        if draw is None:
            draw = self.standard_normal(albedo.shape if origin is None else (lens.height, lens.width))
        if count[0] % every == 0:
            frames.append((albedo.copy(), model, lens, origin, draw))
        count[0] += 1
        return original(self, albedo, model, lens, origin, draw)

    ImageSensor.expose = expose
    try:
        executive = Executive(load_mission(MISSION, [SEED_START]), seed=0)
        for camera in executive.ctx.world.cameras.values():
            camera.lazy_frames = False  # whole frames, each exposed once at its capture
        executive.run()
    finally:
        ImageSensor.expose = original
    return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=4, help="keep every N-th frame (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3, help="exposures of each frame each way")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    frames = record(args.every)
    sensors = {"opencv": ImageSensor(0), "compiled": ImageSensor(0)}
    sensors["opencv"].compiled = False
    times: dict[str, list[float]] = {name: [] for name in sensors}
    differing, worst, pixels = 0, 0, 0
    for i, (albedo, model, lens, origin, draw) in enumerate(frames * args.repeat):
        images = {}
        for name in (("opencv", "compiled") if i % 2 else ("compiled", "opencv")):
            work = albedo.copy()  # OpenCV's passes spend the albedo
            started = time.process_time()
            images[name] = sensors[name].expose(work, model, lens, origin, draw)
            times[name].append(time.process_time() - started)
        diff = np.abs(images["opencv"].astype(np.int16) - images["compiled"].astype(np.int16))
        differing, worst = differing + int(np.count_nonzero(diff)), max(worst, int(diff.max()))
        pixels += diff.size
    opencv_ms, compiled_ms = (1e3 * float(np.median(times[k])) for k in ("opencv", "compiled"))
    height, width = frames[0][0].shape
    print(f"{len(frames)} frames x {args.repeat}, {width}x{height}, CPU ms per exposure (median): OpenCV's passes "
          f"{opencv_ms:.3f}, compiled {compiled_ms:.3f}, {opencv_ms / compiled_ms:.2f}x; pixels differing "
          f"{differing} of {pixels} ({differing / pixels:.1e}, at most {worst} DN)")


if __name__ == "__main__":
    main()
