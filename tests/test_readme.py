"""Every YAML block and every command block of README.md is run here, so the README cannot drift
from the tool: a mission block loads (a fragment, merged into the flagship), a campaign block
loads, and each line of a ``sh`` block runs and exits 0 (``make run``/``make test`` as dry runs:
the suite cannot run itself, and ``make run`` is the flagship, run here anyway). Blocks without a
language are synopses and sample output, not commands.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from orbitree.behaviours.catalogue import load_mission
from orbitree.campaign.spec import load_campaign
from orbitree.drivers.calibration_io import load_intrinsics

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
COMMAND_TIMEOUT_S = 240


def blocks(language: str) -> list[tuple[int, str]]:
    """(line, text) of each fenced block in ``language``."""
    text = README.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M):
        found.append((text[: match.start()].count("\n") + 1, match.group(1)))
    return found


def commands() -> list[tuple[int, str]]:
    """Each command of the ``sh`` blocks, continuation lines joined, comments dropped."""
    return [(line, command) for line, block in command_blocks() for command in block]


def command_blocks() -> list[tuple[int, list[str]]]:
    """The commands of each ``sh`` block, in order: a block's commands may use what earlier ones wrote."""
    out = []
    for line, body in blocks("sh"):
        listed = [re.sub(r"\s+#.*$", "", c).strip() for c in body.replace("\\\n", " ").splitlines()]
        out.append((line, [c for c in listed if c]))
    return out


def test_readme_has_the_blocks_this_test_runs():
    assert len(blocks("yaml")) >= 4 and len(commands()) >= 10


@pytest.mark.parametrize(("line", "body"), blocks("yaml"), ids=lambda v: str(v) if isinstance(v, int) else "")
def test_yaml_block_loads(line, body, tmp_path):
    data = yaml.safe_load(body)
    if data is None:  # only a comment (the editor's schema line)
        assert body.lstrip().startswith("#"), f"README.md:{line}: an empty YAML block"
        return
    if "camera_matrix" in data:  # a camera calibration file
        (tmp_path / "camera.yaml").write_text(body, encoding="utf-8")
        assert load_intrinsics(tmp_path / "camera.yaml").width == data["image_width"]
        return
    if data.get("robots", {}).get("arm", {}).get("driver") == "ur":  # beside README's calibration file
        calibration = next(b for _, b in blocks("yaml") if "camera_matrix:" in b)
        (tmp_path / "camera.yaml").write_text(calibration, encoding="utf-8")
        (tmp_path / "bench.yaml").write_text(body, encoding="utf-8")
        mission = load_mission(tmp_path / "bench.yaml")
        assert mission.model.robots["arm"].driver == "ur" and mission.warnings == []
        return
    if "campaign" in data:
        path = ROOT / "missions" / "campaigns" / f"readme_{line}.yaml"  # its paths are relative to there
        path.write_text(body, encoding="utf-8")
        try:
            campaign = load_campaign(path)
        finally:
            path.unlink()
        assert campaign.cases, f"README.md:{line}"
        return
    if "mission" in data:
        path = ROOT / "missions" / f"readme_{line}.yaml"  # it includes blocks/ relative to missions/
        path.write_text(body, encoding="utf-8")
        try:
            mission = load_mission(path)
        finally:
            path.unlink()
        assert mission.warnings == [], f"README.md:{line}: {mission.warnings}"
        return
    # a fragment (faults:, substitute:) of the flagship mission
    path = tmp_path / "fragment.yaml"
    flagship = (ROOT / "missions" / "sirom_dock.yaml").read_text(encoding="utf-8")
    path.write_text(flagship + "\n" + body, encoding="utf-8")
    assert load_mission(path).model.mission == "sirom-dock"


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "ORBITREE_BENCH_SMOKE": "1"}
    argv = shlex.split(command)
    if argv[:1] == ["make"]:
        argv = ["make", "-n", *argv[1:]]
    if argv[0].startswith(".venv/bin/"):  # whatever environment runs the tests
        argv[0] = str(BIN / Path(argv[0]).name)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)


@pytest.mark.timeout(900)  # many commands, each bounded by COMMAND_TIMEOUT_S; the suite's 300 s is per test
def test_every_command_runs(tmp_path):
    work = tmp_path / "work"  # commands write run.json, report/ ... here, reading the repository's files
    work.mkdir()
    for name in ("missions", "benchmarks", "Makefile", "pyproject.toml", "orbitree", "skills", "behaviours",
                 "drivers", "examples"):
        (work / name).symlink_to(ROOT / name)
    def run_block(line: int, block: list[str]) -> list[tuple[int, str, subprocess.CompletedProcess]]:
        return [(line, c, _run(c, work)) for c in block]  # in order: run -> report, tree -> import

    with ThreadPoolExecutor(max_workers=2) as pool:  # blocks side by side
        futures = [pool.submit(run_block, line, block) for line, block in command_blocks()]
        results = [row for future in futures for row in future.result()]
    failed = [f"README.md:{line}: {c}\n  exit {r.returncode}: {r.stderr.strip()[-800:]}"
              for line, c, r in results if r.returncode != 0]
    assert failed == [], "\n".join(failed)
    by_command = {c: r for _, c, r in results}
    dry = "\n".join(r.stdout for c, r in by_command.items() if c.startswith("make "))
    assert "orbitree run missions/sirom_dock.yaml" in dry and "pytest" in dry
    assert (work / "report" / "index.md").is_file() and (work / "run.json").is_file()
    faulty = next(r for c, r in by_command.items() if "pose_noise" in c)
    assert "never injected" not in faulty.stderr  # the README's fault example does inject its fault
