"""The real page in headless Chromium, against ``orbitree run/replay --view web`` subprocesses.

Needs Playwright's Python package (``pip install -e .[test]``) and Debian's Chromium
(``apt-get install chromium``, used through ``executable_path``; no ``playwright install``).
Set ``ORBITREE_SCREENSHOT=1`` to write ``docs/web_view.png`` (the README's picture).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.nodes.build import build_tree
from orbitree.nodes.context import Context
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import read_log

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is missing: pip install -e .[test]")

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "missions" / "demo_checkout.yaml"
SIROM = ROOT / "missions" / "sirom_dock.yaml"
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = ROOT / "docs" / "web_view.png"


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(
            f"no Chromium at {CHROMIUM}: install it with `apt-get install chromium` "
            "(and Playwright with `pip install -e .[test]`) to run the browser tests"
        )
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors  # no JavaScript error on the page


class Served:
    """An ``orbitree`` subprocess serving the web view on a free port."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "orbitree.cli", *args, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        line = self.proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        if found is None:
            self.proc.kill()
            raise AssertionError(f"no URL in {line!r}: {self.proc.stderr.read()}")
        self.url = found[0]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=20)
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture
def serve():
    started: list[Served] = []

    def start(*args: str) -> Served:
        started.append(Served(*args))
        return started[-1]

    yield start
    for served in started:
        served.close()


def node(page, name: str):
    return page.locator(f'g.node[data-name="{name}"]')


def status_of(page, name: str) -> str:
    return node(page, name).get_attribute("data-status")


def tick(page) -> int:
    return int(page.inner_text("#tick"))


def wait_status(page, name: str, status: str, timeout: float = 15_000) -> None:
    page.wait_for_selector(f'g.node[data-name="{name}"][data-status="{status}"]', timeout=timeout)


def bb_value(page, key: str) -> str:
    return page.inner_text(f'#bb tr[data-key="{key}"] td.value')


def test_live_page_shows_the_tree_running_then_success_blackboard_and_pause_step_resume(page, serve, tmp_path):
    log = tmp_path / "run.jsonl"
    settle = "tree.sequence.children.1.parallel.children.1.wait.duration=8 s"  # time to pause in, loaded or not
    served = serve("run", str(DEMO), "--set", settle, "--view", "web", "--realtime", "--paused", "--log", str(log))
    page.goto(served.url)
    # the tree: every node, drawn with its name and kind, all idle before the first tick
    page.wait_for_selector("g.node")
    nodes = read_nodes(page)
    assert len(nodes) == 18 and nodes[0] == ("checkout", "sequence", "INVALID")
    assert ("camera warm-up", "wait", "INVALID") in nodes and ("warm-up", "parallel", "INVALID") in nodes
    page.wait_for_selector("#run-state:has-text('paused before tick 0')")

    # a breakpoint on the soak loop, set before anything runs
    node(page, "three soak cycles").click()
    page.check("#breakpoint")
    page.wait_for_selector('g.node[data-name="three soak cycles"] .bp:visible')

    page.click("#btn-resume")
    wait_status(page, "camera warm-up", "RUNNING")
    assert bb_value(page, "/checkout/phase") == "warm-up"
    wait_status(page, "camera warm-up", "SUCCESS")  # at 1.5 s, while the mission goes on
    assert status_of(page, "wrist sensor settle") == "RUNNING"

    # pause: the tick count stops
    page.click("#btn-pause")  # (not the 'paused before tick 0' of the start, should the page lag)
    page.wait_for_function(
        "/^paused before tick [1-9]\\d*$/.test(document.querySelector('#run-state').textContent)")
    held = re.fullmatch(r"paused before tick (\d+)", page.inner_text("#run-state"))
    assert held
    paused_at = int(held[1]) - 1  # the last tick ran; its update may reach the page just after the hold's
    page.wait_for_function(f"document.querySelector('#tick').textContent == '{paused_at}'")
    time.sleep(0.6)
    assert tick(page) == paused_at
    # step: exactly one more tick
    page.click("#btn-step")
    page.wait_for_function(f"document.querySelector('#tick').textContent == '{paused_at + 1}'")
    time.sleep(0.4)
    assert tick(page) == paused_at + 1
    # resume: it runs on, until the breakpoint stops it with the soak loop RUNNING
    page.click("#btn-resume")
    page.wait_for_selector("#run-state:has-text(\"breakpoint 'three soak cycles'\")")
    assert status_of(page, "three soak cycles") == "RUNNING"
    stopped_at = tick(page)
    assert stopped_at > paused_at + 1
    page.uncheck("#breakpoint")
    page.click("#btn-resume")
    page.wait_for_function(
        "document.querySelector('#bb tr[data-key=\"/checkout/phase\"] td.value').textContent == 'soaked'"
    )
    page.wait_for_selector("#run-state:has-text('SUCCESS')", timeout=15_000)
    assert served.proc.wait(timeout=20) == 0
    assert status_of(page, "checkout") == "SUCCESS"
    # every status change of the run reached the page, in order
    assert page_trace(page) == read_log(log).status_trace()


