"""Per-tick cost of streaming a run to the web view, with and without a browser connected.

The mission is the ~40-node tree of ``tick_overhead.py`` plus a driver that writes the keys the
page plots (``/servo/error``, ``/servo/gain``, ``/robot/arm/wrench``) every tick, on the
simulated clock as fast as the CPU allows (the worst case: a realtime run has idle time between
ticks for the server threads). Three ways, alternating, ``--runs`` times each:

* ``no view``: ``Executive.run()`` with no view;
* ``web, nobody watching``: the web view serving, no browser connected;
* ``web + viewer``: the web view with an SSE client reading the stream (a Python thread
  standing in for the browser, so it reads every message the page would get);
* ``web + viewer + camera``: as above, and the driver also delivers a 1280x720 camera frame of
  the SIROM board (rendered once by the sim camera) 15 times a second with the estimate of that
  frame, so the view's camera thread finds the markers and serves a JPEG twice a second (the
  camera panel, ``orbitree.views.camera``); the viewer also fetches each announced image.

Reported: the median wall time per tick of the loop (``wall_time_s / ticks`` of the summary,
which excludes the view's start and finish), and the median p50 / p99 of the time spent ticking
the tree itself (the summary's ``tick_ms``), where contention for the GIL with the server
threads would show.

    python benchmarks/viewer_overhead.py [--ticks 3000] [--runs 7]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tick_overhead import mission_text

from orbitree.behaviours.catalogue import load_mission
from orbitree.drivers.interfaces import Frame
from orbitree.drivers.sim_camera import board_scene_camera
from orbitree.nodes.messages import StampedPose
from orbitree.runtime.executive import Executive
from orbitree.skills.board import make_detector
from orbitree.skills.board_model import make_aruco_board, sirom_board_model
from orbitree.views.camera import CameraSetup
from orbitree.views.web import WebView

FPS = 15.0


def camera_scene() -> tuple[np.ndarray, np.ndarray, CameraSetup]:
    """A 1280x720 frame of the SIROM board 0.3 m away, its pose, and the panel's setup."""
    camera = board_scene_camera(sirom_board_model(), seed=1, board_name="sirom")
    board2cam = np.eye(4)
    board2cam[:3, :3] = np.diag([1.0, -1.0, -1.0])
    board2cam[:3, 3] = [0.02, 0.01, 0.3]
    camera.set_cam2world(np.linalg.inv(board2cam))
    intr = camera.intrinsics
    board = make_aruco_board(sirom_board_model())
    setup = CameraSetup("arm", intr.camera_matrix, intr.dist_coeffs, "sirom", board, make_detector(board))
    return camera.render(), board2cam, setup


class CameraView(WebView):
    """The web view with the camera panel of an arm looking at the SIROM board."""

    setup: CameraSetup

    def start(self, header: dict) -> None:
        super().start(header)
        self._cameras = {"arm": self.setup}
        self._spawn(self._camera_loop, "web-view-camera")


