"""The docking mission over the plausible range of the contact stiffness (missions/campaigns/
sirom_stiffness.yaml): the dock's admittance keeps a delay margin over the whole range, a sample of
the sweep docks at both ends, and a dock damped too lightly for a stiff contact stops and says why.

The full sweep (12 runs, ~3 min on two workers):

    orbitree campaign missions/campaigns/sirom_stiffness.yaml -o out/stiffness
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orbitree.behaviours.catalogue import load_mission
from orbitree.campaign.runs import run_case
from orbitree.campaign.spec import load_campaign, plan
from orbitree.drivers.sim_ft import UR10E_FT
from orbitree.nodes.compliance import AdmittanceLoop, Compliance
from orbitree.runtime.executive import Executive
from orbitree.skills.admittance import sampled_delay_margin
from orbitree.skills.contact import STRUCTURAL_LEVER_M

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGN = ROOT / "missions" / "campaigns" / "sirom_stiffness.yaml"
START = "robots.arm.start={target: sirom, offset: {xyz: [10 mm, -15 mm, 120 mm], rpy: [3, -2, 5]}}"


def _stiffnesses(campaign) -> list[float]:
    values = []
    for case in campaign.cases:
        (text,) = [o for o in case.overrides if o.startswith("robots.arm.contact.stiffness=")]
        number, unit = text.split("=")[1].split()
        values.append(float(number) * {"N/mm": 1e3, "N/m": 1.0}[unit])
    return values


def _dock(mission):
    return next(spec for spec in mission.root.walk() if spec.kind == "admittance_dock")


def test_the_sweep_covers_20_to_1000_n_per_mm_and_every_case_keeps_twice_its_loop_delay_as_margin():
    campaign = load_campaign(CAMPAIGN)
    stiffness = _stiffnesses(campaign)
    assert min(stiffness) == 2.0e4 and max(stiffness) == 1.0e6 and 1.0e5 in stiffness  # the default inside
    mission = load_mission(campaign.mission)
    period = 1.0 / mission.model.rate_hz
    dock = _dock(mission).params
    comply = Compliance()  # what capture uses
    loops = ((dock.mass, dock.damping, dock.filter), (comply.mass, comply.damping, comply.filter))
    for mass, damping, window in loops:
        # the loop's delay beyond its own tick: the sensor's filter lag and the median's
        delay = UR10E_FT.lag + AdmittanceLoop(None, period, window, 1.0, 1.0).delay
        assert delay == pytest.approx(0.0133, abs=2e-4)  # 5.3 ms + 8 ms
        for k in stiffness:
            linear = sampled_delay_margin(mass[0], damping[0], k, period)
            angular = sampled_delay_margin(mass[3], damping[3], k * STRUCTURAL_LEVER_M**2, period)
            assert min(linear, angular) > 2.0 * delay, f"{k / 1e3:g} N/mm: margin {linear * 1e3:.1f} ms"
    # at 1000 N/mm the margin is 33.5 ms: 2.5 times the 13.3 ms of delay
    assert sampled_delay_margin(11.25, 24000.0, 1.0e6, period) == pytest.approx(0.0335, abs=5e-4)


@pytest.mark.parametrize("case", ["k0020", "k1000"])
def test_a_sample_of_the_sweep_docks_at_both_ends_of_the_range(case, tmp_path):
    campaign = load_campaign(CAMPAIGN)
    (spec,) = [s for s in plan(campaign, tmp_path) if s.case == case and s.cycle == 0]
    outcome = run_case(spec)
    summary = outcome["summary"]
    assert outcome["status"] == "SUCCESS", outcome["reason"]
    # the hooks' motors pull at most 60 N; the arm yields at F/D (2.5 mm/s) and nothing else loads
    # the tool: the peak on the tool stays at the hooks' pull, soft or stiff
    assert summary["true_max_contact_force_n"] < 65.0
    assert summary["capture_peak_force_n"] < 75.0  # the filtered wrist reading: 60 N and the noise
    # no faster than the physics allows: the hooks' stroke takes the latch's travel time at least,
    # and the tool closes the true gap left by the final approach at most at F/D (the hooks' pull
    # over the capture's and the dock's damping: the arm yields no faster), soft or stiff
    latch = load_mission(ROOT / "missions" / "sirom_dock.yaml").model.robots["arm"].latch
    yield_speed = latch.hook_force / Compliance().damping[0]  # 60 N / 24000 N·s/m = 2.5 mm/s
    gap = summary["final_error_true"]["z_mm"] * 1e-3
    assert summary["phase_s"]["capture"] >= latch.travel_time
    assert summary["phase_s"]["capture"] + summary["phase_s"]["dock"] >= gap / yield_speed
    print(f"\n{case}: capture {summary['phase_s']['capture']:.2f} s, dock {summary['phase_s']['dock']:.2f} s, "
          f"peak on the tool {summary['true_max_contact_force_n']:.1f} N")


def test_a_dock_damped_for_a_soft_contact_stops_on_a_stiff_one_and_says_why(tmp_path):
    # 2000 N·s/m: margin 2 ms at 1000 N/mm, against 13 ms of delay: the loop diverges
    file = ROOT / "missions" / "sirom_dock.yaml"
    children = yaml.safe_load(file.read_text())["subtrees"]["dock sequence"]["sequence"]["children"]
    at = next(i for i, child in enumerate(children) if "admittance_dock" in child)
    light = f"subtrees.dock sequence.sequence.children.{at}.admittance_dock.damping=[2000, 2000, 2000, 80, 80, 80]"
    mission = load_mission(file,
                           [START, "robots.arm.contact.stiffness=1000 N/mm", light, "max_duration=60 s"])
    assert _dock(mission).params.damping[0] == 2000.0
    result = Executive(mission, log_path=str(tmp_path / "run.jsonl")).run()
    # the dock stops itself; when the diverging reading in that tick also crosses the monitor's
    # 120 N (across axes: each saturates at 100 N), the monitor aborts to the same safe retreat
    if result.status == "FAILURE":
        assert result.reason == "tree returned FAILURE: abandon > docking abandoned"
    else:
        assert result.status == "ABORTED" and result.reason.startswith("safety: arm: wrist force")
        assert result.reason.endswith("recovery 'safe retreat' SUCCESS")
    stop = result.summary["dock_stopped"]
    assert stop.startswith("contact force") and "the admittance loop does not hold this contact" in stop
    assert result.summary["phase_s"]["dock"] < 0.5  # two readings over 80 N: stopped within ticks
    print(f"\n{stop}; peak on the tool {result.summary['true_max_contact_force_n']:.0f} N")
