"""An honest simulated camera: it rides on the tool, which hides what it hides; motion blur over
the exposure; frames stamped at capture and delivered late; per-run calibration errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.drivers.sim_calibration import TRUNCATION, draw_camera_truth
from orbitree.drivers.sim_camera import SceneObject, SensorModel, SimCamera, default_intrinsics, solid_object
from orbitree.drivers.sim_render import premultiplied, rect_patch
from orbitree.language.world_spec import CameraSpec
from orbitree.runtime.executive import Executive
from orbitree.skills import contact_geometry as geo
from orbitree.skills.board import estimate_board_pose
from orbitree.skills.board_model import make_aruco_board, sirom_board_model

MISSION = Path(__file__).resolve().parents[2] / "missions" / "sirom_dock.yaml"
IDEAL = SensorModel(exposure=1.0, gradient=(0.0, 0.0), vignetting=0.0, blur_sigma_px=0.0,
                    read_noise_dn=0.0, shot_noise_gain=0.0)


def flagship_world(standoff_mm: float, *overrides: str):
    """The flagship's world with the tool ``standoff_mm`` short of docked (the paper aims at
    1.5 mm, the flagship's final approach at 5 mm)."""
    start = f"robots.arm.start={{target: sirom, offset: {{xyz: [0, 0, {standoff_mm} mm]}}}}"
    return Executive(load_mission(MISSION, [start, *overrides])).ctx.world


def hidden_corners(world) -> np.ndarray:
    """(12,) per board corner: the segment from the camera's centre to it crosses the tool."""
    camera = world.cameras["arm"]
    tool2world = world.tool_pose("arm")
    corners = geo.transform_points(world.target_pose("sirom"), world.boards["sirom"].corners.reshape(-1, 3))
    eye = camera.cam2world()[:3, 3]
    to_tool = np.linalg.inv(tool2world)
    active = world.docking["arm"].model.active
    hidden = []
    for corner in corners:
        ends = geo.transform_points(to_tool, np.array([[eye, corner - 1e-5 * (corner - eye)]]))
        hidden.append(geo.segments_enter(ends, active, 0.0))
    return np.array(hidden)


def tool_mask(world) -> np.ndarray:
    """(H, W) bool: where the rendered image shows the tool (the tool alone, white on black)."""
    camera = world.cameras["arm"]
    alone = SimCamera(intrinsics=camera.lens, sensor=IDEAL, background_albedo=0.0,
                      cam2world=camera.cam2world())
    alone.add_object(solid_object("tool", world.docking["arm"].model.active.pieces, world.tool_pose("arm"),
                                  albedo=1.0))
    return alone.render() > 100


def corner_pixels(world) -> np.ndarray:
    px = np.array(list(world.cameras["arm"].project_marker_corners("sirom").values())).reshape(-1, 2)
    return np.round(px).astype(int)


@pytest.mark.parametrize(("standoff_mm", "hidden_count", "in_view", "markers_seen"),
                         [(1.5, 12, 0, []), (5.0, 12, 0, []), (14.0, 8, 4, [0]), (25.0, 3, 12, [0]),
                          (42.0, 0, 12, [0, 1, 2])],
                         ids=["paper-aim", "flagship-aim", "14-mm-out", "25-mm-out", "pre-dock"])
def test_the_tool_hides_the_board_corners_it_stands_in_front_of(standoff_mm, hidden_count, in_view, markers_seen):
    world = flagship_world(standoff_mm)
    hidden = hidden_corners(world)
    assert hidden.sum() == hidden_count  # of the 12 corners (3 markers): all 12 at either aim
    # the render agrees with the geometry: the tool covers exactly the hidden corners' pixels
    # (those in the field of view: close in the board also leaves the image on the tool's side)
    mask, px = tool_mask(world), corner_pixels(world)
    height, width = mask.shape
    inside = np.all((px >= 0) & (px < [width, height]), axis=1)
    assert inside.sum() >= in_view  # at least (a corner at the image's edge comes and goes)
    np.testing.assert_array_equal(mask[px[inside, 1], px[inside, 0]], hidden[inside])
    # and perception (as perceive runs it) finds the markers whose four corners are in sight
    camera = world.cameras["arm"]
    camera.setup()
    intr = camera.intrinsics
    found = estimate_board_pose(camera.render(), intr.camera_matrix, intr.dist_coeffs,
                                make_aruco_board(sirom_board_model()))
    whole = (~hidden & inside).reshape(3, 4).all(axis=1)
    assert [m for m, ok in zip((0, 1, 2), whole, strict=True) if ok] == markers_seen
    assert ([] if found is None else sorted(int(i) for i in found.marker_ids)) == markers_seen


