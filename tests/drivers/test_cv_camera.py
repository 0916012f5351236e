"""CvCamera over a fake capture, and calibration files written with cv2.FileStorage."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from orbitree.drivers.calibration_io import (
    CalibrationFileError,
    load_intrinsics,
    save_intrinsics,
)
from orbitree.drivers.cv_camera import CameraOpenError, CvCamera
from orbitree.drivers.interfaces import Camera, CameraIntrinsics, Frame

K = np.array([[800.0, 0.0, 319.5], [0.0, 805.0, 239.5], [0.0, 0.0, 1.0]])
DIST = np.array([0.11, -0.23, 0.001, -0.002, 0.05])


class FakeCapture:
    """Plays back a list of images; ``None`` entries are failed grabs."""

    def __init__(self, images: list[np.ndarray | None], opened: bool = True) -> None:
        self.images = list(images)
        self.opened = opened
        self.props: dict[int, float] = {}
        self.set_calls: list[tuple[int, float]] = []
        self.releases = 0
        self._pending: np.ndarray | None = None

    def isOpened(self) -> bool:
        return self.opened

    def set(self, prop_id: int, value: float) -> bool:
        self.set_calls.append((prop_id, value))
        self.props[prop_id] = value
        return True

    def get(self, prop_id: int) -> float:
        return self.props.get(prop_id, 0.0)

    def grab(self) -> bool:
        self._pending = self.images.pop(0) if self.images else None
        return self._pending is not None

    def retrieve(self) -> tuple[bool, np.ndarray | None]:
        return self._pending is not None, self._pending

    def release(self) -> None:
        self.releases += 1


def _image(value: int, width: int = 640, height: int = 480) -> np.ndarray:
    return np.full((height, width, 3), value, dtype=np.uint8)


def _counter(start: float = 100.0, step: float = 0.5) -> Iterator[float]:
    value = start
    while True:
        yield value
        value += step


@pytest.fixture
def calibration(tmp_path: Path) -> Path:
    path = tmp_path / "cam.yaml"
    save_intrinsics(path, CameraIntrinsics(K, DIST, 640, 480))
    return path


def _camera(calibration: Path, capture: FakeCapture, **kwargs: Any) -> CvCamera:
    clock = _counter()
    kwargs.setdefault("threaded", False)
    return CvCamera(
        "wrist",
        0,
        calibration,
        clock=lambda: next(clock),
        capture_factory=lambda *args: capture,
        **kwargs,
    )


# -- CvCamera ------------------------------------------------------------------------------


def test_init_opens_nothing_but_reads_the_calibration(calibration: Path) -> None:
    def refuse(*_: Any) -> Any:
        raise AssertionError("__init__ must not open the device")

    camera = CvCamera("wrist", "0", calibration, capture_factory=refuse)
    assert camera.source == 0  # "0" means device 0, not a file called 0
    assert camera.intrinsics.camera_matrix == pytest.approx(K)
    assert isinstance(camera, Camera)
    camera.shutdown()


def test_a_bad_calibration_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(CalibrationFileError, match=r"missing\.yaml: calibration file not found"):
        CvCamera("wrist", 0, tmp_path / "missing.yaml")


def test_intrinsics_can_be_given_directly() -> None:
    intrinsics = CameraIntrinsics(K, DIST, 320, 240)
    capture = FakeCapture([_image(0, 320, 240)])
    camera = CvCamera("wrist", 0, intrinsics, threaded=False, capture_factory=lambda *a: capture)
    camera.setup()
    assert camera.intrinsics is intrinsics
    assert (cv2.CAP_PROP_FRAME_WIDTH, 320.0) in capture.set_calls


def test_setup_requests_the_calibrated_size_and_loads_intrinsics(calibration: Path) -> None:
    capture = FakeCapture([_image(1)])
    camera = _camera(calibration, capture, fps=30.0)
    camera.setup()
    assert (cv2.CAP_PROP_FRAME_WIDTH, 640.0) in capture.set_calls
    assert (cv2.CAP_PROP_FRAME_HEIGHT, 480.0) in capture.set_calls
    assert (cv2.CAP_PROP_FPS, 30.0) in capture.set_calls
    assert camera.intrinsics.camera_matrix == pytest.approx(K)
    assert camera.intrinsics.dist_coeffs == pytest.approx(DIST)
    assert isinstance(camera, Camera)


def test_read_returns_stamped_frames_and_none_when_the_grab_fails(calibration: Path) -> None:
    first, second = _image(1), _image(2)
    capture = FakeCapture([_image(0), first, None, second])
    camera = _camera(calibration, capture)
    camera.setup()  # consumes the check frame, stamped 100.0
    frame = camera.read()
    assert isinstance(frame, Frame) and frame.image is first
    assert frame.stamp == 100.5
    assert frame.meta == {"camera": "wrist", "seq": 2, "stamp_source": "grab"}
    assert camera.read() is None
    frame = camera.read()
    assert frame is not None and frame.image is second and frame.stamp == 101.0


def test_grey_frames(calibration: Path) -> None:
    camera = _camera(calibration, FakeCapture([_image(0), _image(90)]), grey=True)
    camera.setup()
    frame = camera.read()
    assert frame is not None and frame.image.shape == (480, 640)
    assert frame.image.dtype == np.uint8 and int(frame.image[0, 0]) == 90


def test_a_resolution_other_than_the_calibrated_one_is_refused(calibration: Path) -> None:
    capture = FakeCapture([_image(0, 1280, 720)])
    camera = _camera(calibration, capture)
    with pytest.raises(CameraOpenError, match=r"1280x720.*cam\.yaml.*640x480"):
        camera.setup()
    assert capture.releases == 1


def test_a_device_that_does_not_open_is_reported(calibration: Path) -> None:
    capture = FakeCapture([], opened=False)
    camera = _camera(calibration, capture)
    with pytest.raises(CameraOpenError, match="cannot open 0"):
        camera.setup()
    assert capture.releases == 1


def test_a_device_that_delivers_nothing_is_reported(calibration: Path) -> None:
    camera = _camera(calibration, FakeCapture([None]))
    with pytest.raises(CameraOpenError, match="no frame"):
        camera.setup()


def test_api_preference_reaches_the_capture(calibration: Path) -> None:
    opened: list[tuple] = []
    capture = FakeCapture([_image(0)])

    def factory(*args: Any) -> FakeCapture:
        opened.append(args)
        return capture

    camera = CvCamera(
        "wrist",
        "rtsp://cam/stream",
        calibration,
        api_preference=cv2.CAP_FFMPEG,
        threaded=False,
        capture_factory=factory,
    )
    camera.setup()
    assert opened == [("rtsp://cam/stream", cv2.CAP_FFMPEG)]


def test_shutdown_releases_once(calibration: Path) -> None:
    capture = FakeCapture([_image(0)])
    camera = _camera(calibration, capture)
    camera.setup()
    camera.shutdown()
    camera.shutdown()
    assert capture.releases == 1
    with pytest.raises(RuntimeError, match="before setup"):
        camera.read()


def test_threaded_read_hands_out_each_new_frame_once(calibration: Path) -> None:
    images = [_image(i) for i in range(4)]
    capture = FakeCapture(list(images))
    camera = _camera(calibration, capture, threaded=True)
    camera.setup()
    try:
        deadline = time.monotonic() + 2.0
        frames = []
        while time.monotonic() < deadline and (not frames or frames[-1].image is not images[-1]):
            frame = camera.read()
            if frame is not None:
                frames.append(frame)
            time.sleep(0.001)
        assert frames and frames[-1].image is images[-1]
        assert len({id(f.image) for f in frames}) == len(frames)  # never the same frame twice
        assert camera.read() is None  # the capture has run dry
    finally:
        camera.shutdown()
    assert capture.releases == 1


class TimestampedCapture(FakeCapture):
    """A fake V4L2 device: each grab sets ``CAP_PROP_POS_MSEC`` to the next driver timestamp."""

    def __init__(self, images: list[np.ndarray | None], stamps_ms: list[float]) -> None:
        super().__init__(images)
        self.stamps_ms = list(stamps_ms)

    def grab(self) -> bool:
        if self.stamps_ms:
            self.props[cv2.CAP_PROP_POS_MSEC] = self.stamps_ms.pop(0)
        return super().grab()


def test_a_v4l2_buffer_timestamp_stamps_the_frame_at_its_capture(calibration: Path) -> None:
    # the grabs return at 100.0 and 100.5 on the camera's clock; the kernel stamped the buffers
    # 40 ms and 25 ms earlier, on the same (monotonic) clock
    capture = TimestampedCapture([_image(0), _image(1)], [99_960.0, 100_475.0])
    camera = _camera(calibration, capture)
    camera.setup()
    frame = camera.read()
    assert frame is not None and frame.stamp == pytest.approx(100.475)
    assert frame.meta["stamp_source"] == "driver"


@pytest.mark.parametrize("position_ms", [33.3, 0.0, -1.0, 100_600.0, 99_000.0])
def test_a_driver_position_that_is_no_capture_time_falls_back_to_the_grab(calibration: Path,
                                                                         position_ms: float) -> None:
    # a video file's position (33.3 ms), none (0, -1), a time after the grab or 1 s before it
    capture = TimestampedCapture([_image(0), _image(1)], [position_ms, position_ms])
    camera = _camera(calibration, capture)
    camera.setup()
    frame = camera.read()
    assert frame is not None and frame.stamp == 100.5 and frame.meta["stamp_source"] == "grab"


def test_the_mission_clock_gets_the_frame_with_its_age_kept(calibration: Path) -> None:
    # captured at 100.475 (driver), read when the camera's clock says 101.0 and the mission's 12.0
    ticks = iter([100.0, 100.5, 101.0])
    capture = TimestampedCapture([_image(0), _image(1)], [99_960.0, 100_475.0])
    camera = CvCamera("wrist", 0, calibration, threaded=False, clock=lambda: next(ticks),
                      mission_clock=lambda: 12.0, capture_factory=lambda *args: capture)
    camera.setup()
    frame = camera.read()
    assert frame is not None
    assert frame.stamp == pytest.approx(12.0 - 0.525) and frame.meta["age_s"] == pytest.approx(0.525)


def test_the_hardware_adapter_stamps_frames_at_capture_on_the_mission_clock(calibration: Path) -> None:
    from orbitree.language.world_spec import RobotSpec
    from orbitree.nodes.context import Context
    from orbitree.runtime.devices import _hardware_device

    spec = RobotSpec(driver="ur", host="192.0.2.1",
                     camera={"driver": "cv", "device": 0, "calibration": str(calibration)})
    ctx = Context(now=7.25)
    device = _hardware_device("arm", spec, ctx, calibration.parent)
    camera = device.camera
    assert isinstance(camera, CvCamera)
    # capture stamps on the monotonic clock (V4L2's), handed out on the tick's mission time
    assert camera._clock is time.monotonic
    assert camera._mission_clock is not None and camera._mission_clock() == 7.25
    ctx.now = 9.5
    assert camera._mission_clock() == 9.5


# -- calibration files ---------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".xml"])
def test_intrinsics_round_trip_through_file_storage(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"cam{suffix}"
    save_intrinsics(path, CameraIntrinsics(K, DIST, 640, 480))
    loaded = load_intrinsics(path)
    assert loaded.camera_matrix == pytest.approx(K)
    assert loaded.dist_coeffs == pytest.approx(DIST)
    assert (loaded.width, loaded.height) == (640, 480)


def test_reads_the_layout_of_opencvs_calibration_sample(tmp_path: Path) -> None:
    path = tmp_path / "out_camera_data.yml"
    storage = cv2.FileStorage(str(path), cv2.FILE_STORAGE_WRITE)
    storage.write("calibration_time", "Thu 01 Jan 2026")
    storage.write("nr_of_frames", 25)
    storage.write("image_width", 1280)
    storage.write("image_height", 720)
    storage.write("board_width", 9)
    storage.write("flags", 0)
    storage.write("camera_matrix", K)
    storage.write("distortion_coefficients", DIST.reshape(5, 1))
    storage.write("avg_reprojection_error", 0.21)
    storage.write("extrinsic_parameters", np.zeros((25, 6)))
    storage.release()
    loaded = load_intrinsics(path)
    assert loaded.camera_matrix == pytest.approx(K) and loaded.dist_coeffs == pytest.approx(DIST)
    assert (loaded.width, loaded.height) == (1280, 720)


def test_reads_plain_yaml_in_three_spellings(tmp_path: Path) -> None:
    common = "image_width: 640\nimage_height: 480\ndistortion_coefficients: [0.1, -0.2, 0, 0]\n"
    spellings = {
        "nested": "camera_matrix: [[800, 0, 319.5], [0, 805, 239.5], [0, 0, 1]]\n",
        "flat": "camera_matrix: [800, 0, 319.5, 0, 805, 239.5, 0, 0, 1]\n",
        "scalars": "fx: 800\nfy: 805\ncx: 319.5\ncy: 239.5\n",
    }
    for name, matrix in spellings.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(common + matrix)
        loaded = load_intrinsics(path)
        assert loaded.camera_matrix == pytest.approx(K), name
        assert loaded.dist_coeffs == pytest.approx([0.1, -0.2, 0.0, 0.0, 0.0])  # k3 padded


def _error(path: Path) -> CalibrationFileError:
    with pytest.raises(CalibrationFileError) as info:
        load_intrinsics(path)
    assert info.value.path == path
    assert str(path) in str(info.value)
    return info.value


def test_missing_file(tmp_path: Path) -> None:
    assert "not found" in _error(tmp_path / "nope.yaml").problem


def test_missing_keys_are_named(tmp_path: Path) -> None:
    path = tmp_path / "partial.yaml"
    storage = cv2.FileStorage(str(path), cv2.FILE_STORAGE_WRITE)
    storage.write("camera_matrix", K)
    storage.write("image_width", 640)
    storage.release()
    problem = _error(path).problem
    assert "'distortion_coefficients'" in problem and "'image_height'" in problem
    assert "'camera_matrix'" not in problem.split("(")[0]


def test_malformed_file_storage(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("%YAML:1.0\n---\ncamera_matrix: !!opencv-matrix\n  rows: 3\n  data: [1, 2,\n")
    assert "FileStorage" in _error(path).problem


def test_malformed_plain_yaml(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("image_width: [640\n")
    assert "malformed YAML" in _error(path).problem
    path.write_text("- just\n- a list\n")
    assert "mapping" in _error(path).problem


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("camera_matrix: [1, 2, 3]\n", "must be 3x3"),
        ("camera_matrix: [[-800, 0, 1], [0, 800, 1], [0, 0, 1]]\n", "focal lengths"),
        ("camera_matrix: [[800, 0, 1], [0, 800, 1], [0, 1, 1]]\n", "last row"),
        ("camera_matrix: [[800, 0, a], [0, 800, 1], [0, 0, 1]]\n", "must be numbers"),
    ],
)
def test_bad_camera_matrix(tmp_path: Path, body: str, words: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "image_width: 640\nimage_height: 480\ndistortion_coefficients: [0, 0, 0, 0, 0]\n" + body
    )
    assert words in _error(path).problem


def test_distortion_models_beyond_five_terms(tmp_path: Path) -> None:
    head = "image_width: 640\nimage_height: 480\ncamera_matrix: [800, 0, 1, 0, 800, 1, 0, 0, 1]\n"
    path = tmp_path / "rational.yaml"
    path.write_text(head + "distortion_coefficients: [0.1, 0.2, 0, 0, 0.3, 0, 0, 0]\n")
    assert load_intrinsics(path).dist_coeffs == pytest.approx([0.1, 0.2, 0, 0, 0.3])
    path.write_text(head + "distortion_coefficients: [0.1, 0.2, 0, 0, 0.3, 0.5, 0, 0]\n")
    assert "non-zero higher-order" in _error(path).problem


def test_bad_image_size(tmp_path: Path) -> None:
    path = tmp_path / "size.yaml"
    path.write_text(
        "image_width: 640.5\nimage_height: 480\n"
        "camera_matrix: [800, 0, 1, 0, 800, 1, 0, 0, 1]\ndistortion_coefficients: [0, 0, 0, 0]\n"
    )
    assert "'image_width' must be a positive integer" in _error(path).problem
