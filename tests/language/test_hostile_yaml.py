"""Hostile YAML is refused cleanly: exit code 2, ``file:line:col: message``, no traceback, and in
bounded time and memory — mission files, included files, ``--set`` values, campaign files and
camera calibration files alike.

Most cases run ``orbitree.cli.main`` in this process; the ones that would hang, eat gigabytes or
crash the interpreter before the bounds existed also run the command in a subprocess whose CPU
time, wall time and peak memory are measured (``tests.bounded``).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.cli import main
from orbitree.drivers.bounded_yaml import MAX_DEPTH, MAX_NODES, MAX_TEXT_BYTES
from orbitree.drivers.calibration_io import save_intrinsics
from orbitree.drivers.interfaces import CameraIntrinsics
from orbitree.language.errors import MissionError
from orbitree.language.parser import MAX_TREE_DEPTH, MAX_TREE_NODES
from tests.bounded import run_orbitree

GOOD = "mission: m\nrate_hz: 10\ntree:\n  wait: 1 s\n"


def at(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based line and column of the ``nth`` occurrence of ``needle`` in ``text``."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def laughs(levels: int = 9, top: str = "mission: lol\nrate_hz: 10\ntree: {wait: 1 s}\n") -> str:
    """A "billion laughs": 10 ** ``levels`` strings in a few hundred bytes."""
    lines = [top.rstrip("\n"), 'description: &a0 "lol"']
    lines += [f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def deep(levels: int, top: str = "mission: m\ntree: ") -> str:
    return top + "[" * levels + "]" * levels + "\n"


@dataclass(frozen=True)
class Case:
    id: str
    text: str | bytes
    where: tuple[int, int] | None  # expected line and column in `file`; None: computed by `check`
    words: tuple[str, ...]
    file: str = "m.yaml"
    files: tuple[tuple[str, str | bytes], ...] = ()
    args: tuple[str, ...] = ()


BOMB = laughs()
MERGE_BOMB = "mission: m\nrate_hz: 10\ntree: {wait: 1 s}\nm0: &m0 {k: v}\n" + "".join(
    f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * 10) + f"], k{i}: v}}\n" for i in range(1, 8)
)
RECURSIVE = "mission: m\nrate_hz: 10\ntree: &t {sequence: [*t]}\n"
# 40 levels written out, then an alias of them nested 40 levels deep again
ALIAS_DEEP = ("mission: m\nrate_hz: 10\ntree: {wait: 1 s}\na: &a " + "[" * 40 + "]" * 40 + "\n"
              "b: " + "[" * 30 + "*a" + "]" * 30 + "\n")
HUGE_INT = "1" + "0" * 400
SUBTREE_BOMB = "mission: m\nrate_hz: 10\ntree: {subtree: s0}\nsubtrees:\n" + "".join(
    f"  s{i}: {{sequence: [{{subtree: s{i + 1}}}, {{subtree: s{i + 1}}}]}}\n" for i in range(30)
) + "  s30: {wait: 1 s}\n"
SUBTREE_CHAIN = "mission: m\nrate_hz: 10\ntree: {subtree: s0}\nsubtrees:\n" + "".join(
    f"  s{i}: {{subtree: s{i + 1}}}\n" for i in range(2000)
) + "  s2000: {wait: 1 s}\n"
INCLUDES = (
    *((f"i{i}.yaml", f"tree:\n  sequence: [{{include: i{i + 1}.yaml}}, {{include: i{i + 1}.yaml}}]\n")
      for i in range(25)),
    ("i25.yaml", "tree: {wait: 1 s}\n"),
)

CASES = [
    # ---- aliases: counted as expanded, refused at the alias that passes the bound --------
    # 12,361 nodes before x5's first alias, 11,111 each: the fourth *a4 passes 50,000
    Case("billion-laughs", BOMB, at(BOMB, "*a4", 3),
         ("alias *a4", f"more than {MAX_NODES} nodes", "billion laughs")),
    Case("merge-key-bomb", MERGE_BOMB, None, (f"more than {MAX_NODES} nodes",)),
    Case("recursive-alias", RECURSIVE, at(RECURSIVE, "*t"), ("alias *t", "recursive")),
    Case("alias-nests-too-deep", ALIAS_DEEP, at(ALIAS_DEEP, "*a"), ("alias *a", f"more than {MAX_DEPTH} levels")),
    # ---- nesting, size, characters ---------------------------------------------------------
    Case("flow-nesting-bomb", deep(100_000), (2, 6 + MAX_DEPTH), (f"nested more than {MAX_DEPTH} levels",)),
    Case("file-over-the-size-bound", GOOD + "# " + "x" * MAX_TEXT_BYTES + "\n", (1, 1), ("more than 512 KiB",)),
    Case("control-character", "mission: m\x07\nrate_hz: 10\ntree: {wait: 1 s}\n", (1, 11),
         ("U+0007", "control character")),
    Case("nul-byte-on-line-3", "mission: m\nrate_hz: 10\ntree: {wait: 1\x00 s}\n", (3, 15), ("U+0000",)),
    Case("utf16-file", "mission: m\n".encode("utf-16"), (1, 1), ("not UTF-8", "UTF-16", "save it as UTF-8")),
    Case("non-utf8-in-an-included-file", "mission: m\nrate_hz: 10\ntree:\n  include: block.yaml\n",
         (2, 11), ("not UTF-8", "0xff"), file="block.yaml", files=(("block.yaml", b"tree:\n  wait: 1 \xff\n"),)),
    # ---- numbers no mission means ------------------------------------------------------------
    Case("nan-rate", "mission: m\nrate_hz: .nan\ntree: {wait: 1 s}\n", (2, 10), ("'.nan'", "NaN", "finite")),
    Case("infinite-duration", "mission: m\nrate_hz: 10\nmax_duration: .inf\ntree: {wait: 1 s}\n", (3, 15),
         ("'.inf'", "infinite")),
    Case("float-literal-overflow", "mission: m\nrate_hz: 10\nblackboard: {/x: 1.0e+400}\ntree: {wait: 1 s}\n",
         (3, 18), ("'1.0e+400'", "reads as infinity")),
    Case("quantity-overflow", "mission: m\nrate_hz: 1e400 Hz\ntree: {wait: 1 s}\n", (2, 10),
         ("'1e400 Hz'", "not a finite frequency")),
    Case("quantity-overflow-in-a-leaf", "mission: m\nrate_hz: 10\ntree: {wait: 1e308 h}\n", (3, 14),
         ("'1e308 h'", "not a finite time")),
    Case("integer-of-400-digits", f"mission: m\nrate_hz: 10\nseed: {HUGE_INT}\ntree: {{wait: 1 s}}\n", (3, 7),
         ("does not fit in 64 bits",)),
    Case("integer-of-5000-digits", "mission: m\nrate_hz: 10\nseed: " + "9" * 5000 + "\ntree: {wait: 1 s}\n",
         (3, 7), ("does not fit in 64 bits",)),
    Case("impossible-date", "mission: m\nrate_hz: 10\ndescription: 2024-13-45\ntree: {wait: 1 s}\n", (3, 14),
         ("cannot read '2024-13-45'", "month")),
    Case("merge-of-a-scalar", "mission: m\nrate_hz: 10\n<<: 5\ntree: {wait: 1 s}\n", (3, 5),
         ("'<<' merges a mapping",)),
    # ---- the tree: subtree and include references expand too --------------------------------
    Case("subtree-bomb", SUBTREE_BOMB, None, (f"more than {MAX_TREE_NODES} nodes", "subtree")),
    Case("subtree-chain", SUBTREE_CHAIN, at(SUBTREE_CHAIN, f"{{subtree: s{MAX_TREE_DEPTH}}}"), (
        f"more than {MAX_TREE_DEPTH} nodes deep",)),
    Case("include-bomb", "mission: m\nrate_hz: 10\ntree:\n  include: i0.yaml\n", None,
         (f"more than {MAX_TREE_NODES} nodes",), file="i22.yaml", files=INCLUDES),
    Case("alias-bomb-in-an-included-file", "mission: m\nrate_hz: 10\ntree:\n  include: block.yaml\n",
         at(laughs(top="tree: {wait: 1 s}"), "*a4", 3), ("alias *a4",), file="block.yaml",
         files=(("block.yaml", laughs(top="tree: {wait: 1 s}")),)),
]


def _write(case: Case, directory: Path) -> Path:
    for name, text in case.files:
        (directory / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    mission = directory / "m.yaml"
    mission.write_bytes(case.text if isinstance(case.text, bytes) else case.text.encode())
    return mission


def check(stderr: str, file: Path, where: tuple[int, int] | None, words: tuple[str, ...], text: str = "") -> None:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.startswith(f"{file}:")]
    hits = [line for line in lines if all(word in line for word in words)]
    assert hits, f"no diagnostic in {file} with {words}:\n{stderr[:3000]}"
    line, col = (int(x) for x in hits[0][len(f"{file}:"):].split(":")[:2])
    if where is not None:
        assert (line, col) == where, hits[0]
    assert line >= 1 and col >= 1


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_hostile_mission_is_refused_with_its_position_and_exit_2(case: Case, tmp_path: Path, capsys):
    directory = tmp_path.resolve()
    mission = _write(case, directory)
    assert main(["validate", str(mission)]) == 2
    check(capsys.readouterr().err, directory / case.file, case.where, case.words)


def test_merge_bomb_is_refused_at_a_merged_alias(tmp_path, capsys):
    (tmp_path / "m.yaml").write_text(MERGE_BOMB)
    assert main(["validate", str(tmp_path / "m.yaml")]) == 2
    err = capsys.readouterr().err
    line, col = (int(x) for x in err.split(":")[1:3])
    assert MERGE_BOMB.splitlines()[line - 1][col - 1 :].startswith("*m"), err


def test_subtree_bomb_is_refused_at_a_subtree_reference(tmp_path, capsys):
    (tmp_path / "m.yaml").write_text(SUBTREE_BOMB)
    assert main(["validate", str(tmp_path / "m.yaml")]) == 2
    err = capsys.readouterr().err
    line, col = (int(x) for x in err.split(":")[1:3])
    assert SUBTREE_BOMB.splitlines()[line - 1][col - 1 :].startswith("{subtree: s"), err


@pytest.mark.parametrize(
    ("name", "text"),
    [("billion-laughs", BOMB), ("flow-nesting-bomb", deep(200_000)),
     ("file-of-5-MiB", GOOD + "#" * (5 << 20) + "\n"), ("subtree-bomb", SUBTREE_BOMB)],
)
def test_a_bomb_costs_the_command_under_2_s_and_200_mb(name, text, tmp_path):
    (tmp_path / "m.yaml").write_text(text)
    done = run_orbitree("validate", "m.yaml", cwd=tmp_path, tmp=tmp_path)
    assert done.code == 2, done.stderr
    assert done.stderr.startswith("m.yaml:") and "Traceback" not in done.stderr, done.stderr
    done.assert_bounded()


def test_a_device_that_never_ends_is_refused_by_size(tmp_path, capsys):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    assert main(["validate", "/dev/zero"]) == 2
    assert capsys.readouterr().err.startswith("/dev/zero:1:1: the text holds more: more than 512 KiB")


# ---- what is accepted ------------------------------------------------------------------------


def test_a_utf8_byte_order_mark_is_accepted_and_positions_ignore_it(tmp_path, capsys):
    mission = tmp_path / "m.yaml"
    mission.write_bytes(codecs.BOM_UTF8 + GOOD.encode())
    assert main(["validate", str(mission)]) == 0
    mission.write_bytes(codecs.BOM_UTF8 + b"mission: m\nrate_hz: fast\ntree: {wait: 1 s}\n")
    assert main(["validate", str(mission)]) == 2
    assert f"{mission}:2:10: rate_hz" in capsys.readouterr().err
    mission.write_bytes(codecs.BOM_UTF8 + b"mission: m\x07\n")
    assert main(["validate", str(mission)]) == 2
    assert f"{mission}:1:11: character U+0007" in capsys.readouterr().err


def test_an_aliased_mapping_with_a_merge_reads_the_same_each_time(tmp_path):
    # it was reported as a duplicate key the second time (the merge had been flattened in place)
    text = GOOD + "base: &b {x: 1, y: 2}\none: &one {<<: *b, x: 3}\ntwo: *one\nthree: {<<: [*one, *b], y: 4}\n"
    from orbitree.language.source import load_source

    data, _ = load_source(text, "m.yaml")
    assert data["one"] == data["two"] == {"x": 3, "y": 2}
    assert data["three"] == {"x": 1, "y": 4}  # merged as PyYAML orders them, the written key wins


def test_documents_just_under_the_bounds_load(tmp_path):
    nested = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)  # the mapping and its key are two levels
    items = ", ".join(["0"] * (MAX_NODES - 200))
    (tmp_path / "m.yaml").write_text(GOOD + f"blackboard: {{/deep: {nested}, /many: [{items}]}}\n")
    mission = load_mission(tmp_path / "m.yaml")
    assert len(mission.model.blackboard["/many"]) == MAX_NODES - 200


# ---- --set values --------------------------------------------------------------------------


SET_BOMB = "[&a0 x, " + ", ".join(f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)) + "]"


@pytest.mark.parametrize(
    ("value", "offset", "words"),
    [
        (SET_BOMB, None, ("alias *a", f"more than {MAX_NODES} nodes")),
        ("&t [*t]", 4, ("alias *t", "recursive")),
        ("[" * 100, MAX_DEPTH, (f"nested more than {MAX_DEPTH}",)),
        (".nan", 0, ("NaN",)),
        (HUGE_INT, 0, ("64 bits",)),
        ("a\x07b", 1, ("U+0007",)),
        ("{a: 1, a: 2}", 7, ("duplicate key 'a'",)),
    ],
    ids=["billion-laughs", "recursive", "deep", "nan", "huge-int", "control-character", "duplicate"],
)
def test_set_values_obey_the_bounds_of_files(value, offset, words, tmp_path, capsys):
    (tmp_path / "m.yaml").write_text(GOOD)
    argument = f"description={value}"
    assert main(["validate", str(tmp_path / "m.yaml"), "--set", argument]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    label = f"--set {argument}"
    assert err.startswith(f"{label}:1:"), err
    assert all(word in err for word in words), err
    if offset is not None:  # the column counts in the argument: VALUE starts at column 13
        assert err.startswith(f"{label}:1:{13 + offset}: "), err


def test_a_set_value_with_a_small_alias_is_accepted(tmp_path):
    (tmp_path / "m.yaml").write_text(GOOD)
    mission = load_mission(tmp_path / "m.yaml", ["blackboard./x=[&a [1, 2], *a]"])
    assert mission.model.blackboard["/x"] == [[1, 2], [1, 2]]


def test_a_set_bomb_costs_the_command_under_2_s_and_200_mb(tmp_path):
    (tmp_path / "m.yaml").write_text(GOOD)
    done = run_orbitree("validate", "m.yaml", "--set", f"description={SET_BOMB}", cwd=tmp_path, tmp=tmp_path)
    assert done.code == 2 and done.stderr.startswith("--set description=") and "Traceback" not in done.stderr
    done.assert_bounded()


# ---- campaign files ---------------------------------------------------------------------------


def test_a_campaign_file_bomb_is_refused_at_its_alias(tmp_path, capsys):
    (tmp_path / "m.yaml").write_text(GOOD)
    text = laughs(top="campaign: c\nmission: m.yaml")
    (tmp_path / "c.yaml").write_text(text)
    assert main(["campaign", str(tmp_path / "c.yaml"), "-o", str(tmp_path / "out")]) == 2
    check(capsys.readouterr().err, tmp_path / "c.yaml", at(text, "*a4", 3), ("alias *a4",))
    assert not (tmp_path / "out").exists()


def test_a_campaign_grid_of_billions_of_cases_is_refused_before_any_is_built(tmp_path, capsys):
    (tmp_path / "m.yaml").write_text(GOOD)
    grid = "".join(f"  blackboard./k{i}: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n" for i in range(10))
    text = f"campaign: c\nmission: m.yaml\ngrid:\n{grid}"
    (tmp_path / "c.yaml").write_text(text)
    assert main(["campaign", str(tmp_path / "c.yaml"), "-o", str(tmp_path / "out")]) == 2
    check(capsys.readouterr().err, tmp_path / "c.yaml", (4, 3), ("10000000000 cases", "more than 10000"))


def test_a_campaign_of_too_many_runs_is_refused_at_cycles(tmp_path, capsys):
    (tmp_path / "m.yaml").write_text(GOOD)
    (tmp_path / "c.yaml").write_text("campaign: c\nmission: m.yaml\ncycles: 1000000\n")
    assert main(["campaign", str(tmp_path / "c.yaml"), "-o", str(tmp_path / "out")]) == 2
    check(capsys.readouterr().err, tmp_path / "c.yaml", (3, 9), ("1000000 runs", "more than 100000"))


# ---- camera calibration files -----------------------------------------------------------------

HARDWARE = """\
mission: bench-check
rate_hz: 125 Hz
robots:
  arm:
    driver: ur
    host: 192.168.1.10
    camera: {driver: cv, device: 0, calibration: cam.yaml}