def test_no_part_of_the_arm_behind_the_tool_is_in_the_flagships_view():
    # the flange, the wrist links (the UR10e's d6 = 116 mm and its 120 mm wrist offsets) and any
    # tool adapter lie behind the active interface: a 0.4 m x 0.4 m x 0.42 m box of points behind
    # its back face (TCP frame, z from -30 mm to -450 mm) projects nowhere in the image
    camera = flagship_world(42.0).cameras["arm"]
    grid = np.stack(np.meshgrid(np.linspace(-0.2, 0.2, 41), np.linspace(-0.2, 0.2, 41),
                                np.linspace(-0.45, -0.03, 43), indexing="ij"), axis=-1).reshape(-1, 3)
    in_cam = geo.transform_points(np.linalg.inv(camera.cam2tool), grid)
    ahead = in_cam[:, 2] > 0.0
    rays = in_cam[ahead, :2] / in_cam[ahead, 2:]
    camera.setup()
    table = camera._ray_table()  # the undistorted rays of every pixel lie in this box
    seen = np.all((rays >= table.rays_min) & (rays <= table.rays_max), axis=1)
    assert ahead.sum() > 0 and not seen.any()


def test_the_camera_rides_on_the_real_tool_pose_deflected_by_contact():
    # the tool 3 mm off toward -x (petal 0 over the chamfer), 6 mm out, then pushed 8 mm in:
    # the chamfer stops it and pushes it back toward the centre through the wrist compliance
    start = "robots.arm.start={target: sirom, offset: {xyz: [3 mm, 0, 6 mm]}}"
    world = Executive(load_mission(MISSION, [start])).ctx.world
    arm = world.robots["arm"]
    goal = arm.tcp2base()
    goal[:3, 3] += goal[:3, 2] * 0.008
    arm.move_l(goal, speed=0.01)
    for _ in range(125):
        world.step(0.008)
    real, commanded = world.tool_pose("arm"), arm.tcp2base()
    deflection = float(np.linalg.norm(real[:3, 3] - commanded[:3, 3]))
    assert deflection > 5e-4  # the compliance gave way by more than half a millimetre
    camera = world.cameras["arm"]
    np.testing.assert_allclose(camera.cam2world(), real @ camera.cam2tool, atol=1e-12)
    assert np.linalg.norm(camera.cam2world()[:3, 3] - (commanded @ camera.cam2tool)[:3, 3]) > 5e-4


def _edge_scene(exposure_s: float) -> SimCamera:
    """A camera 0.3 m from a plane, black left of x = 0, white right of it, moving along x."""
    texture = np.zeros((4, 4096), np.float32)  # 0.1 mm texels: the edge is sharp to 0.3 px
    texture[:, 2048:] = 1.0
    patch = rect_patch(premultiplied(texture * 0.8 + 0.1), 0.4, 0.4, np.eye(4), 4)
    plane = SceneObject("edge", [patch], np.eye(4))
    camera = SimCamera(intrinsics=default_intrinsics(), sensor=IDEAL, exposure_s=exposure_s)
    camera.add_object(plane)
    plane.board = sirom_board_model()  # the reference point of the blur is this object's origin
    return camera


def _pose(x: float) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = np.diag([1.0, -1.0, -1.0])  # looking down -z at the plane
    pose[:3, 3] = [x, 0.0, 0.3]
    return pose


