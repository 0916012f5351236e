"""Mission logs that were cut off, corrupted or edited by hand: ``orbitree replay`` and ``orbitree
report`` refuse them with ``run.jsonl:LINE: message`` and exit code 2 — never a traceback, a hang
or unbounded memory — and every log ``read_log`` accepts can be replayed and reported.

The logs are one real run (the demo mission, 226 lines), each broken in one place.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbitree.behaviours.catalogue import load_mission
from orbitree.cli import main
from orbitree.report.run import capture_moment, docking_intervals, series
from orbitree.runtime.executive import Executive
from orbitree.runtime.recorder import MAX_LOG_LINE_BYTES, Log, LogError, read_log
from orbitree.views.replay import snapshots
from orbitree.views.state import ViewState, encode
from tests.bounded import run_orbitree

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "missions" / "demo_checkout.yaml"


@pytest.fixture(scope="module")
def demo_lines(tmp_path_factory) -> list[bytes]:
    log = tmp_path_factory.mktemp("demo") / "run.jsonl"
    assert Executive(load_mission(DEMO), log_path=str(log)).run().status == "SUCCESS"
    return log.read_bytes().splitlines(keepends=True)


def record(line: bytes) -> dict:
    return json.loads(line)


def line_of(record_: dict) -> bytes:
    return json.dumps(record_).encode() + b"\n"


def edit(index: int, change: Callable[[dict], None]) -> Callable[[list[bytes]], list[bytes]]:
    """Change the record on line ``index + 1``."""

    def apply(lines: list[bytes]) -> list[bytes]:
        data = record(lines[index])
        change(data)
        return [*lines[:index], line_of(data), *lines[index + 1 :]]

    return apply


def replace(index: int, raw: bytes) -> Callable[[list[bytes]], list[bytes]]:
    return lambda lines: [*lines[:index], raw, *lines[index + 1 :]]


def setter(**fields) -> Callable[[dict], None]:
    return lambda data: data.update(fields)


TICK = b'{"type":"tick","n":1,"t":0.02,"bb":{"/x":'  # a tick record, up to its value


def node_parent(i: int, parent) -> Callable[[dict], None]:
    return lambda data: data["nodes"][i].update(parent=parent)


@dataclass(frozen=True)
class Case:
    id: str
    mutate: Callable[[list[bytes]], list[bytes]]
    line: int | None  # the line the error names; None: the whole file
    words: tuple[str, ...]


CASES = [
    Case("bad-json-mid-file", replace(4, b'{"type":"tick","n":\n'), 5, ("not a JSON record",)),
    Case("json-list-instead-of-a-record", replace(4, b"[1, 2]\n"), 5, ("expected a JSON object, got a list",)),
    Case("non-utf8-byte", replace(4, b'{"type":"tick","n":3,"t":0.06,"feedback":{"3":"\xff"}}\n'), 5,
         ("not a JSON record", "utf-8")),
    Case("status-id-out-of-range", edit(2, setter(status={"99": "RUNNING"})), 3, ("'99' is not a node id",)),
    Case("negative-status-id", edit(2, setter(status={"-1": "RUNNING"})), 3, ("'-1' is not a node id",)),
    Case("status-id-of-5000-digits", edit(2, setter(status={"9" * 5000: "RUNNING"})), 3, ("not a node id",)),
    Case("unknown-status", edit(2, setter(status={"0": "DONE"})), 3, ("'DONE' is not one of",)),
    Case("feedback-not-a-string", edit(2, setter(feedback={"0": [1]})), 3, ("feedback of node 0",)),
    Case("tick-number-a-string", edit(2, setter(n="1")), 3, ("'n' must be a tick number",)),
    Case("tick-number-missing", edit(2, lambda d: d.pop("n")), 3, ("'n' must be a tick number",)),
    Case("time-missing", edit(2, lambda d: d.pop("t")), 3, ("'t' must be a mission time",)),
    Case("time-nan", replace(2, b'{"type":"tick","n":1,"t":NaN}\n'), 3, ("'t' must be a mission time", "nan")),
    Case("time-overflowing", replace(2, b'{"type":"tick","n":1,"t":1e400}\n'), 3, ("'t' must be", "inf")),
    Case("time-of-a-million-years", edit(2, setter(t=3e13)), 3, ("'t' must be a mission time",)),
    Case("time-goes-back", edit(3, setter(t=0.001)), 4, ("never go back", "tick 1 at t = 0.02")),
    Case("tick-ms-a-string", edit(2, setter(tick_ms="fast")), 3, ("'tick_ms' must be a finite number",)),
    Case("bb-a-list", edit(2, setter(bb=[1, 2])), 3, ("'bb' must be an object",)),
    Case("events-of-strings", edit(2, setter(events=["boom"])), 3, ("'events' must be a list of objects",)),
    Case("integer-of-5000-digits", replace(2, TICK + b"9" * 5000 + b"}}\n"),
         3, ("5000 digits",)),
    Case("integer-of-30-digits", replace(2, TICK + b"9" * 30 + b"}}\n"),
         3, ("30 digits",)),
    Case("value-nested-100000-deep", replace(2, TICK + b"[" * 100_000
                                             + b"]" * 100_000 + b"}}\n"), 3, ("nested too deep",)),
    Case("line-of-5-MiB", replace(2, TICK + b'"' + b"x" * (5 << 20) + b'"}}\n'),
         3, ("longer than 4 MiB",)),
    Case("unknown-record-type", edit(2, setter(type="tik")), 3, ("unknown record type 'tik'",)),
    Case("record-after-the-footer", lambda lines: [*lines, lines[2]], 227, ("after the footer",)),
    Case("footer-without-reason", edit(225, lambda d: d["summary"].pop("reason")), 226,
         ("'reason' must be a string",)),
    Case("node-timings-not-objects", edit(225, setter(node_tick_us={"0": 1.5})), 226, ("'node_tick_us'",)),
    Case("first-record-a-tick", lambda lines: lines[1:], 1, ("not an orbitree log", "'tick'")),
    Case("other-format", edit(0, setter(format="orbitree-log/9")), 1, ("not an orbitree log", "orbitree-log/9")),
    Case("header-node-its-own-parent", edit(0, node_parent(0, 0)), 1, ("nodes[0]", "'parent'")),
    Case("header-node-parent-later", edit(0, node_parent(1, 5)), 1, ("nodes[1]", "'parent'")),
    Case("header-node-ids-shuffled", edit(0, lambda d: d["nodes"].reverse()), 1, ("nodes[0]", "'id' must be 0")),
    Case("header-nodes-missing", edit(0, lambda d: d.pop("nodes")), 1, ("'nodes' must be a list",)),
    Case("header-params-a-list", edit(0, lambda d: d["nodes"][1].update(params=[1])), 1, ("'params'",)),
    Case("header-phases-of-numbers", edit(0, setter(phases=[1, 2])), 1, ("'phases'",)),
    Case("empty-file", lambda lines: [], None, ("no header",)),
    Case("blank-lines-only", lambda lines: [b"\n", b"  \n"], None, ("no header",)),
]


def _write(case: Case, lines: list[bytes], directory: Path) -> Path:
    path = directory / "run.jsonl"
    path.write_bytes(b"".join(case.mutate(lines)))
    return path


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_broken_log_is_refused_with_its_line(case: Case, demo_lines, tmp_path):
    path = _write(case, demo_lines, tmp_path)
    with pytest.raises(LogError) as caught:
        read_log(path)
    error = caught.value
    assert error.line == case.line, str(error)
    prefix = f"{path}:{case.line}: " if case.line else f"{path}: "
    assert str(error).startswith(prefix), str(error)
    assert all(word in str(error) for word in case.words), str(error)


@pytest.mark.parametrize("command", ["replay", "report"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES[::3]])
def test_replay_and_report_exit_2_naming_the_line(case: Case, command: str, demo_lines, tmp_path, capsys):
    path = _write(case, demo_lines, tmp_path)
    argv = ["replay", str(path), "--view", "terminal"] if command == "replay" else \
        ["report", str(path), "-o", str(tmp_path / "report")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith(f"{path}:{case.line}: " if case.line else f"{path}: "), err
    assert not (tmp_path / "report").exists()


def test_a_line_cut_off_by_a_crash_is_tolerated_only_at_the_end(demo_lines, tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(demo_lines[:50]) + demo_lines[50][:30])
    log = read_log(path)
    assert log.truncated and len(log.ticks) == 49 and log.footer is None
    path.write_bytes(b"".join(demo_lines[:50]) + demo_lines[50][:30] + b"\n" + b"".join(demo_lines[51:]))
    with pytest.raises(LogError, match=r"run.jsonl:51: not a JSON record"):
        read_log(path)


def test_windows_line_endings_and_unknown_fields_are_read(demo_lines, tmp_path):
    path = tmp_path / "run.jsonl"
    lines = [line.rstrip(b"\n") + b"\r\n" for line in demo_lines]
    lines[3] = line_of({**record(lines[3]), "note": "edited by hand"})
    path.write_bytes(b"".join(lines))
    log = read_log(path)
    assert len(log.ticks) == 224 and log.footer is not None and not log.truncated


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("line-of-64-MiB", TICK + b'"' + b"x" * (64 << 20) + b'"}}\n'),
        ("nested-100000-deep", TICK + b"[" * 100_000 + b"]" * 100_000 + b"}}\n"),
        ("integer-of-4000-digits", TICK + b"9" * 4000 + b"}}\n"),
    ],
)
def test_a_hostile_log_line_costs_replay_under_2_s_and_200_mb(name, raw, demo_lines, tmp_path):
    (tmp_path / "run.jsonl").write_bytes(demo_lines[0] + demo_lines[1] + raw + b"".join(demo_lines[3:]))
    done = run_orbitree("replay", "run.jsonl", "--view", "terminal", cwd=tmp_path, tmp=tmp_path)
    assert done.code == 2, done.stderr
    assert done.stderr.startswith("run.jsonl:3: ") and "Traceback" not in done.stderr, done.stderr
    done.assert_bounded()


def test_the_line_bound_is_above_any_line_orbitree_writes(demo_lines):
    assert max(map(len, demo_lines)) * 50 < MAX_LOG_LINE_BYTES


# ---- every log read_log accepts can be replayed and reported ----------------------------------


def consume(log: Log) -> None:
    """What the replays, the web view and the report do with a log, short of drawing figures."""
    state = ViewState(log.header, "replay")
    state.set_node_us((log.footer or {}).get("node_tick_us") or {})
    for record_ in log.ticks:
        state.apply(record_["n"], record_["t"], record_.get("tick_ms", 0.0), record_.get("status"),
                    record_.get("feedback"), record_.get("bb"), record_.get("events"))
        encode(state.update_message({}) or {})
    state.finish((log.footer or {}).get("summary") or {"status": "TRUNCATED"})
    encode(state.init_message({}))
    for _ in snapshots(log):
        pass
    capture_moment(log)
    docking_intervals(log)
    series(log, "/servo/error", (6,))
    log.status_trace()


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(st.text(max_size=3),
                                                                                   st.integers(), max_size=2),
)
FIELDS = ("n", "t", "tick_ms", "status", "feedback", "bb", "events", "cmd", "type", "summary", "node_tick_us",
          "nodes", "phases", "mission", "format")


MUTATIONS = ("field", "node-field", "status", "delete", "duplicate", "swap", "flip", "cut")


@st.composite
def broken_logs(draw, lines: list[bytes]) -> bytes:
    lines = list(lines)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(MUTATIONS))
        if how in ("field", "node-field", "status"):
            try:
                data = record(lines[i])
            except ValueError:  # a line an earlier mutation broke
                continue
            if not isinstance(data, dict):
                continue
            nodes = data.get("nodes")
            editable = isinstance(nodes, list) and nodes and all(isinstance(n, dict) for n in nodes)
            if how == "node-field" and editable:
                target = draw(st.sampled_from(nodes))
                target[draw(st.sampled_from(["id", "name", "kind", "parent", "params"]))] = draw(SCALARS)
            elif how == "status":
                data["status"] = {draw(st.sampled_from(["0", "17", "18", "-1", "x"])): draw(
                    st.sampled_from(["RUNNING", "SUCCESS", "", "running"]))}
            else:
                data[draw(st.sampled_from(FIELDS))] = draw(SCALARS)
            lines[i] = json.dumps(data).encode() + b"\n"
        elif how == "delete":
            del lines[i]
        elif how == "duplicate":
            lines.insert(i, lines[i])
        elif how == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif how == "flip":
            line = bytearray(lines[i])
            k = draw(st.integers(0, len(line) - 1))
            line[k] ^= 1 << draw(st.integers(0, 7))
            lines[i] = bytes(line)
        else:
            text = b"".join(lines)
            return text[: draw(st.integers(0, len(text)))]
        if not lines:
            break
    return b"".join(lines)


@pytest.mark.timeout(120)
def test_any_broken_log_is_either_refused_at_a_line_or_replayed_and_reported(demo_lines, tmp_path):
    path = tmp_path / "run.jsonl"

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(broken_logs(demo_lines))
    def check(text: bytes) -> None:
        path.write_bytes(text)
        try:
            log = read_log(path)
        except LogError as error:
            assert str(error).startswith(f"{path}:")
            return
        consume(log)

    check()
