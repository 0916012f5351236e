"""py_trees' per-node debug messages are skipped during a run unless py_trees' level is DEBUG,
and the nodes have their own loggers back after it."""

from __future__ import annotations

import py_trees

from orbitree.behaviours.catalogue import load_mission
from orbitree.runtime.executive import Executive
from tests.conftest import TEST_REGISTRY, write_mission

RATE = "rate_hz: 125\n"
TREE = "sequence: [wait: 0.1 s, set: {key: /x, value: 1}, log: done]"


def counted_debug_calls(tmp_path, monkeypatch, level):
    """Runs TREE with py_trees' level at ``level``; the calls of py_trees' Logger.debug made
    while the tree ticked, the nodes, and their loggers before the run."""
    calls = []
    original = py_trees.logging.Logger.debug

    def debug(self, msg):
        calls.append(msg)
        original(self, msg)

    monkeypatch.setattr(py_trees.logging.Logger, "debug", debug)
    monkeypatch.setattr(py_trees.logging, "level", level)
    ex = Executive(load_mission(write_mission(tmp_path, TREE, RATE), registry=TEST_REGISTRY))
    before = [node.logger for node in ex.tree.behaviours]
    calls.clear()  # (building the tree logs too)
    result = ex.run()
    assert result.status == "SUCCESS"
    return calls, ex.tree.behaviours, before


def test_nodes_skip_py_trees_debug_messages_during_a_run_and_get_their_loggers_back(tmp_path, monkeypatch):
    calls, nodes, before = counted_debug_calls(tmp_path, monkeypatch, py_trees.logging.Level.INFO)
    assert calls == []
    assert [node.logger for node in nodes] == before  # the very objects
    assert all(type(logger) is py_trees.logging.Logger for logger in before)


def test_at_py_trees_debug_level_every_node_logs_its_ticks_as_py_trees_does(tmp_path, monkeypatch, capsys):
    calls, nodes, before = counted_debug_calls(tmp_path, monkeypatch, py_trees.logging.Level.DEBUG)
    # 13 ticks or so (0.1 s at 125 Hz): each tick of the sequence and of its running leaf logs
    assert sum(msg == "Sequence.tick()" for msg in calls) >= 12
    assert sum(msg == "Wait.tick()" for msg in calls) >= 12
    assert "Sequence.tick()" in capsys.readouterr().out  # printed by py_trees' console
    assert [node.logger for node in nodes] == before


def test_a_logger_of_the_users_own_is_kept(tmp_path, monkeypatch):
    class Mine(py_trees.logging.Logger):
        pass

    monkeypatch.setattr(py_trees.logging, "level", py_trees.logging.Level.INFO)
    ex = Executive(load_mission(write_mission(tmp_path, TREE, RATE), registry=TEST_REGISTRY))
    mine = Mine("mine")
    ex.tree.root.logger = mine
    seen = []
    monkeypatch.setattr(Mine, "debug", lambda self, msg: seen.append(msg), raising=False)
    ex.run()
    assert ex.tree.root.logger is mine
    assert seen.count("Sequence.tick()") >= 12


def test_the_nodes_get_their_loggers_back_when_the_halt_raises(tmp_path, monkeypatch):
    """A halt that raises (a leaf's terminate failing) still gives every node its own logger back."""
    ex = Executive(load_mission(write_mission(tmp_path, TREE, RATE), registry=TEST_REGISTRY))
    before = [node.logger for node in ex.tree.behaviours]

    def failing_halt():
        raise RuntimeError("a leaf's terminate failed")

    monkeypatch.setattr(ex, "_halt", failing_halt)
    try:
        ex.run()
    except RuntimeError as error:
        assert "terminate failed" in str(error)
    else:
        raise AssertionError("the halt's error was swallowed")
    assert [node.logger for node in ex.tree.behaviours] == before