tree:
  wait: 1 s
"""
CALIBRATION_AT = (7, 50)  # the calibration file's name in HARDWARE


def _good_calibration(path: Path) -> None:
    matrix = np.array([[900.0, 0, 640], [0, 900.0, 360], [0, 0, 1]])
    save_intrinsics(path, CameraIntrinsics(matrix, np.zeros(5), 1280, 720))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (laughs(top="camera_matrix: [[900, 0, 640], [0, 900, 360], [0, 0, 1]]\nimage_width: 1280\n"
                    "image_height: 720") + "distortion_coefficients: *a9\n",
         ("malformed YAML: line 9, column", "alias *a4", "billion laughs")),
        ("camera_matrix: " + "[" * 200_000 + "\n", ("malformed YAML: line 1, column 79", "nested more than 64")),
        ("%YAML:1.0\n---\ncamera_matrix: " + "[" * 100_000 + "]" * 100_000 + "\n",
         ("line 3, column 80", "nested more than 64")),
        ("camera_matrix: !!opencv-matrix " + "{a: " * 100_000 + "\n", (f"line 1, column {31 + 4 * 64 + 1}",
                                                                      "nested more than 64")),
        ("<?xml version='1.0'?><opencv_storage>" + "<a>" * 30_000 + "</a>" * 30_000 + "</opencv_storage>",
         ("nested more than 64",)),
        ("camera_matrix: [[900, 0, 640], [0, 900, 360], [0, 0, 1]]\ndistortion_coefficients: [0, 0, 0, 0]\n"
         f"image_width: {HUGE_INT}\nimage_height: 720\n", ("'image_width' must be an integer",)),
        ("camera_matrix: [[900, 0, 640], [0, 900, 360], [0, 0, 1]]\ndistortion_coefficients: [0, 0, 0, 0]\n"
         "image_width: .inf\nimage_height: 720\n", ("'image_width' must be a positive integer",)),
        ("camera_matrix: [[1.0e+999, 0, 640], [0, 900, 360], [0, 0, 1]]\ndistortion_coefficients: [0, 0, 0, 0]\n"
         "image_width: 1280\nimage_height: 720\n", ("'camera_matrix' contains non-finite values",)),
        (b"camera_matrix: [\xff]\n", ("line 1, column 17: not UTF-8",)),
        ("camera_matrix: " + "9" * 5000 + "\n", ("malformed YAML: line 1, column 16", "cannot read")),
        ("# " + "x" * MAX_TEXT_BYTES, ("more than 512 KiB",)),
    ],
    ids=["billion-laughs", "yaml-nesting", "filestorage-nesting", "filestorage-map-nesting", "xml-nesting",
         "huge-int", "infinite-width", "overflowing-float", "non-utf8", "5000-digits", "too-large"],
)
def test_hostile_calibration_file_is_refused_at_the_missions_calibration_key(text, words, tmp_path, capsys):
    mission = tmp_path / "bench.yaml"
    mission.write_text(HARDWARE)
    name = "cam.xml" if isinstance(text, str) and text.startswith("<?xml") else "cam.yaml"
    if name == "cam.xml":
        mission.write_text(HARDWARE.replace("cam.yaml", "cam.xml"))
    (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    assert main(["validate", str(mission)]) == 2
    err = capsys.readouterr().err
    check(err, mission, CALIBRATION_AT, ("robots.arm.camera:", str(tmp_path / name), *words))


def test_a_calibration_file_that_crashed_opencv_costs_the_command_under_2_s_and_200_mb(tmp_path):
    (tmp_path / "bench.yaml").write_text(HARDWARE)
    (tmp_path / "cam.yaml").write_text("%YAML:1.0\n---\ncamera_matrix: " + "[" * 100_000 + "]" * 100_000 + "\n")
    done = run_orbitree("validate", "bench.yaml", cwd=tmp_path, tmp=tmp_path)
    assert done.code == 2, f"exit {done.code} (-11: OpenCV's parser overflowed the stack)\n{done.stderr}"
    assert done.stderr.startswith("bench.yaml:7:50: robots.arm.camera:") and "Traceback" not in done.stderr
    done.assert_bounded()


def test_calibration_files_just_under_the_bounds_still_load(tmp_path):
    _good_calibration(tmp_path / "cam.yaml")
    (tmp_path / "bench.yaml").write_text(HARDWARE)
    load_mission(tmp_path / "bench.yaml")
    plain = ("camera_matrix: &m [[900.0, 0.0, 640.0], [0.0, 900.0, 360.0], [0.0, 0.0, 1.0]]\n"
             "distortion_coefficients: [0.1, -0.05, 0.0, 0.0, 0.0]\nimage_width: 1280\nimage_height: 720\n")
    (tmp_path / "cam.yaml").write_bytes(codecs.BOM_UTF8 + plain.encode())
    load_mission(tmp_path / "bench.yaml")


def test_every_refusal_is_a_mission_error_not_another_exception():
    from orbitree.language.source import load_source

    for text in (BOMB, MERGE_BOMB, RECURSIVE, ALIAS_DEEP, deep(10_000)):
        with pytest.raises(MissionError):
            load_source(text, "m.yaml")


def test_a_mission_refused_at_loading_imports_no_numba(tmp_path: Path):
    """The command's 200 MB bound holds on a fresh install only if nothing that refuses a mission
    imports the compiled kernels' compiler (numba: ~60-110 MB resident, by how its libraries are
    paged in): the simulated world's modules import it when they build a world, not at import."""
    import subprocess
    import sys

    bad = tmp_path / "m.yaml"
    bad.write_text("mission: m\ntree: {wait: {duration: 1 s}}\nfoo: [\n", encoding="utf-8")
    probe = ("import sys\nfrom orbitree.cli import main\ncode = main(['run', sys.argv[1], '--view', 'none'])\n"
             "print(code, 'numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe, str(bad)], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["2", "False"], done.stdout + done.stderr
    assert done.stderr.startswith(f"{bad}:4:"), done.stderr
