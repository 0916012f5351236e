"""``orbitree run --profile FILE``: where the wall time of a run went, as JSON and a table."""

from __future__ import annotations

import json
from pathlib import Path

from orbitree.cli import main

MISSION = Path(__file__).resolve().parents[2] / "missions" / "sirom_dock.yaml"


def test_profile_accounts_for_the_wall_time_by_loop_part_driver_rendering_perception_and_node(
        tmp_path: Path, capsys) -> None:
    out = tmp_path / "profile.json"
    summary = tmp_path / "summary.json"
    code = main(["run", str(MISSION), "--view", "none", "--set", "max_duration=1.5 s",
                 "--summary", str(summary), "--profile", str(out)])
    assert code in (0, 1)  # 1.5 s is not a whole mission: it ends out of time
    profile = json.loads(out.read_text())
    ticks = json.loads(summary.read_text())["ticks"]
    assert profile["ticks"] == ticks and abs(profile["sim_time_s"] - 1.5) < 0.02
    wall = profile["wall_s"]
    loop = {part: v["s"] for part, v in profile["loop"].items()}
    # the loop's parts and what lies outside them add up to the wall time, none negative
    assert min(loop.values()) >= 0.0 and abs(sum(loop.values()) - wall) < 1e-3
    assert loop["drivers read"] > 0 and loop["tree tick"] > 0 and loop["drivers step"] > 0
    # per driver: the steps add up to the loop's part; the reads make most of theirs (the rest
    # is writing the readings to the blackboard)
    drivers = profile["drivers"]
    assert set(drivers) == {"arm", "world"}
    reads = sum(d["read_s"] for d in drivers.values())
    assert 0.5 * loop["drivers read"] <= reads <= loop["drivers read"] + 1e-4
    assert abs(sum(d["step_s"] for d in drivers.values()) - loop["drivers step"]) < 1e-3
    # the wrist camera (15 fps) renders its frames when perceive reads them, on the simulated
    # clock: inside the tracker's time, itself inside the tree's tick
    render = profile["rendering"]["arm"]
    assert not render["beside_the_loop"] and render["on_demand"] and 20 <= render["frames"] <= 24
    assert render["s"] > 0 and drivers["arm"]["read_s"] < render["s"]
    # perceive's tracker runs in its node's tick: about one job per frame, inside the tick time
    perceive = profile["perception"]["perceive sirom"]
    assert not perceive["beside_the_loop"] and perceive["frames"] >= render["frames"] - 3
    assert 0 < render["s"] <= perceive["s"] <= loop["tree tick"]
    # nodes: self times, largest first, within the tick time; their ticks at most the run's
    nodes = profile["nodes"]
    seconds = [n["s"] for n in nodes]
    assert seconds == sorted(seconds, reverse=True) and sum(seconds) <= loop["tree tick"] + 1e-3
    assert nodes[0]["ticks"] <= ticks and {"id", "name", "mean_us", "percent"} <= set(nodes[0])
    table = capsys.readouterr().out
    assert "rendering arm (" in table and "as read, inside the reader's time" in table
    assert "rendering arm (" in table and "perceive sirom (" in table and "driver world: step" in table
    assert f"wall time {wall:.2f} s" in table
