"""Property: whatever a mission file becomes — bytes flipped, lines deleted, duplicated or cut,
values swapped for random or hostile scalars — loading it gives a mission or a ``MissionError``
with positioned diagnostics, never another exception and never a hang.

The files mutated are the shipped missions (with the blocks they include), the tests' missions
and the small campaign. Each example has a deadline; the whole test a timeout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbitree.behaviours.catalogue import load_mission
from orbitree.campaign.spec import load_campaign
from orbitree.language.errors import MissionError

ROOT = Path(__file__).resolve().parents[2]
MISSIONS = sorted([*ROOT.glob("missions/*.yaml"), *ROOT.glob("missions/blocks/*.yaml"),
                   *ROOT.glob("tests/**/*.yaml")])
CAMPAIGN = ROOT / "missions" / "campaigns" / "demo_sweep.yaml"

# Values a mutation writes in place of a scalar: ordinary ones of every kind, and the hostile ones
# the loader must refuse cleanly.
SCALARS = [
    "0", "-1", "3.5", "1e6", "1 s", "-2 mm", "30 deg/s", "10 Hz", "5 N", "true", "null", "~", "''", "x", "[]",
    "{}", "[1, 2, 3]", "{a: 1}", ".nan", ".inf", "-.inf", "1.0e+400", "1e400 mm", "1" + "0" * 400, "9" * 5000,
    "2024-13-45", "*undefined", "&a [*a]", "[" * 80, "{" * 80, "!!python/object/apply:os.system ['true']",
    "!!binary ZZZ", "!!set {a}", "<<: 5", "- x", "a: b: c", "'unclosed", '"\\x"', "\t", "\x07", "\ufeff",
    "subtree: nowhere", "include: nowhere.yaml", "include: report.yaml", "wait: 1e308 h", "sequence: [[[]]]",
]


@st.composite
def mutated(draw, text: str) -> bytes:
    lines = text.splitlines(keepends=True) or [""]
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        how = draw(st.sampled_from(["swap-value", "swap-value", "delete", "duplicate", "insert", "flip", "cut"]))
        if not lines:
            lines = [""]
        line = lines[i]
        if how == "swap-value":
            head, sep, _ = line.partition(": ")
            tail = "\n" if line.endswith("\n") else ""
            value = draw(st.sampled_from(SCALARS) | st.text(max_size=12))
            lines[i] = f"{head}{sep or ': '}{value}{tail}"
        elif how == "delete":
            del lines[i]
        elif how == "duplicate":
            lines.insert(i, line)
        elif how == "insert":
            indent = " " * draw(st.integers(0, 8))
            lines.insert(i, f"{indent}{draw(st.sampled_from(['k', '- ', 'tree', 'name']))}: "
                            f"{draw(st.sampled_from(SCALARS))}\n")
        elif how == "flip":
            data = bytearray("".join(lines).encode())
            if data:
                k = draw(st.integers(0, len(data) - 1))
                data[k] ^= 1 << draw(st.integers(0, 7))
            return bytes(data)
        else:
            data = "".join(lines).encode()
            return data[: draw(st.integers(0, len(data)))]
    return "".join(lines).encode()


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of the missions folder, so that mutated files find the blocks they include."""
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(ROOT / "missions", root / "missions")
    return root


def _loads_or_refuses(load, path: Path) -> None:
    try:
        load(path)
    except MissionError as error:
        assert error.diagnostics, "a MissionError without diagnostics"
        for d in error.diagnostics:
            assert d.line >= 1 and d.col >= 1 and d.message, d


@pytest.mark.timeout(60)
@pytest.mark.parametrize("source", MISSIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_mutated_mission_loads_or_is_refused_with_positions(source: Path, tree: Path):
    text = source.read_text(encoding="utf-8")
    target = tree / "missions" / f"fuzzed_{source.name}"
    (tree / "missions" / "report.yaml").write_text("tree: {wait: 1 s}\n")  # 'include: report.yaml'

    @settings(max_examples=max(150 // len(MISSIONS), 25), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutated(text))
    def check(data: bytes) -> None:
        target.write_bytes(data)
        _loads_or_refuses(load_mission, target)

    check()


@pytest.mark.timeout(60)
def test_a_mutated_campaign_loads_or_is_refused_with_positions(tree: Path):
    text = CAMPAIGN.read_text(encoding="utf-8")
    target = tree / "missions" / "campaigns" / "fuzzed.yaml"

    @settings(max_examples=40, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutated(text))
    def check(data: bytes) -> None:
        target.write_bytes(data)
        _loads_or_refuses(load_campaign, target)

    check()
