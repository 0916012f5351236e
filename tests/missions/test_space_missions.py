"""The example missions of satellites and orbits, run end to end."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import numpy as np
import pytest

from orbitree.behaviours.catalogue import load_mission
from orbitree.cli import main
from orbitree.drivers.sim_orbit import OrbitModel
from orbitree.runtime.executive import Executive
from orbitree.skills import orbit as orb
from orbitree.skills.satellite import gimbal_spin_down

MISSIONS = Path(__file__).resolve().parents[2] / "missions"
RPM = 2 * math.pi / 60


def test_orbit_watch_runs_logs_the_orbit_keys_and_waits_for_the_spin_to_drop(tmp_path):
    summary, log = tmp_path / "s.json", tmp_path / "run.jsonl"
    code = main(["run", str(MISSIONS / "orbit_watch.yaml"), "--view", "none", "--summary", str(summary),
                 "--log", str(log)])
    assert code == 0
    result = json.loads(summary.read_text())
    assert result["status"] == "SUCCESS"
    # 3 rpm to 2 rpm on the bearing's friction: the closed form's time, to a tick (0.1 s)
    t = np.arange(0.0, 200.0, 0.1)
    crossing = t[np.argmax(gimbal_spin_down(3 * RPM, 20.0, 0.02, 0.01, t) <= 2 * RPM)]
    assert result["sim_time_s"] == pytest.approx(crossing, abs=0.11)
    ticks = [json.loads(line) for line in log.read_text().splitlines()]
    ticks = [r for r in ticks if r.get("type") == "tick"]
    keys = set().union(*(r.get("bb", {}) for r in ticks))
    for key in ("/orbit/time_utc", "/orbit/mockup/r_eci", "/orbit/mockup/v_eci", "/orbit/mockup/lvlh",
                "/orbit/servicer/r_eci", "/orbit/relative/mockup", "/orbit/relative/mockup/range",
                "/target/mockup/gg_torque", "/target/mockup/spin_rate", "/target/mockup/state"):
        assert key in keys, key
    last = next(r["bb"] for r in reversed(ticks) if "/orbit/time_utc" in r.get("bb", {}))
    epoch = orb.tle_epoch(*load_mission(MISSIONS / "orbit_watch.yaml", []).model.orbit.tle)
    stamp = dt.datetime.fromisoformat(last["/orbit/time_utc"])
    assert (stamp - epoch).total_seconds() == pytest.approx(result["sim_time_s"], abs=0.11)
    # the V-bar station 20 m behind is an equilibrium: the target stays 20 m ahead along-track
    assert np.allclose(last["/orbit/relative/mockup"][:3], [0.0, 20.0, 0.0], atol=0.05)
    assert np.linalg.norm(last["/orbit/mockup/r_eci"]) == pytest.approx(6.78e6, rel=0.01)  # the ISS, ~400 km up


def test_orbit_model_relative_state_follows_clohessy_wiltshire_and_maps_time_to_utc():
    epoch = dt.datetime(2024, 3, 1, 12, tzinfo=dt.UTC)
    a = 6_928_000.0
    model = OrbitModel.kepler(epoch, a, 0.0, math.radians(51.6), 0.3, 0.2, 0.1, np.array([10.0, 0, 0, 0, 0, 0]))
    n = orb.mean_motion(a)
    for t in (0.0, 600.0, 3000.0):
        states = model.states(t)
        servicer, _ = orb.relative_state(*states["target"], *states["servicer"])
        assert servicer == pytest.approx(orb.cw_propagate(np.array([10.0, 0, 0, 0, 0, 0]), n, t)[:3], abs=1e-6)
        target, _ = orb.relative_state(*states["servicer"], *states["target"])
        assert np.linalg.norm(target) == pytest.approx(np.linalg.norm(servicer), rel=1e-4)
    assert model.utc(90.5) == epoch + dt.timedelta(seconds=90.5)


def test_gimbal_standoff_two_arms_hold_100_mm_from_the_pads_while_the_mockup_spins(tmp_path):
    mission = load_mission(MISSIONS / "gimbal_standoff.yaml", ["max_duration=40"])
    executive = Executive(mission, log_path=str(tmp_path / "run.jsonl"))
    world = executive.ctx.world
    assert set(world.robots) == {"left", "right"} and set(executive.safety[-1].robots) == {"left", "right"}
    closest = {"left": np.inf, "right": np.inf}
    step = world.step

    def watched(dt_s: float) -> None:
        step(dt_s)
        body = world.satellites["mockup"]
        for arm in closest:
            tip = world.tcp_pose(arm)[:3, 3]
            for pad in body.fixtures:
                closest[arm] = min(closest[arm], float(np.linalg.norm(tip - body.fixture_pose(pad)[:3, 3])))

    world.step = watched
    result = executive.run()
    assert result.status == "SUCCESS", result.reason
    # once a revolution a pad passes in front of each tool: at the 100 mm stand-off (to the
    # chord a 50 Hz tick leaves between samples, 0.5 m x 2 rpm x 20 ms = 2 mm, and the arms' own
    # kinematic errors, 0.1 mm per DH parameter)
    for arm, distance in closest.items():
        assert 0.1 - 0.0005 <= distance < 0.1 + 0.0025, (arm, distance)
    assert result.summary["true_max_contact_force_n"] == 0.0
    spin = result.summary["satellites"]["mockup"]
    assert spin["spin_rpm_end"] == pytest.approx(gimbal_spin_down(2 * RPM, 20.0, 0.02, 0.01, 32.1) / RPM, abs=1e-3)
