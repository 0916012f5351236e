"""The 3-D scene's records (header and ticks), their folding into the page's state, the LVLH
trajectory of a synthetic orbit log, and the camera panel's annotated image."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import py_trees
import pytest
from scipy.spatial.transform import Rotation

from orbitree.behaviours.catalogue import load_mission
from orbitree.drivers.sim_camera import board_scene_camera
from orbitree.nodes.messages import StampedPose
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log
from orbitree.runtime.scene import SCENE_HZ, SceneSampler, observers_of, pose7
from orbitree.skills.board_model import sirom_board_model
from orbitree.skills.kinematics import UR10E, forward_kinematics
from orbitree.views.camera import CameraSetup, annotate
from orbitree.views.state import ViewState
from orbitree.views.web import ReplayWebView, _apply_record

ROOT = Path(__file__).resolve().parents[2]
SIROM = ROOT / "missions" / "sirom_dock.yaml"


def matrix(pose: list[float]) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat(pose[3:]).as_matrix()
    m[:3, 3] = pose[:3]
    return m


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """The flagship's first 2 s from the SIROM paper's misalignment (the target in view: the
    approach begins), logged."""
    path = tmp_path_factory.mktemp("scene") / "run.jsonl"
    start = "robots.arm.start={target: sirom, offset: {xyz: [20 mm, 170 mm, 350 mm], rpy: [-45, 18, 25]}}"
    mission = load_mission(SIROM, ["max_duration=2 s", start])
    Executive(mission, log_path=str(path)).run()
    return read_log(path)


def test_header_scene_holds_the_arm_kinematics_tool_camera_and_target(short_run):
    scene = short_run.header["scene"]
    arm = scene["robots"]["arm"]
    assert arm["dh"]["d"] == list(UR10E.d) and arm["dh"]["a"] == list(UR10E.a)
    assert arm["tool"][:3] == [0.0, 0.0, 0.2]  # 200 mm from the flange
    # the camera: its mount (beside the tool, rpy 0, 40, 90 deg) and the sim camera's own intrinsics
    camera = arm["camera"]
    assert camera["mount"][:3] == [0.0, -0.12, -0.02]
    rpy = Rotation.from_quat(camera["mount"][3:]).as_euler("xyz", degrees=True)
    np.testing.assert_allclose(rpy, [0.0, 40.0, 90.0], atol=1e-4)
    assert (camera["width"], camera["height"]) == (1280, 720) and camera["k"][0] == 900.0
    sirom = next(b for b in scene["bodies"] if b["name"] == "sirom")
    np.testing.assert_allclose(matrix(sirom["pose"])[:3, 3], [-0.65, 0.1, 0.1], atol=1e-9)
    markers = [p for p in sirom["parts"] if p["shape"] == "polygon"]
    assert len(markers) == 3  # the board's three markers, printed on the passive face
    table = next(b for b in scene["bodies"] if b["kind"] == "fixture")
    assert table["pose"][2] == pytest.approx(0.05)  # the sim world's table: 5 cm below the target


def test_tick_scene_joints_put_the_tool_where_the_arm_reported_it(short_run):
    """FK of the logged joints with the logged tool gives the TCP pose logged in the same record
    (the flagship records /robot/arm/tcp_pose), to the rounding of the joints (1e-6 rad)."""
    tool = matrix(short_run.header["scene"]["robots"]["arm"]["tool"])
    checked = 0
    for record in short_run.ticks:
        q = record.get("scene", {}).get("q", {}).get("arm")
        tcp = record.get("bb", {}).get("/robot/arm/tcp_pose")
        if q is None or tcp is None:
            continue
        fk = forward_kinematics(UR10E, np.array(q), tool)
        assert np.abs(fk[:3, 3] - np.array(tcp)[:3, 3]).max() < 5e-6
        checked += 1
    assert checked > 10  # the arm moved during the approach: q was logged again and again


def test_scene_samples_come_at_25_hz_and_cost_under_40_bytes_a_tick(short_run):
    sampled = [r["t"] for r in short_run.ticks[:-1] if "scene" in r]  # (the halt's record always has one)
    gaps = np.diff(sampled)
    assert gaps.min() >= 1.0 / SCENE_HZ - 1e-6  # never more often than 25 Hz
    assert "scene" in short_run.ticks[-1]  # the state the run ended in
    assert len(sampled) >= 0.9 * SCENE_HZ * short_run.ticks[-1]["t"]  # a moving arm: about every sample
    size = sum(len(json.dumps(r["scene"], separators=(",", ":"))) + 9 for r in short_run.ticks if "scene" in r)
    assert size / len(short_run.ticks) < 40.0
    # the estimate of the target sits beside the truth: within 5 mm of it
    est = [r["scene"]["est"]["sirom"] for r in short_run.ticks if "est" in r.get("scene", {})]
    truth = short_run.ticks[0]["scene"]["body"]["sirom"]
    assert est and max(np.linalg.norm(np.subtract(e[:3], truth[:3])) for e in est) < 0.005


def test_sampler_logs_only_what_changed_and_puts_forces_and_estimates_in_the_world():
    py_trees.blackboard.Blackboard.clear()
    storage = py_trees.blackboard.Blackboard.storage
    base = np.eye(4)
    base[:3, 3] = [1.0, 0.0, 0.0]  # a second arm standing 1 m along x
    scene = {"robots": {"arm": {"base": pose7(base), "ft": True}},
             "bodies": [{"name": "sat", "kind": "target", "pose": pose7(np.eye(4))}]}
    sampler = SceneSampler(scene, observers={"sat": "arm"})
    tcp = np.eye(4)
    tcp[:3, :3] = Rotation.from_euler("x", 180, degrees=True).as_matrix()  # tool pointing down
    storage.update({"/robot/arm/q": np.zeros(6), "/robot/arm/tcp_pose": tcp,
                    "/robot/arm/wrench": np.array([0.0, 0.0, 10.0, 0, 0, 0]),
                    "/target/sat/pose_base": StampedPose(np.eye(4), "base", 0.0, 0.1, (0,)),
                    "/orbit/relative/sat": np.array([1.5, -20.0, 0.25, 0.0, 0.01, 0.0])})
    first = sampler.sample(0.0)
    assert first["q"]["arm"] == [0.0] * 6
    assert first["f"]["arm"] == [0.0, 0.0, -10.0]  # +z of the tool is -z of the world
    assert first["est"]["sat"][:3] == [1.0, 0.0, 0.0]  # through the observing arm's base
    assert first["rel"]["sat"] == [1.5, -20.0, 0.25]
    assert sampler.sample(0.02) is None  # before the next 25 Hz sample is due
    storage["/robot/arm/q"] = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 5e-6])  # below the 1e-5 rad step
    assert sampler.sample(0.04) is None
    storage["/robot/arm/q"] = np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert sampler.sample(0.08) == {"q": {"arm": [0.1, 0.0, 0.0, 0.0, 0.0, 0.0]}}
    py_trees.blackboard.Blackboard.clear()


def write_orbit_log(path: Path, seconds: float = 60.0) -> list[tuple[float, list[float]]]:
    """A synthetic orbit mission's log: the servicer on a Clohessy–Wiltshire football orbit
    around its target (n = 0.0011 rad/s; x radial, y along-track), logged under
    /orbit/relative/sat every tick at 10 Hz, as a mission recording that key would."""
    n, rows, samples = 0.0011, [], []
    header = {"type": "header", "format": "orbitree-log/1", "mission": "orbit-synthetic", "nodes": [
        {"id": 0, "name": "hold", "kind": "wait", "parent": None, "params": {}}], "rate_hz": 10.0}
    rows.append(header)
    for k in range(int(seconds * 10) + 1):
        t = k / 10.0
        phase = n * t * 60.0  # sped up: a whole ellipse in the 60 s of the log
        x, y = 10.0 * math.sin(phase), 20.0 * math.cos(phase)  # the 2:1 ellipse of CW motion
        position = [round(x, 3), round(y, 3), 0.0]  # to the mm, as the view keeps them
        samples.append((t, position))
        rows.append({"type": "tick", "n": k, "t": t, "tick_ms": 0.01, "bb": {"/orbit/relative/sat": position}})
    rows.append({"type": "footer", "summary": {"status": "SUCCESS", "reason": "synthetic"}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return samples


def test_a_synthetic_orbit_log_gives_the_lvlh_trajectory(tmp_path):
    samples = write_orbit_log(tmp_path / "orbit.jsonl")
    log = read_log(tmp_path / "orbit.jsonl")
    view = ReplayWebView(log, port=0)
    view._seek(len(log.ticks) - 1)
    message = view.state.init_message(view.control_state())
    trajectory = message["series"]["lvlh:sat"]
    # every 0.5 s of mission time, the logged positions exactly
    assert [row[0] for row in trajectory] == [t for t, _ in samples][::5]
    by_t = dict(samples)
    assert all(row[1:] == by_t[row[0]] for row in trajectory)
    assert max(abs(row[1]) for row in trajectory) == pytest.approx(10.0, abs=0.01)  # R-bar extent
    assert max(abs(row[2]) for row in trajectory) == pytest.approx(20.0, abs=0.01)  # V-bar: twice it


def test_replay_state_carries_the_latest_scene_of_each_thing():
    state = ViewState({"nodes": []}, "replay")
    _apply_record(state, {"n": 0, "t": 0.0, "scene": {"q": {"arm": [0.0] * 6}, "body": {"sirom": [0] * 7}}})
    state.update_message(None)
    _apply_record(state, {"n": 5, "t": 0.04, "scene": {"q": {"arm": [0.1] * 6}}})
    update = state.update_message(None)
    assert update["scene"] == {"q": {"arm": [0.1] * 6}}  # only what changed goes to the page
    init = state.init_message({})
    assert init["scene"] == {"q": {"arm": [0.1] * 6}, "body": {"sirom": [0] * 7}}  # a late page gets it all


def test_camera_image_outlines_the_markers_and_draws_the_estimated_axes():
    model = sirom_board_model()
    camera = board_scene_camera(model, seed=3, board_name="sirom")
    board2cam = np.eye(4)
    board2cam[:3, :3] = Rotation.from_euler("xyz", [170, 10, 20], degrees=True).as_matrix()
    board2cam[:3, 3] = [0.02, -0.01, 0.3]
    camera.set_cam2world(np.linalg.inv(board2cam))
    image = camera.render()
    intr = camera.intrinsics
    header = {"scene": {"robots": {"arm": {"camera": {"k": intr.camera_matrix.ravel().tolist(),
                                                       "dist": intr.dist_coeffs.tolist()}}},
                        "bodies": [{"name": "sirom", "kind": "target", "board": "sirom"}]},
              "nodes": [{"kind": "perceive", "params": {"robot": "arm", "target": "sirom"}}]}
    setup = CameraSetup.from_header(header)["arm"]
    assert observers_of(header["nodes"]) == {"sirom": "arm"} and setup.target == "sirom"
    jpeg, info = annotate(image, setup, board2cam)
    served = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    scale = 640 / intr.width
    assert served.shape == (round(intr.height * scale), 640, 3) and len(jpeg) < 80_000
    assert sorted(info["markers"]) == [0, 1, 2]
    truth = camera.project_marker_corners("sirom")
    for marker, corners in zip(info["markers"], info["corners"], strict=True):
        assert np.abs(np.array(corners) - truth[marker] * scale).max() < 1.0  # served pixels
    origin = cv2.projectPoints(np.zeros(3), cv2.Rodrigues(board2cam[:3, :3])[0], board2cam[:3, 3],
                               intr.camera_matrix, intr.dist_coeffs)[0].ravel() * scale
    assert np.abs(np.array(info["axes"][0]) - origin).max() < 0.2
    # the outlines are drawn: saturated green pixels in a grey image
    b, g, r = cv2.split(served.astype(int))
    assert ((g - np.maximum(r, b)) > 80).sum() > 100
    # without an estimate for this frame: the markers, no axes
    assert annotate(image, setup, None)[1]["axes"] is None


def test_a_spinning_satellite_is_drawn_as_its_inertia_box_with_pads_and_turns_at_its_spin_rate(tmp_path):
    path = tmp_path / "gimbal.jsonl"
    mission = load_mission(ROOT / "missions" / "gimbal_standoff.yaml", ["max_duration=3 s"])
    Executive(mission, log_path=str(path)).run()
    log = read_log(path)
    (mockup,) = [b for b in log.header["scene"]["bodies"] if b["name"] == "mockup"]
    assert mockup["kind"] == "satellite"
    box, _axes, *pads = mockup["parts"]
    # a uniform box of 159 kg with moments (18, 18, 20) kg·m²: sides sqrt(6 (Ij + Ik - Ii) / m)
    sides = sorted([math.sqrt(6 * 16 / 159)] + [math.sqrt(6 * 20 / 159)] * 2)
    np.testing.assert_allclose(sorted(box["size"]), sides, atol=1e-4)
    assert [p["radius"] for p in pads] == [0.05, 0.05]
    np.testing.assert_allclose(sorted(p["pose"][1] for p in pads), [-0.5, 0.5], atol=1e-9)
    bodies = [(t["t"], t.get("scene", {}).get("body", {})) for t in log.ticks]
    samples = [(t, body["mockup"]) for t, body in bodies if "mockup" in body]
    (t0, first), (t1, last) = samples[0], samples[-1]
    turned = (Rotation.from_quat(last[3:]) * Rotation.from_quat(first[3:]).inv()).as_rotvec()
    rate_rpm = np.linalg.norm(turned) / (t1 - t0) * 60 / (2 * math.pi)
    assert abs(turned[2]) == pytest.approx(np.linalg.norm(turned)) and rate_rpm == pytest.approx(2.0, rel=0.01)