def test_replay_reproduces_the_status_sequence_with_slider_and_speed(page, serve, tmp_path):
    log_path = tmp_path / "demo.jsonl"
    Executive(load_mission(DEMO), log_path=str(log_path)).run()
    log = read_log(log_path)
    served = serve("replay", str(log_path), "--speed", "4")
    page.goto(served.url)
    page.wait_for_selector("#replay-bar:not([hidden])")
    page.wait_for_function("window.orbitree.state.control.finished === true", timeout=20_000)
    assert page_trace(page) == log.status_trace()
    assert page.inner_text("#run-state") == "end of log: SUCCESS"
    assert [(name, status) for name, _, status in read_nodes(page)] == final_statuses(log)
    # the slider: back to the record at t = 1 s, where the warm-up was still running
    index = next(k for k, record in enumerate(log.ticks) if record["t"] >= 1.0)
    page.evaluate(
        f"s => {{ s.value = {index}; s.dispatchEvent(new Event('change')); }}",
        page.query_selector("#slider"),
    )
    page.wait_for_function(f"document.querySelector('#tick').textContent == '{log.ticks[index]['n']}'")
    wait_status(page, "camera warm-up", "RUNNING")
    assert status_of(page, "checkout") == "RUNNING"
    assert page_trace(page) == [c for c in log.status_trace() if c[0] <= log.ticks[index]["n"]]
    # and play on from there at another speed
    page.select_option("#speed", "10")
    page.click("#btn-resume")
    wait_status(page, "camera warm-up", "SUCCESS")
    page.wait_for_function("window.orbitree.state.control.finished === true", timeout=20_000)
    assert page_trace(page) == log.status_trace()


@pytest.mark.skipif(not SIROM.exists(), reason="missions/sirom_dock.yaml is not there")
def test_docking_mission_tree_with_plots(page, serve):
    served = serve("run", str(SIROM.relative_to(ROOT)), "--view", "web", "--paused")
    page.goto(served.url)
    page.wait_for_selector("g.node")
    mission = load_mission(SIROM)
    tree, recovery = build_tree(mission.root, Context()), build_tree(mission.recovery, Context())
    # the mission tree, then the safety recovery tree ('safe retreat') as a second root
    expected = [(spec.name, spec.kind) for spec in (*tree.specs, *recovery.specs)]
    assert [(name, kind) for name, kind, _ in read_nodes(page)] == expected
    assert expected[len(tree.specs)] == ("safe retreat", "sequence")
    page.click("#btn-step")
    page.wait_for_function("document.querySelector('#tick').textContent == '0'")
    assert page.locator('g.node[data-status="RUNNING"]').count() >= 2  # the root and a leaf
    if os.environ.get("ORBITREE_SCREENSHOT") == "1":
        page.click("#btn-resume")
        page.wait_for_function("window.orbitree.state.tick.t > 6", timeout=120_000)
        page.click("#btn-pause")
        page.wait_for_selector("#run-state:has-text('paused before tick')")
        page.click("#btn-fit")  # a tree too big to show whole: the view goes to where it runs
        page.locator('g.node[data-kind="approach"][data-status="RUNNING"]').last.click()
        page.wait_for_function("+document.querySelector('#plot-servo-t').dataset.points > 100")
        time.sleep(0.5)
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT))


def read_nodes(page) -> list[tuple[str, str, str]]:
    return [
        tuple(x)
        for x in page.eval_on_selector_all(
            "g.node", "els => els.map(e => [e.dataset.name, e.dataset.kind, e.dataset.status])"
        )
    ]


def page_trace(page) -> list[tuple[int, int, str]]:
    return [tuple(x) for x in page.evaluate("window.orbitree.trace")]


def final_statuses(log) -> list[tuple[str, str]]:
    final: dict[int, str] = {}
    for _, i, status in log.status_trace():
        final[i] = status
    return [(n["name"], final.get(n["id"], "INVALID")) for n in log.header["nodes"]]


@pytest.mark.skipif(not SIROM.exists(), reason="missions/sirom_dock.yaml is not there")
def test_labels_are_legible_at_1600x1000_and_a_leafs_feedback_is_shown_whole(page, serve):
    page.set_viewport_size({"width": 1600, "height": 1000})
    served = serve("run", str(SIROM.relative_to(ROOT)), "--view", "web", "--paused")
    page.goto(served.url)
    page.wait_for_selector("g.node")
    for n in range(3):  # one step at a time: a step asked for while one is under way is not queued
        page.click("#btn-step")
        page.wait_for_function(f"document.querySelector('#tick').textContent == '{n}'")
    # the fitted 41-node tree: every name drawn at least ~12 px tall on screen
    heights = page.eval_on_selector_all("g.node text.name",
                                        "els => els.map(e => e.getBoundingClientRect().height)")
    visible = [h for h in heights if h > 0]
    assert len(visible) >= 10 and min(visible) >= 12.0, sorted(visible)[:5]
    # the running leaf's feedback has its own line, and the whole text in its tooltip
    shown = page.evaluate("""() => [...document.querySelectorAll('g.node[data-status="RUNNING"]')]
        .map(g => [+g.dataset.id, g.querySelector('text.feedback').textContent,
                   g.querySelector('title').textContent.split('\\n').slice(1).join('\\n')])""")
    feedback = page.evaluate("window.orbitree.state.feedback")
    leaves = [(i, line, tip) for i, line, tip in shown if feedback[i]]
    assert leaves, shown
    for i, line, tip in leaves:
        assert tip == feedback[i] and line and feedback[i].startswith(line.rstrip("…"))
