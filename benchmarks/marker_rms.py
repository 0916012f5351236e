"""The board pipeline's RMS reprojection error against the markers' size in the image.

Runs the flagship mission (missions/sirom_dock.yaml, from benchmarks/sim_speed.py's start) for a
few seeds and collects every pose its camera's BoardTracker returns: the markers' mean side in
the image (ideal pixels: the pose's projection of their corners) and the pose's RMS error. Prints,
per 10 px of side, how many poses, the median and largest RMS and the largest RMS over the side,
then the tracker's count of frames by how they were found (aligned from the prediction, detected
in the predicted region, searched whole) per seed. The tracker accepts an alignment within
``max_marker_rms_px`` (1 px) or ``track_rms_per_side`` (1.5 %) of the side, the larger: this is
the measurement behind the second.

    python benchmarks/marker_rms.py [--seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections import defaultdict

import numpy as np
from sim_speed import MISSION, SEED_START

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive
from orbitree.skills.board import BoardTracker

# ORBITREE_BENCH_SMOKE=1: one short run, to check the command works (README's commands are all
# run by the test suite); the figures then mean nothing.
SMOKE = os.environ.get("ORBITREE_BENCH_SMOKE") == "1"


def mean_side_px(tracker: BoardTracker, board2cam: np.ndarray, marker_ids: tuple[int, ...]) -> float:
    """The markers' mean side (px) where ``board2cam`` puts them, in ideal (undistorted) pixels."""
    obj = np.asarray(tracker.board.getObjPoints(), dtype=np.float64).reshape(-1, 4, 3)
    index = {int(i): k for k, i in enumerate(np.asarray(tracker.board.getIds()).ravel())}
    corners = obj[[index[i] for i in marker_ids]] @ board2cam[:3, :3].T + board2cam[:3, 3]
    pixels = corners @ tracker.camera_matrix.T
    pixels = pixels[..., :2] / pixels[..., 2:]
    return float(np.linalg.norm(np.roll(pixels, -1, axis=1) - pixels, axis=2).mean())


def collect(seeds: list[int]) -> tuple[list[tuple[float, float]], dict[int, dict[str, int]]]:
    """(side px, RMS px) of every pose found in the runs, and each seed's tracker searches."""
    poses: list[tuple[float, float]] = []
    searches: dict[int, dict[str, int]] = {}
    update = BoardTracker.update
    trackers: list[BoardTracker] = []

    def recording(self: BoardTracker, image, prior=None, **kwargs):
        if self not in trackers:
            trackers.append(self)
        found = update(self, image, prior, **kwargs)
        if found is not None:
            poses.append((mean_side_px(self, found.board2cam, found.marker_ids), found.reprojection_error_px))
        return found

    BoardTracker.update = recording  # type: ignore[method-assign]
    try:
        for seed in seeds:
            trackers.clear()
            overrides = [SEED_START, *(["max_duration=1 s"] if SMOKE else [])]
            Executive(load_mission(MISSION, overrides), seed=seed).run()
            searches[seed] = {k: sum(t.searches[k] for t in trackers) for k in ("track", "roi", "full")}
    finally:
        BoardTracker.update = update  # type: ignore[method-assign]
    return poses, searches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1] if SMOKE else [1, 2, 3])
    args = parser.parse_args()
    poses, searches = collect(args.seeds)
    bins: dict[int, list[tuple[float, float]]] = defaultdict(list)  # 10 px of side -> (side, RMS)
    for side, rms in poses:
        bins[int(side // 10) * 10].append((side, rms))
    print(f"{len(poses)} poses over seeds {args.seeds}")
    print(f"{'side px':>9} {'poses':>6} {'median RMS':>11} {'max RMS':>8} {'max RMS/side':>13}")
    for b in sorted(bins):
        rms = [r for _, r in bins[b]]
        print(f"{b:>4}-{b + 10:<4} {len(rms):>6} {statistics.median(rms):>11.3f} {max(rms):>8.3f} "
              f"{max(r / side for side, r in bins[b]):>13.4f}")
    for seed, found in searches.items():
        print(f"seed {seed}: frames aligned {found['track']}, detected in the region {found['roi']}, "
              f"searched whole {found['full']}")


if __name__ == "__main__":
    main()
