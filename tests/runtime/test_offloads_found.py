"""The executive finds the nodes' work beside the tick (``Offload`` attributes) without making the
nodes' ``__dict__``: CPython keeps attributes inline until then, and every attribute access of a
node whose dict was made takes a slower path for the rest of the run.

Checked in a fresh interpreter: whether a new instance starts inline depends on what earlier
instances of its class did in the same process (CPython shares one key table per class and stops
sharing it after some attribute patterns), so inside a test worker that ran other missions the
nodes may hold dicts from the start, whatever the executive does."""

from __future__ import annotations

import gc
import subprocess
import sys
import tempfile
from pathlib import Path

from orbitree.behaviours.catalogue import load_mission
from orbitree.nodes.offload import Offload
from orbitree.runtime.executive import Executive

MISSION = """mission: offloads
rate_hz: 125
max_duration: 0.1 s
tree:
  sequence:
    children:
      - wait: 20 ms
      - log: done
"""


def dict_made(node) -> bool:
    """Whether ``node`` keeps its attributes in a dict (its ``__dict__`` was asked for)."""
    held = [value for value in gc.get_referents(node) if value is not type(node)]
    return len(held) == 1 and type(held[0]) is dict


def test_offloads_are_found_as_vars_finds_them_and_the_nodes_keep_their_attributes_inline():
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "checked"


def _check(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MISSION)
    ex = Executive(load_mission(path))
    nodes = ex._nodes
    held = Offload(lambda job: job, threaded=False, name="held by the wait")
    nodes[1].worker = held  # as perceive holds its worker
    assert not any(dict_made(node) for node in nodes)

    assert ex._offloads() == [held]
    assert not any(dict_made(node) for node in nodes)
    ex.run()  # which looks for them before and after its loop
    assert not any(dict_made(node) for node in nodes)
    # a node whose dict was made is read from that dict; the same result as vars() gives
    vars(nodes[1])
    assert dict_made(nodes[1])
    assert ex._offloads() == [held] == [v for n in nodes for v in vars(n).values() if isinstance(v, Offload)]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        _check(Path(tmp))
    print("checked")
