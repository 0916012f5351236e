"""The 3-D scene and the camera panel in headless Chromium (WebGL by SwiftShader, the software
renderer), against ``orbitree replay/run --view web`` subprocesses.

Needs Playwright (``pip install -e .[test]``) and Debian's Chromium (``apt-get install
chromium``). ``ORBITREE_SCREENSHOT=1`` writes ``docs/images/web_view_scene.png`` (the docked
arm, replayed) and ``docs/images/web_view_camera.png`` (a live run, with the camera panel), the
README's pictures; ``docs/images/web_view_grapple.png`` the held mockup of the JPL grapple.
"""

from __future__ import annotations

import os
import time

import cv2
import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log
from orbitree.skills.kinematics import UR10E, forward_kinematics

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is missing: pip install -e .[test]")

from tests.views.test_browser import CHROMIUM, ROOT, SIROM, Served  # noqa: E402

SCREENSHOT = ROOT / "docs" / "images" / "web_view_scene.png"
CAMERA_SHOT = ROOT / "docs" / "images" / "web_view_camera.png"
GL_FLAGS = ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: install it with `apt-get install chromium`")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=GL_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1300})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors


@pytest.fixture
def serve():
    started: list[Served] = []

    def start(*args: str) -> Served:
        started.append(Served(*args))
        return started[-1]

    yield start
    for served in started:
        served.close()


@pytest.fixture(scope="module")
def docking_log(tmp_path_factory):
    """The flagship mission, run once to its end (docked), logged."""
    path = tmp_path_factory.mktemp("docking") / "sirom.jsonl"
    result = Executive(load_mission(SIROM), log_path=str(path)).run()
    assert result.status == "SUCCESS", result.reason
    return path


def scene(page) -> dict:
    return page.evaluate("window.orbitree.scene")


def pixels(page, selector: str) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(page.locator(selector).screenshot(), np.uint8), cv2.IMREAD_COLOR)


def logged_q_at(log, index: int) -> list[float]:
    """The joints the log says at record ``index``: its last scene sample with them."""
    return next(r["scene"]["q"]["arm"] for r in reversed(log.ticks[: index + 1]) if "q" in r.get("scene", {}))


def seek(page, index: int) -> None:
    page.evaluate(f"s => {{ s.value = {index}; s.dispatchEvent(new Event('change')); }}",
                  page.query_selector("#slider"))


def test_scene_panel_draws_the_arm_and_target_with_webgl(page, serve, docking_log):
    served = serve("replay", str(docking_log), "--paused")
    page.goto(served.url)
    page.wait_for_function("window.orbitree.scene && window.orbitree.scene.ready", timeout=20_000)
    state = scene(page)
    assert state["error"] is None
    # 6 links, 6 joint housings, tool parts, camera and frustum, target parts, markers, table, ghost
    assert state["objects"] >= 25, state["objects"]
    page.wait_for_function("window.orbitree.scene.frames > 0")
    image = pixels(page, "#scene")
    background = np.array([0xF5, 0xF1, 0xEE])  # #eef1f5 as BGR
    drawn = np.abs(image.astype(int) - background).sum(axis=2) > 30
    assert 0.05 < drawn.mean() < 0.9, drawn.mean()  # something is drawn, not a blank or a failed canvas
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 200  # shaded surfaces, not a flat fill


