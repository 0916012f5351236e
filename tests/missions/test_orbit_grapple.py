"""The grapple leaves on a free-floating ETS-VII-like body (2552 kg, 7087 kg·m²) tumbling at 0.5 rpm in
a 550 km orbit (missions/orbit_grapple.yaml): grappled in the first revolution, despun, and pulled to
the dock on a path slow enough for the 15 N per arm its accelerations may ask, every pad force under
the documented 60 N."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orbitree.cli import main

MISSION = Path(__file__).resolve().parents[2] / "missions" / "orbit_grapple.yaml"
PAD_FORCE_LIMIT_N = 60.0


@pytest.mark.parametrize("seed", [1])  # seeds 2 and 3 dock too (README); each run takes ~20 s
def test_tumbling_body_is_grappled_despun_and_docked_with_pad_forces_under_the_limit(tmp_path, seed):
    out = tmp_path / "run.json"
    main(["run", str(MISSION), "--view", "none", "--seed", str(seed), "--summary", str(out)])
    summary = json.loads(out.read_text())
    grapple = summary["grapple"]
    assert summary["status"] == "SUCCESS", summary["reason"]
    assert grapple["docked"] is True
    assert grapple["revolutions_missed"] == 0 and grapple["spin_at_contact_rpm"] == pytest.approx(0.5, abs=0.01)
    # turning 25 deg of a 7087 kg·m² body asks 100 N per arm in 10 s: the pull takes ~27.5 s instead
    assert 25.0 < grapple["dock_pull_s"] < 30.0
    assert max(grapple["peak_force_n"].values()) < PAD_FORCE_LIMIT_N
    assert summary["true_max_contact_force_n"] < PAD_FORCE_LIMIT_N
    assert grapple["dock_error_true"]["position_mm"] < 2.0
    assert summary["safety_violations"] == []
