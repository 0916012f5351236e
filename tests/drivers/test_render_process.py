"""The simulated camera rendering in a process of its own: the same images as in line, and no
process left behind however the run ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from orbitree.drivers.render_process import RENDER_NICE
from orbitree.drivers.sim_camera import (
    ImageOccluder,
    SensorModel,
    SimCamera,
    board_scene_camera,
    default_intrinsics,
)
from orbitree.skills.board_model import sirom_board_model

ROOT = Path(__file__).resolve().parents[2]


def _running(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _view(k: int) -> np.ndarray:
    """Looking down at the board from 0.3-0.4 m, sliding and turning a little per frame."""
    pose = np.eye(4)
    angle = 0.05 * k
    c, s = np.cos(angle), np.sin(angle)
    pose[:3, :3] = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ np.diag([1.0, -1.0, -1.0])
    pose[:3, 3] = [0.01 * k, -0.005 * k, 0.4 - 0.01 * k]
    return pose


def _camera(beside: bool) -> SimCamera:
    camera = board_scene_camera(sirom_board_model(), seed=7, intrinsics=default_intrinsics(480, 360, 340.0))
    camera.frame_rate_hz, camera.exposure_s = 10.0, 0.01  # motion blur from the pose history
    if beside:
        camera.render_beside(nice=RENDER_NICE)
    camera.setup()
    return camera


def _frames(camera: SimCamera, count: int) -> list:
    """One frame per 0.1 s of a moving camera; each awaited before the next is captured (so
    none is dropped); a marker hidden, an occluder and a darker sensor part way through."""
    out = []
    for k in range(count):
        if k == 2:
            camera.object("board").hidden_marker_ids.add(sirom_board_model().marker_ids[0])
            camera.occluders.append(ImageOccluder(np.array([[10.0, 10.0], [120.0, 20.0], [60.0, 90.0]])))
        if k == 3:
            camera.sensor = SensorModel(exposure=0.7, read_noise_dn=2.5)
        for tick in range(10):  # 10 ms steps: the exposure's start pose comes from the history
            t = 0.1 * k + 0.01 * tick
            camera.set_cam2world(_view(k) if tick == 0 else _view(k + tick / 10.0))
            camera.step(t)
            frame = camera.read()
            deadline = time.monotonic() + 60.0
            while tick == 0 and frame is None:  # rendering beside: the frame comes later
                assert time.monotonic() < deadline, "no frame from the render process in 60 s"
                time.sleep(0.002)
                frame = camera.read()
            if frame is not None:
                out.append(frame)
    return out


def test_render_process_delivers_the_in_line_renderers_frames_bit_for_bit():
    in_line = _camera(beside=False)
    beside = _camera(beside=True)
    try:
        assert beside.renders_beside and beside._renderer.alive
        assert beside._renderer.pid != os.getpid()
        expected, got = _frames(in_line, 5), _frames(beside, 5)
        assert len(got) == len(expected) == 5
        for a, b in zip(expected, got, strict=True):
            assert (b.stamp, b.meta) == (a.stamp, a.meta)
            assert b.image.shape == (360, 480) and b.image.dtype == np.uint8
            np.testing.assert_array_equal(b.image, a.image)
        # the frames differ from each other (noise, motion, the hidden marker, the darker sensor)
        assert np.mean(expected[4].image) < 0.85 * np.mean(expected[2].image)
        assert beside.frames_rendered == 5 and beside.render_s > 0.0
        assert beside.last_blur_px == pytest.approx(in_line.last_blur_px)
    finally:
        beside.shutdown()


def _children(parent: int | None = None) -> set[int]:
    """Pids of the children of ``parent`` (default: this process), zombies included."""
    parent = os.getpid() if parent is None else parent
    out = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == parent:
                    out.add(int(entry))
        except OSError:
            continue
    return out


def _frame_memory() -> list[str]:
    """This process's open descriptors that are a camera's shared frame memory."""
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue
    return [link for link in links if "frames" in link and "memfd" in link]


def test_shutdown_leaves_no_child_process_and_frees_the_shared_memory():
    before = _children()
    camera = _camera(beside=True)
    pid = camera._renderer.pid
    assert _running(pid) and _children() - before == {pid}
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(os.getpriority(os.PRIO_PROCESS, 0) + RENDER_NICE, 19)
    assert len(_frame_memory()) == 1
    camera.shutdown()
    camera.shutdown()  # twice is harmless
    assert not _running(pid)
    assert _children() - before == set()
    assert _frame_memory() == []


_SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    from orbitree.drivers.sim_camera import board_scene_camera, default_intrinsics
    from orbitree.skills.board_model import sirom_board_model

    camera = board_scene_camera(sirom_board_model(), intrinsics=default_intrinsics(320, 240, 230.0))
    camera.render_beside()
    camera.setup()
    pose = np.eye(4)
    pose[:3, :3] = np.diag([1.0, -1.0, -1.0])
    pose[2, 3] = 0.3
    camera.set_cam2world(pose)
    print(camera._renderer.pid, flush=True)
    end = {end!r}
    t = 0.0
    while True:
        t += 0.01
        camera.step(t)
        camera.read()
        time.sleep(0.01)
        if end == "raise" and t > 0.2:
            raise RuntimeError("a failed run")
""")


@pytest.mark.parametrize("end", ["sigint", "sigkill", "raise"])
def test_no_orphan_render_process_when_the_parent_is_interrupted_killed_or_fails(end):
    parent = subprocess.Popen([sys.executable, "-c", _SCRIPT.format(end=end)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        pid = int(parent.stdout.readline())
        assert _running(pid)
        if end != "raise":
            time.sleep(0.3)  # frames are being rendered
            parent.send_signal(signal.SIGINT if end == "sigint" else signal.SIGKILL)
        code = parent.wait(timeout=30)
    finally:
        parent.kill()
        parent.wait()
    assert code != 0
    deadline = time.monotonic() + 10.0  # a killed parent's worker sees its pipe close
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)


def test_realtime_run_stopped_by_ctrl_c_leaves_no_worker_process():
    """``orbitree run --realtime``: the camera's render process runs beside the loop, and Ctrl-C
    ends the run with it gone."""
    run = subprocess.Popen([sys.executable, "-m", "orbitree.cli", "run", "missions/sirom_dock.yaml", "--realtime",
                            "--view", "none"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60.0
        workers: set[int] = set()
        while not workers and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.1)
            workers = {pid for pid in _children(run.pid) if "render_process import _serve" in _cmdline(pid)}
        assert len(workers) == 1, "the render process did not start"
        time.sleep(1.0)  # ticking, frames rendered and searched
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=60)
    finally:
        run.kill()
        run.wait()
    assert "ABORTED (interrupted (Ctrl-C))" in out, out + err
    assert not [pid for pid in workers if _running(pid)]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""