def test_scene_follows_the_replay_joint_for_joint(page, serve, docking_log):
    log = read_log(docking_log)
    tool = np.eye(4)
    tool[:3, 3] = log.header["scene"]["robots"]["arm"]["tool"][:3]
    served = serve("replay", str(docking_log), "--paused")
    page.goto(served.url)
    page.wait_for_function("window.orbitree.scene && window.orbitree.scene.ready", timeout=20_000)
    shots = []
    for t in (1.0, 16.0):  # searching (the target is out of the camera's view at the start), then approaching
        index = next(k for k, r in enumerate(log.ticks) if r["t"] >= t and "q" in r.get("scene", {}))
        seek(page, index)
        page.wait_for_function(f"document.querySelector('#tick').textContent == '{log.ticks[index]['n']}'")
        page.wait_for_function("window.orbitree.scene.settled")
        state = scene(page)
        q = logged_q_at(log, index)
        assert state["shownQ"]["arm"] == q  # the arm drawn at the log's joints
        # the page's forward kinematics puts the tool where skills.kinematics does
        expected = forward_kinematics(UR10E, np.array(q), tool)[:3, 3]
        np.testing.assert_allclose(state["tcp"]["arm"], expected, atol=1e-6)
        tcp = log.ticks[index].get("bb", {}).get("/robot/arm/tcp_pose")
        if tcp is not None:  # and where the arm reported its TCP in that tick
            np.testing.assert_allclose(state["tcp"]["arm"], np.array(tcp)[:3, 3], atol=5e-6)
        time.sleep(0.2)
        shots.append(pixels(page, "#scene"))
    moved = np.abs(shots[0].astype(int) - shots[1].astype(int)).sum(axis=2) > 30
    assert moved.mean() > 0.01  # the drawing changed with the arm
    # the estimate and the truth of the target, side by side, within a few mm
    state = scene(page)
    truth = next(b for b in log.header["scene"]["bodies"] if b["name"] == "sirom")["pose"]
    assert np.linalg.norm(np.subtract(state["est"]["sirom"][:3], truth[:3])) < 0.005
    # playing on to the end: docked, the hooks' pull on the tool as an arrow
    page.select_option("#speed", "50")
    page.click("#btn-resume")
    page.wait_for_function("window.orbitree.state.control.finished === true", timeout=30_000)
    page.wait_for_function("window.orbitree.scene.settled")
    final = logged_q_at(log, len(log.ticks) - 1)
    assert scene(page)["shownQ"]["arm"] == final
    # follow the arm: the view centres on its tool
    page.select_option("#scene-follow", "arm")
    page.wait_for_function("window.orbitree.scene.follow === 'arm'")
    if os.environ.get("ORBITREE_SCREENSHOT") == "1":  # closer in, on the docked interfaces
        box = page.locator("#scene").bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        for _ in range(4):
            page.mouse.wheel(0, -300)
            time.sleep(0.1)
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        time.sleep(0.3)
        page.locator("#scene-panel").screenshot(path=str(SCREENSHOT))


def test_camera_panel_shows_the_live_image_with_the_markers_found(page, serve):
    # from the SIROM paper's misalignment the board is in view from the start
    start = "robots.arm.start={target: sirom, offset: {xyz: [20 mm, 170 mm, 350 mm], rpy: [-45, 18, 25]}}"
    served = serve("run", str(SIROM.relative_to(ROOT)), "--set", start, "--view", "web", "--realtime", "--paused")
    page.goto(served.url)
    page.wait_for_function("window.orbitree.scene && window.orbitree.scene.ready", timeout=20_000)
    page.click("#btn-resume")
    # an image shown with all three markers and the axes: image, its description and the text
    # beside it read in one go (the live run goes on announcing frames meanwhile)
    shown = page.wait_for_function("""() => { const img = document.querySelector('#camera-img');
        const info = window.orbitree.cameraShown;
        const ok = img && !img.hidden && info && img.dataset.seq === String(info.seq)
                   && img.dataset.markers.split(',').length === 3 && img.dataset.axes === '1';
        return ok && {info, width: img.naturalWidth, text: document.querySelector('#camera-info').innerText};
        }""", timeout=30_000, polling=200).json_value()  # polled: animation frames starve under load
    assert shown["width"] == 640
    info = shown["info"]
    assert sorted(info["markers"]) == [0, 1, 2] and len(info["corners"]) == 3
    assert "board axes: estimate" in shown["text"]
    # the outlines are in the served image's pixels: green where the markers' corners are (the
    # image of that seq, as the page fetched it, though newer ones were made since)
    reply = page.request.get(f"{served.url}camera/arm.jpg?seq={info['seq']}")
    assert reply.status == 200
    image = cv2.imdecode(np.frombuffer(reply.body(), np.uint8), cv2.IMREAD_COLOR)
    b, g, r = cv2.split(image.astype(int))
    green = (g - np.maximum(r, b)) > 80
    assert green.sum() > 50
    corner = np.round(info["corners"][0][0]).astype(int)  # the first marker's first corner (x, y)
    assert green[corner[1] - 4:corner[1] + 5, corner[0] - 4:corner[0] + 5].any()
    # the scene moved with the run meanwhile (live samples reach the page)
    page.wait_for_function("window.orbitree.scene.shownQ.arm && window.orbitree.scene.frames > 5")
    # the arm starts at the paper's misalignment, not at q0: any joint moving away from where it
    # was first drawn shows the live samples arriving
    first = scene(page)["shownQ"]["arm"]
    page.wait_for_function(f"window.orbitree.scene.shownQ.arm.some((q, i) => Math.abs(q - {first}[i]) > 0.01)",
                           timeout=30_000)
    if os.environ.get("ORBITREE_SCREENSHOT") == "1":
        page.click("#btn-pause")
        time.sleep(1.0)
        page.locator("#world").screenshot(path=str(CAMERA_SHOT))


