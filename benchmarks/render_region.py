"""The sim camera's region render against its whole frame, on the flagship's frames.

Records the camera and scene poses of every frame the flagship mission (missions/sirom_dock.yaml
from the SIROM paper's example misalignment, seed 0) renders, then renders each frame that shows
the board's markers three ways, alternating the order, in one process pinned to one core: the
whole frame; the windows a tracker reads (each marker's projected corners' box grown by
``--pad`` pixels, one region each); and those windows' union as one region. Each from the same
noise draw, so the windows' pixels are compared with the whole frame's (they must be equal).
Prints the median CPU time per frame of each and the ratios, over all those frames and over the
halves with the smaller and the larger windows (the markers farther and nearer).

    python benchmarks/render_region.py [--every N] [--pad PX]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from render_side_by_side import MISSION, SEED_START, record

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive


def marker_windows(camera, cam2world: np.ndarray, board2world: np.ndarray, board, pad: int) -> list[tuple]:
    """(x0, y0, x1, y1) per marker of ``board`` wholly in the image: its corners' box grown by ``pad``."""
    board2cam = np.linalg.inv(cam2world) @ board2world
    corners = board.corners.reshape(-1, 3) @ board2cam[:3, :3].T + board2cam[:3, 3]
    if np.any(corners[:, 2] <= 0.0):
        return []
    px = camera._project(corners).reshape(-1, 4, 2)
    lens = camera.lens
    boxes = []
    for quad in px:
        (x0, y0), (x1, y1) = np.floor(quad.min(axis=0)) - pad, np.ceil(quad.max(axis=0)) + pad + 1
        if x0 >= 0 and y0 >= 0 and x1 <= lens.width and y1 <= lens.height:
            boxes.append((int(x0), int(y0), int(x1), int(y1)))
    return boxes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=1, help="use every N-th frame")
    parser.add_argument("--pad", type=int, default=12, help="pixels around each marker's corners")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    frames = record([])[:: args.every]
    world = Executive(load_mission(MISSION, [SEED_START]), seed=0).ctx.world
    (camera,) = world.cameras.values()
    (target,) = [o for o in camera.objects if o.board is not None]
    by_name = {o.name: o for o in camera.objects}
    camera.setup()
    times: dict[str, list[float]] = {"whole": [], "windows": [], "union": []}
    areas, differing, used = [], 0, 0
    for i, (cam2world, motion, poses) in enumerate(frames):
        boxes = marker_windows(camera, cam2world, poses[target.name], target.board, args.pad)
        if len(boxes) < len(target.board.marker_ids):
            continue
        corners = np.array(boxes)
        union = (*corners[:, :2].min(axis=0).tolist(), *corners[:, 2:].max(axis=0).tolist())
        object_poses = {id(by_name[n]): p for n, p in poses.items()}
        state = camera.imager.rng.bit_generator.state
        images = {}
        for label, region in (("whole", None), ("windows", boxes), ("union", union))[:: 1 if i % 2 else -1]:
            camera.imager.rng.bit_generator.state = state
            started = time.process_time()
            images[label] = camera.render(cam2world, motion, object_poses, region=region)
            times[label].append(time.process_time() - started)
        for x0, y0, x1, y1 in boxes:
            for label in ("windows", "union"):
                differing += int(np.count_nonzero(images[label][y0:y1, x0:x1] != images["whole"][y0:y1, x0:x1]))
        areas.append(sum((b[2] - b[0]) * (b[3] - b[1]) for b in boxes))
        used += 1
    areas_ = np.array(areas)
    for label, chosen in (("all", areas_ >= 0), ("smaller half", areas_ < np.median(areas_)),
                          ("larger half", areas_ >= np.median(areas_))):
        ms = {k: 1e3 * float(np.median(np.array(v)[chosen])) for k, v in times.items()}
        print(f"{label}: {int(chosen.sum())} frames showing the {len(target.board.marker_ids)} markers, "
              f"windows of median {np.median(areas_[chosen]):.0f} px in all (pad {args.pad} px); CPU ms per "
              f"frame (median): whole {ms['whole']:.2f}, windows {ms['windows']:.2f} "
              f"({ms['whole'] / ms['windows']:.2f}x less), their union {ms['union']:.2f} "
              f"({ms['whole'] / ms['union']:.2f}x less)")
    print(f"window pixels differing from the whole frame's: {differing}")


if __name__ == "__main__":
    main()
