"""A bug in a leaf while the arm moves: the arm stops, the log gets its footer, exit code 1."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orbitree.behaviours.approach import Approach
from orbitree.cli import main
from orbitree.runtime.recorder import read_log

MISSION = Path(__file__).resolve().parents[2] / "missions" / "sirom_dock.yaml"


def test_exception_in_a_leaf_mid_approach_stops_the_arm_and_exits_one(tmp_path, monkeypatch, capsys):
    update = Approach.update
    seen: dict[str, object] = {}

    def faulty_update(self):
        status = update(self)
        if self.ctx.now >= 2.0:
            seen["world"] = self.ctx.world
            seen["speed_before"] = float(np.linalg.norm(self.ctx.world.robots["arm"].read().tcp_twist[:3]))
            raise ZeroDivisionError("gain table empty")
        return status

    monkeypatch.setattr(Approach, "update", faulty_update)
    log_path = tmp_path / "run.jsonl"
    code = main(["run", str(MISSION), "--view", "none", "--log", str(log_path),
                 "--set", "robots.arm.start={target: sirom, offset: {xyz: [0, 50 mm, 300 mm]}}"])
    assert code == 1
    err = capsys.readouterr().err
    assert "pre-dock" in err and "ZeroDivisionError: gain table empty" in err
    assert "Traceback" not in err  # the traceback goes to the log, the terminal gets one line
    assert seen["speed_before"] > 0.005  # the arm was moving when the leaf failed
    arm = seen["world"].robots["arm"]
    arm.step(0.5)  # whatever it was doing, it was told to stop: it decelerates to rest
    assert np.linalg.norm(arm.read().tcp_twist) < 1e-6
    log = read_log(log_path)
    assert log.footer is not None and "ZeroDivisionError" in log.footer["error"]
    assert log.footer["summary"]["status"] == "ABORTED"
    stops = [c for t in log.ticks for c in t.get("cmd", []) if c["cmd"] == "stop"]
    assert stops, "the halt must command a stop"