class PlotDriver:
    """A driver writing what the approach leaf and the F/T sensor would, every tick."""

    name = "bench"

    def __init__(self, camera: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.k = 0
        self.camera = camera
        self.frames = 0

    def keys(self) -> list[str]:
        return ["/servo/error", "/servo/gain", "/robot/arm/wrench", "/robot/arm/image", "/target/sirom/pose_cam"]

    def setup(self) -> None:
        pass

    def read(self, now: float) -> dict:
        self.k += 1
        decay = np.exp(-now)
        out = {
            "/servo/error": np.array([0.1, -0.05, 0.2, 0.01, 0.02, -0.03]) * decay,
            "/servo/gain": 0.4 + 1.1 * decay,
            "/robot/arm/wrench": np.array([1.0, 2.0, 3.0, 0.1, 0.2, 0.3]) * np.sin(now),
        }
        if self.camera is not None and now * FPS >= self.frames:  # a new frame, and its estimate
            self.frames += 1
            image, board2cam = self.camera
            out["/robot/arm/image"] = Frame(image, now, {"frame": self.frames})
            out["/target/sirom/pose_cam"] = StampedPose(board2cam, "camera", now, 0.1, (0, 1, 2))
        return out

    def after_tick(self, period: float) -> None:
        pass

    def stop(self) -> None:
        pass

    def shutdown(self) -> None:
        pass


class Viewer(threading.Thread):
    """Reads the event stream as a browser would; counts messages and bytes."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.messages = 0
        self.bytes = 0
        self.images = 0

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", "/events", headers={"Host": f"127.0.0.1:{self.port}"})
        try:
            for line in conn.getresponse():
                if line.startswith(b"data: "):
                    self.messages += 1
                    self.bytes += len(line)
                    if b'"camera":' in line:  # fetch the image, as the page does
                        image = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                        image.request("GET", "/camera/arm.jpg", headers={"Host": f"127.0.0.1:{self.port}"})
                        reply = image.getresponse()
                        self.images += reply.status == 200 and len(reply.read()) > 0
                        image.close()
        except OSError:
            pass


def one_run(mission, ticks: int, mode: str, realtime: bool = False, camera=None) -> dict:
    views: list = []
    viewer = None
    view = None
    if mode != "none":
        view = CameraView(port=0) if mode == "camera" else WebView(port=0)
        if mode == "camera":
            view.setup = camera[2]
        view.listen()
        views.append(view)
        if mode in ("viewer", "camera"):
            viewer = Viewer(view.port)
            viewer.start()
            deadline = time.monotonic() + 5
            while view.viewers < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
    driver = PlotDriver(camera[:2] if mode == "camera" else None)
    executive = Executive(mission, drivers=[driver], views=views, realtime=realtime)
    cpu = time.process_time()
    result = executive.run()
    cpu = time.process_time() - cpu
    s = result.summary
    assert s["ticks"] == ticks, s
    note = ""
    if viewer is not None:
        viewer.join(timeout=5)
        note = f"{viewer.messages} messages, {viewer.bytes / 1024:.0f} KiB"
        if mode == "camera":
            per = view.camera_s / max(view.camera_images, 1) * 1e3
            note += f", {view.camera_images} images ({per:.0f} ms each, camera thread), {viewer.images} fetched"
    return {
        "loop": s["wall_time_s"] / ticks * 1e6,
        "cpu": cpu / ticks * 1e6,
        "p50": s["tick_ms"]["p50"],
        "p99": s["tick_ms"]["p99"],
        "misses": s["deadline_misses"],
        "note": note,
    }


MODES = {"none": "no view", "quiet": "web, nobody watching", "viewer": "web + viewer",
         "camera": "web + viewer + camera"}


def median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


# ORBITREE_BENCH_SMOKE=1: one short repetition, to check the command works (README's commands
# are all run by the test suite); the figures then mean nothing.
SMOKE = os.environ.get("ORBITREE_BENCH_SMOKE") == "1"

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ticks", type=int, default=100 if SMOKE else 3000)
    parser.add_argument("--runs", type=int, default=1 if SMOKE else 9)
    parser.add_argument("--realtime-s", type=float, default=0.0 if SMOKE else 3.0,
                        help="0: skip the realtime runs")
    args = parser.parse_args()
    results: dict[str, list[dict]] = {m: [] for m in MODES}
    paced: dict[str, list[dict]] = {m: [] for m in MODES}
    rate = 125.0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        path.write_text(mission_text(args.ticks, rate))
        mission = load_mission(path)
        n_nodes = len(mission.nodes())
        camera = camera_scene()
        for _ in range(args.runs):
            for mode in MODES:
                results[mode].append(one_run(mission, args.ticks, mode, camera=camera))
        if args.realtime_s > 0:
            ticks = round(args.realtime_s * rate)
            path.write_text(mission_text(ticks, rate))
            short = load_mission(path)
            for mode in MODES:
                paced[mode].append(one_run(short, ticks, mode, realtime=True, camera=camera))
    print(f"tree: {n_nodes} nodes; {args.ticks} ticks per run, {args.runs} runs alternating (medians)")
    print("flat out on the simulated clock (worst case: no idle time left for the server threads)")
    print(f"{'':26}{'loop us/tick':>13}{'CPU us/tick':>13}{'tree p50 ms':>13}{'tree p99 ms':>13}")
    for mode, label in MODES.items():
        rows = results[mode]
        print(
            f"{label:26}{median(rows, 'loop'):13.1f}{median(rows, 'cpu'):13.1f}"
            f"{median(rows, 'p50'):13.4f}{median(rows, 'p99'):13.4f}   {rows[-1]['note']}"
        )
    base = results["none"]
    for mode in ("camera", "viewer", "quiet"):
        loop = median(results[mode], "loop") / median(base, "loop")
        cpu = median(results[mode], "cpu") / median(base, "cpu")
        print(f"ratio {MODES[mode]} / no view:{'':{26 - len(MODES[mode])}}loop {loop:5.3f}   CPU {cpu:5.3f}")
    if args.realtime_s > 0:
        print(f"realtime at {rate:g} Hz for {args.realtime_s:g} s (a watched run)")
        print(f"{'':26}{'tree p50 ms':>13}{'tree p99 ms':>13}{'deadline misses':>17}")
        for mode, label in MODES.items():
            row = paced[mode][0]
            print(f"{label:26}{row['p50']:13.4f}{row['p99']:13.4f}{row['misses']:17d}   {row['note']}")


if __name__ == "__main__":
    main()