def _edge_variance(image: np.ndarray) -> float:
    """Variance (px²) of the edge's line spread (the derivative of the middle row's profile)."""
    row = image[image.shape[0] // 2].astype(float)
    spread = np.abs(np.diff(row))
    peak = int(np.argmax(spread))
    spread = spread[peak - 40:peak + 40]  # the black/white edge only (not the patch's own edges)
    spread[spread < max(2.5, 0.05 * spread.max())] = 0.0  # not the 8-bit rounding
    x = np.arange(len(spread))
    centre = (x * spread).sum() / spread.sum()
    return float(((x - centre) ** 2 * spread).sum() / spread.sum())


def test_exposure_blurs_the_scene_along_the_motion_by_speed_times_exposure():
    speed, exposure, focal, depth = 0.3, 0.010, 900.0, 0.3  # m/s, s, px, m
    expected = focal * speed * exposure / depth  # 9 px
    camera = _edge_scene(exposure)
    for k in range(6):  # the camera moves along x at 0.3 m/s, one pose every 4 ms
        camera.set_cam2world(_pose(speed * 0.004 * k))
        camera.step(0.004 * k)
    moving = camera.read().image
    assert camera.last_blur_px == pytest.approx(expected, rel=0.02)
    still = _edge_scene(0.0)
    still.set_cam2world(_pose(speed * 0.02))
    sharp = still.read().image
    # a box blur of length L adds L²/12 to the variance of the edge's spread
    width = np.sqrt(12.0 * (_edge_variance(moving) - _edge_variance(sharp)))
    assert width == pytest.approx(expected, rel=0.05)
    assert _edge_variance(sharp) < 0.5  # the still edge is sharp


def test_the_tool_is_painted_from_a_cached_layer_equal_to_painting_its_faces():
    """The on-camera tool composited from its cached layer (transmission and premultiplied
    albedo) matches painting its faces over any canvas to float rounding, the layer is reused
    for the same pose and rebuilt for another."""
    camera = flagship_world(25.0).cameras["arm"]
    tool = next(obj for obj in camera.objects if obj.on_camera)
    world2cam = np.linalg.inv(camera.cam2world())
    canvas = np.random.default_rng(0).uniform(0.0, 1.0, (camera.lens.height, camera.lens.width)).astype(np.float32)
    direct, layered, again = canvas.copy(), canvas.copy(), canvas.copy()
    camera._paint(direct, tool, world2cam)
    camera._paint_layer(layered, tool, world2cam)
    layer = camera._layers[id(tool)]
    camera._paint_layer(again, tool, world2cam)
    assert camera._layers[id(tool)] is layer
    assert np.mean(direct != canvas) > 0.05  # the tool covers part of the image
    np.testing.assert_allclose(layered, direct, atol=2e-6)
    np.testing.assert_array_equal(again, layered)
    moved = world2cam.copy()
    moved[0, 3] += 1e-3
    camera._paint_layer(canvas.copy(), tool, moved)
    assert camera._layers[id(tool)] is not layer


def test_the_tool_stays_put_in_the_image_while_the_camera_moves_over_the_exposure():
    """The tool carries the camera: seen from the camera at the instant its pose was taken (the
    exposure's end) it keeps its pixels in a moving frame (rendered at the mid-exposure pose)."""
    world = flagship_world(25.0)
    camera = world.cameras["arm"]
    cam2tool = np.linalg.inv(world.tool_pose("arm")) @ camera.cam2world()
    alone = SimCamera(intrinsics=camera.lens, sensor=IDEAL, background_albedo=0.0, exposure_s=0.01)
    tool = alone.add_object(solid_object("tool", world.docking["arm"].model.active.pieces, np.eye(4),
                                         albedo=1.0, on_camera=True))
    end = camera.cam2world()
    start, mid = end.copy(), end.copy()
    start[:3, 3] -= [0.004, 0.002, 0.0]
    mid[:3, 3] -= [0.002, 0.001, 0.0]
    tool2world = end @ np.linalg.inv(cam2tool)
    still = alone.render(end, None, {id(tool): tool2world})
    moving = alone.render(mid, (start, end), {id(tool): tool2world})
    assert np.mean(still > 100) > 0.05
    np.testing.assert_array_equal(moving, still)


def test_frames_carry_their_mid_exposure_stamp_and_arrive_after_the_latency():
    camera = SimCamera(intrinsics=default_intrinsics(320, 240, 300.0), sensor=IDEAL, frame_rate_hz=15.0,
                       exposure_s=0.010, latency_s=0.070)
    delivered = []
    for tick in range(0, 126 + 10):  # 1 s at 125 Hz, and the last frame's latency
        camera.step(tick * 0.008)
        frame = camera.read()
        if frame is not None:
            delivered.append((tick * 0.008, frame.stamp))
    assert len(delivered) == 16  # frames 0..15: 15 in the first second, and the one at 1 s
    for k, (at, stamp) in enumerate(delivered):
        captured = np.ceil(k / 15.0 / 0.008 - 1e-9) * 0.008  # the first tick of frame k's interval
        assert stamp == pytest.approx(captured - 0.005)  # the middle of its 10 ms exposure
        assert captured + 0.070 <= at + 1e-9 < captured + 0.070 + 0.008  # handed out 70 ms later


def test_stamp_errors_are_seeded_and_within_three_sigma():
    def stamps(seed):
        camera = SimCamera(intrinsics=default_intrinsics(64, 48, 60.0), sensor=IDEAL, seed=seed,
                           stamp_jitter_s=0.002)
        out = []
        for k in range(400):
            camera.step(k * 0.01)
            out.append(camera.read().stamp - k * 0.01)
        return np.array(out)

    errors = stamps(3)
    np.testing.assert_array_equal(errors, stamps(3))
    assert not np.array_equal(errors, stamps(4))
    assert np.abs(errors).max() <= 3 * 0.002 + 1e-12
    assert errors.std() == pytest.approx(0.002, rel=0.12)
    assert abs(errors.mean()) < 0.0005


def test_per_run_calibration_errors_are_seeded_and_within_their_stated_spread():
    spec = CameraSpec()  # the realistic defaults
    model = spec.error_model()
    nominal = default_intrinsics()
    mount = np.eye(4)
    board = sirom_board_model()

    def draw(seed: int):
        return draw_camera_truth(model, np.random.default_rng(seed), nominal, mount, board)

    a, b = draw(7), draw(7)
    np.testing.assert_array_equal(a.intrinsics.camera_matrix, b.intrinsics.camera_matrix)
    np.testing.assert_array_equal(a.mount, b.mount)
    np.testing.assert_array_equal(a.board.corners, b.board.corners)
    assert not np.array_equal(a.mount, draw(8).mount)
    runs = [draw(seed) for seed in range(400)]
    fx = np.array([r.intrinsics.camera_matrix[0, 0] / nominal.camera_matrix[0, 0] - 1 for r in runs])
    cx = np.array([r.intrinsics.camera_matrix[0, 2] - nominal.camera_matrix[0, 2] for r in runs])
    k1 = np.array([r.intrinsics.dist_coeffs[0] - nominal.dist_coeffs[0] for r in runs])
    xyz = np.array([r.mount[:3, 3] for r in runs])
    from scipy.spatial.transform import Rotation

    rpy = np.array([Rotation.from_matrix(r.mount[:3, :3]).as_euler("xyz") for r in runs])
    offsets = np.array([(r.board.corners - board.corners)[:, :, :2].mean(axis=1) for r in runs])
    # each within 3 sigma (truncated), spread within 12 % of sigma (a 3-sigma truncation leaves 0.986)
    focal_sigma = np.hypot(spec.focal_error, spec.focal_error / 3)  # common and own parts
    focal_bound = TRUNCATION * (spec.focal_error + spec.focal_error / 3)
    for values, sigma, bound in [(fx, focal_sigma, focal_bound),
                                 (cx, spec.principal_point_error, TRUNCATION * spec.principal_point_error),
                                 (k1, spec.distortion_error, TRUNCATION * spec.distortion_error),
                                 (xyz, spec.mount_error, TRUNCATION * spec.mount_error),
                                 (rpy, spec.mount_angle_error, TRUNCATION * spec.mount_angle_error)]:
        assert np.abs(values).max() <= bound * 1.0001
        assert values.std() == pytest.approx(sigma, rel=0.12)
    # a marker's centre moves by its own placement error plus the print scale times its position
    centres = board.corners.mean(axis=1)[:, :2]  # (3, 2), 20-30 mm from the origin
    spread = np.sqrt(spec.marker_error**2 + (spec.print_scale_error * centres) ** 2)
    np.testing.assert_allclose(offsets.std(axis=0), spread, rtol=0.15)


def test_the_estimator_keeps_the_nominal_calibration_while_the_world_renders_the_drawn_one():
    executive = Executive(load_mission(MISSION))
    world, device = executive.ctx.world, executive.drivers[0]
    camera = world.cameras["arm"]
    spec = device.spec.camera
    assert camera.intrinsics.camera_matrix[0, 0] == spec.focal_px  # what perceive reads
    np.testing.assert_array_equal(device.cam2tcp, spec.mount.matrix())  # what perceive and approach use
    lens, mount = camera.lens.camera_matrix, camera.cam2tool
    assert 0.0 < abs(lens[0, 0] / spec.focal_px - 1) <= TRUNCATION * 1.06 * spec.focal_error
    shift = np.linalg.norm(mount[:3, 3] - spec.mount.matrix()[:3, 3])
    assert 0.0 < shift <= TRUNCATION * np.sqrt(3) * spec.mount_error
    moved = np.abs(world.boards["sirom"].corners - sirom_board_model().corners).max()
    assert 0.0 < moved < 0.001
    # ideal values on request: the world renders the nominal camera
    ideal = [f"robots.arm.camera.{k}=0" for k in ("focal_error", "principal_point_error", "distortion_error",
                                                  "mount_error", "mount_angle_error", "print_scale_error",
                                                  "marker_error", "marker_angle_error")]
    world = Executive(load_mission(MISSION, ideal)).ctx.world
    np.testing.assert_allclose(world.cameras["arm"].lens.camera_matrix, camera.intrinsics.camera_matrix)
    np.testing.assert_allclose(world.cameras["arm"].cam2tool, spec.mount.matrix(), atol=1e-15)
    np.testing.assert_allclose(world.boards["sirom"].corners, sirom_board_model().corners, atol=1e-15)
