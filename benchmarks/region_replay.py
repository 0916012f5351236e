"""The tracker's region renders of the flagship, replayed: their time per frame and their pixels.

Runs the flagship mission (``sim_speed.run_once``, seed ``--seed``) recording every
``LazyFrame.region`` call that renders (the BoardTracker's windows of a tracked frame, ~3 boxes of
~110 x 115 px), then renders each recorded frame's boxes again ``--reps`` times in a row (the
fastest kept: the frame's cost on a quiet core) for each ``MERGE_PX`` given (``--merge``, the
values alternating frame by frame in this one process, pinned to one core), and prints the
median and total CPU ms per frame and a hash of the rendered images (the same for every value:
the pixels do not depend on how the boxes are grouped), and with ``--check`` the pixels of every
fifth frame's boxes that differ from its whole frame (must be 0).

    python benchmarks/region_replay.py [--seed 1] [--reps 3] [--merge 20000 100000] [--check]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sim_speed

from orbitree.drivers import sim_region
from orbitree.drivers.lazy_frame import LazyFrame


def record(seed: int) -> list[tuple[LazyFrame, list[tuple[int, int, int, int]]]]:
    """(frame, boxes) of every region render of the flagship run of ``seed``."""
    calls = []
    region = LazyFrame.region

    def recording(frame: LazyFrame, boxes):
        if not frame.rendered:
            calls.append((frame, [tuple(int(v) for v in box) for box in boxes]))
        return region(frame, boxes)

    LazyFrame.region = recording
    try:
        sim_speed.run_once(seed)
    finally:
        LazyFrame.region = region
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--merge", type=int, nargs="+", default=[sim_region.MERGE_PX])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    calls = record(args.seed)
    times: dict[int, list[float]] = {m: [] for m in args.merge}
    hashes = {m: hashlib.sha256() for m in args.merge}
    default = sim_region.MERGE_PX
    try:
        for i, (frame, boxes) in enumerate(calls):
            for merge in args.merge[:: 1 if i % 2 else -1]:
                sim_region.MERGE_PX = merge
                best = np.inf
                for _ in range(args.reps):
                    started = time.process_time()
                    image = frame._render(list(boxes))  # the frame's render (LazyFrame.region keeps none)
                    best = min(best, time.process_time() - started)
                times[merge].append(best)
                hashes[merge].update(image.tobytes())
    finally:
        sim_region.MERGE_PX = default
    boxes_per_frame = np.mean([len(b) for _, b in calls])
    print(f"{len(calls)} region renders (seed {args.seed}), {boxes_per_frame:.2f} boxes a frame")
    for merge in args.merge:
        ms = 1e3 * np.array(times[merge])
        print(f"MERGE_PX {merge}: median {np.median(ms):.3f} ms a frame, total {ms.sum():.1f} ms, "
              f"images {hashes[merge].hexdigest()[:16]}")
    if args.check:
        differing = 0
        for frame, boxes in calls[::5]:
            image, whole = frame._render(list(boxes)), frame._render(None)
            differing += sum(int(np.count_nonzero(image[y0:y1, x0:x1] != whole[y0:y1, x0:x1]))
                             for x0, y0, x1, y1 in boxes)
        print(f"pixels of the boxes differing from the whole frames': {differing}")


if __name__ == "__main__":
    main()
