"""The sim camera's rendering, this checkout against an older revision, on the flagship's frames.

Records the camera poses and scene poses of every frame the flagship mission (missions/sirom_dock.yaml
from the SIROM paper's example misalignment, seed 0) renders, then renders each frame with the
renderer of ``--base`` (its drivers/sim_render.py, sim_scene.py and sim_camera.py, and the modules
split out of them, the sensor's included, where that revision has them, read with
``git show``) and with this checkout's, alternating which goes first, in one process pinned to one
core. Prints the median CPU time per frame of each (process CPU time: the shared machine's other
work does not count), their ratio, and how many pixels of the two images differ (the faces'
coverage changed in issue 15's first round; from its third round on the noise comes from a table
of draws made from the camera's seed, which both cameras share, so against an earlier base nearly
every pixel differs by the noise, against a later one only what the renderers draw differently).
The two cameras alternating in one process make each frame's fresh buffers page-fault (~260 minor
faults a frame each, none when one camera renders alone): a renderer that keeps its buffers
between frames looks faster here than it is in a run.

    python benchmarks/render_side_by_side.py [--base REV] [--every N]
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

from orbitree.behaviours.catalogue import load_mission
from orbitree.drivers.sim_camera import SimCamera
from orbitree.runtime.executive import Executive

ROOT = Path(__file__).resolve().parents[1]
MISSION = ROOT / "missions" / "sirom_dock.yaml"
SEED_START = "robots.arm.start={target: sirom, offset: {xyz: [20 mm, 170 mm, 350 mm], rpy: [-45, 18, 25]}}"
MODULES = ("lazy_frame", "sim_coverage", "sim_expose", "sim_sensor", "sim_patches", "sim_rays", "sim_texkernel",
           "sim_render", "sim_scene", "sim_painter", "sim_camera")  # in import order
# split out of sim_render.py or sim_camera.py, or new: absent at older revisions
SPLIT_OUT = ("lazy_frame", "sim_coverage", "sim_expose", "sim_sensor", "sim_patches", "sim_rays", "sim_texkernel",
             "sim_painter")
BASE = "1ae4f6f"  # main before issue 15's rendering work


def record(overrides: list[str]) -> list[tuple]:
    """(cam2world, motion, {object name: pose}) of every frame the mission renders."""
    frames = []
    original = SimCamera.render

    def render(self, cam2world=None, motion=None, object_poses=None):
        poses = {o.name: (object_poses or {}).get(id(o), o.pose()).copy() for o in self.objects}
        frames.append((self.cam2world() if cam2world is None else cam2world.copy(), motion, poses))
        return original(self, cam2world, motion, object_poses)

    SimCamera.render = render
    try:
        executive = Executive(load_mission(MISSION, [SEED_START, *overrides]), seed=0)
        for camera in executive.ctx.world.cameras.values():
            camera.lazy_frames = False  # every frame rendered whole, once, at its capture
        executive.run()
    finally:
        SimCamera.render = original
    return frames


def base_camera_class(rev: str) -> type:
    """SimCamera of revision ``rev``, its modules loaded as a private package (from files in a
    temporary folder: numba's cached kernels, ``cache=True``, need the source on disk)."""
    folder = Path(tempfile.mkdtemp(prefix=f"base_render_{rev.replace('/', '_')}_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    package = types.ModuleType("base_render")
    package.__path__ = []
    sys.modules[package.__name__] = package
    for name in MODULES:
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:drivers/{name}.py"],
                               capture_output=True, text=True)
        if shown.returncode != 0 and name in SPLIT_OUT:
            continue  # not split out of sim_render.py yet at that revision
        shown.check_returncode()
        source = shown.stdout
        for other in MODULES:
            source = source.replace(f"orbitree.drivers.{other} import", f"base_render.{other} import")
        module = types.ModuleType(f"base_render.{name}")
        module.__file__ = str(folder / f"{name}.py")  # drivers/{name}.py at revision rev
        Path(module.__file__).write_text(source, encoding="utf-8")
        sys.modules[module.__name__] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)  # the project's own code, at that revision
    return sys.modules["base_render.sim_camera"].SimCamera


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE, help="revision to compare with (default: %(default)s)")
    parser.add_argument("--every", type=int, default=1, help="use every N-th frame")
    parser.add_argument("--max-duration", default=None, help="cut the mission short, e.g. '3 s'")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    frames = record([f"max_duration={args.max_duration}"] if args.max_duration else [])[:: args.every]
    executive = Executive(load_mission(MISSION, [SEED_START]), seed=0)
    (new,) = executive.ctx.world.cameras.values()
    # the same seed: from issue 15's third round on, the camera's noise table is drawn from it
    old = base_camera_class(args.base)(new.name, new.intrinsics, sensor=new.sensor, seed=new.imager.seed,
                                       true_intrinsics=new.true_intrinsics)
    old.objects = new.objects  # the same scene (the patches' fields did not change)
    by_name = {o.name: o for o in new.objects}
    for camera in (old, new):
        camera.setup()
        camera.render(*frames[0][:2], {id(by_name[n]): p for n, p in frames[0][2].items()})  # warm
        if hasattr(camera, "imager"):  # the sensor split out of the camera (after issue 15's third round)
            camera.imager.rng = np.random.default_rng(7)
        else:
            camera._rng = np.random.default_rng(7)
    times: dict[str, list[float]] = {"base": [], "this": []}
    differing, worst = 0, 0
    for i, (cam2world, motion, poses) in enumerate(frames):
        object_poses = {id(by_name[n]): p for n, p in poses.items()}
        images = {}
        for label, camera in (("base", old), ("this", new))[:: 1 if i % 2 else -1]:
            started = time.process_time()
            images[label] = camera.render(cam2world, motion, object_poses)
            times[label].append(time.process_time() - started)
        diff = np.abs(images["base"].astype(int) - images["this"].astype(int))
        differing += int(np.count_nonzero(diff))
        worst = max(worst, int(diff.max()))
    base_ms, this_ms = (1e3 * float(np.median(times[k])) for k in ("base", "this"))
    size = new.lens.width * new.lens.height * len(frames)
    print(f"{len(frames)} frames, {new.lens.width}x{new.lens.height}, CPU ms per frame (median): "
          f"{args.base} {base_ms:.2f}, this checkout {this_ms:.2f}, {base_ms / this_ms:.2f}x; "
          f"pixels differing {100 * differing / size:.2f} % (at most {worst} DN)")


if __name__ == "__main__":
    main()