def test_lvlh_panel_appears_only_for_orbit_logs(page, serve, docking_log, tmp_path):
    from tests.views.test_scene import write_orbit_log

    served = serve("replay", str(docking_log), "--paused")
    page.goto(served.url)
    page.wait_for_function("window.orbitree.scene && window.orbitree.scene.ready", timeout=20_000)
    assert page.locator("#lvlh-panel").is_hidden()
    orbit = tmp_path / "orbit.jsonl"
    write_orbit_log(orbit)
    served = serve("replay", str(orbit), "--speed", "50")
    page.goto(served.url)
    page.wait_for_function("window.orbitree.state.control.finished === true", timeout=20_000)
    page.wait_for_function("+document.querySelector('#lvlh').dataset.points >= 121")
    assert page.locator("#lvlh-panel").is_visible() and page.locator("#scene-panel").is_hidden()
    assert page.inner_text("#lvlh-info").startswith("servicer from sat: x ")
    # the ellipse is drawn: twice as wide (V-bar) as it is tall (R-bar)
    image = pixels(page, "#lvlh")
    ys, xs = np.nonzero((np.abs(image.astype(int) - [0xD6, 0x6F, 0x2F]).sum(axis=2)) < 60)  # #2f6fd6
    assert len(xs) > 100
    assert (xs.max() - xs.min()) / (ys.max() - ys.min()) == pytest.approx(2.0, rel=0.1)


GRAPPLE = ROOT / "missions" / "jpl_grapple.yaml"
GRAPPLE_SHOT = ROOT / "docs" / "images" / "web_view_grapple.png"


def test_grapple_scene_shows_both_arms_the_spinning_mockup_and_both_wrenches(page, serve, tmp_path):
    path = tmp_path / "grapple.jsonl"
    result = Executive(load_mission(GRAPPLE), log_path=str(path)).run()
    assert result.status == "SUCCESS", result.reason
    log = read_log(path)
    contact = result.summary["grapple"]["contact_time_s"]
    served = serve("replay", str(path), "--paused")
    page.goto(served.url)
    page.wait_for_function("window.orbitree.scene && window.orbitree.scene.ready", timeout=20_000)
    # before contact: the mockup turns between two samples half a second apart (2 rpm: 6 deg)
    yaws = []
    for t in (1.0, 1.5):
        index = next(k for k, r in enumerate(log.ticks) if r["t"] >= t and "body" in r.get("scene", {}))
        seek(page, index)
        page.wait_for_function(f"document.querySelector('#tick').textContent == '{log.ticks[index]['n']}'")
        page.wait_for_function("window.orbitree.scene.settled")
        quat = scene(page)["bodies"]["mockup"][3:]
        yaws.append(np.degrees(2 * np.arctan2(quat[2], quat[3])))
    assert abs((yaws[1] - yaws[0] + 180) % 360 - 180) == pytest.approx(6.0, abs=0.6)
    # while both tools hold the pads, both wrist forces reach the page (drawn as arrows)
    index = next(k for k, r in enumerate(log.ticks) if r["t"] >= contact + 0.3 and "f" in r.get("scene", {}))
    seek(page, index)
    page.wait_for_function(f"document.querySelector('#tick').textContent == '{log.ticks[index]['n']}'")
    page.wait_for_function("window.orbitree.scene.settled")
    state = scene(page)
    assert set(state["shownQ"]) == {"left", "right"}
    assert set(state["force"]) == {"left", "right"}
    if os.environ.get("ORBITREE_SCREENSHOT") == "1":  # closer in, on the held mockup
        box = page.locator("#scene").bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()  # orbit round to the side, a little from above: both arms and pads in view
        page.mouse.move(box["x"] + box["width"] / 2 + 260, box["y"] + box["height"] / 2 + 90, steps=12)
        page.mouse.up()
        for _ in range(5):
            page.mouse.wheel(0, -300)
            time.sleep(0.1)
        time.sleep(0.3)
        page.locator("#scene-panel").screenshot(path=str(GRAPPLE_SHOT))
