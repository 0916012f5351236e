"""``orbitree calibrate circle-point``: the shipped file is the thesis's Table 2, the outputs, the
noise-free case (Table 4), samples independent of where they ran, bad files at file:line:col."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from orbitree.calibration import montecarlo
from orbitree.calibration.config import load_circle_point
from orbitree.calibration.montecarlo import Samples, monte_carlo
from orbitree.calibration.outputs import STAT_KEYS, statistics
from orbitree.cli import main
from orbitree.skills.circle_point import nominal_parameters, parameter_names
from orbitree.skills.kinematics import KUKA_KR5_SIXX

ROOT = Path(__file__).resolve().parents[2]
KR5 = ROOT / "missions" / "calibration" / "kr5_circle_point.yaml"
DEG = np.pi / 180


def _variant(tmp_path: Path, old: str, new: str, name: str = "variant.yaml") -> Path:
    text = KR5.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def test_the_shipped_file_holds_table_2_of_the_thesis():
    model, m = load_circle_point(KR5)
    for key in ("d", "theta_offset", "a", "alpha", "beta", "hm"):
        np.testing.assert_allclose(getattr(m.table, key), getattr(KUKA_KR5_SIXX, key), atol=1e-15, err_msg=key)
    np.testing.assert_allclose(m.q0, np.array([15, 0, 0, 0, 0, 0]) * DEG)
    np.testing.assert_allclose(m.robot2tracker, np.eye(4))
    np.testing.assert_allclose(m.reflector * 1e3, [[100, 0, 0], [200, 0, 0], [0, 50, 0], [20, 0, 0], [0, 80, 0],
                                                   [0, 60, 0]])
    np.testing.assert_allclose(m.swept, np.array([45, 80, 100, 50, 200, 300]) * DEG)
    assert m.points == (15, 20, 30, 15, 25, 30)
    assert (m.noise_a, m.noise_b) == pytest.approx((5e-6, 0.3e-6))
    assert m.errors is not None and not m.errors.active
    np.testing.assert_allclose(m.errors.period, 2 * np.pi)
    assert (model.tolerance, model.coverage) == (0.1, 0.95)


def test_the_command_writes_the_summary_the_parameter_table_and_the_figures(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["calibrate", "circle-point", str(KR5), "--iterations", "300", "-o", str(out)]) == 0
    summary = _summary(out)
    assert summary["iterations"] == 300 and summary["wall_time_s"] > 0 and summary["seed"] == 0
    assert list(summary["parameters"]) == list(parameter_names(6))
    for name, row in summary["parameters"].items():
        assert set(STAT_KEYS) <= set(row), name
        if row["identified"]:
            assert row["min"] <= row["ci95_low"] < row["mean"] < row["ci95_high"] <= row["max"]
            assert row["bias"] == pytest.approx(row["mean"] - row["nominal"], abs=1e-9)
            assert row["cpk"] == pytest.approx((0.1 - abs(row["bias"])) / (3 * row["std"]))
        else:
            assert row["std"] == 0 and row["cpk"] is None and row["mean"] == row["nominal"]
    with (out / "parameters.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["parameter"] for r in rows] == list(parameter_names(6))
    assert float(rows[0]["mean"]) == pytest.approx(summary["parameters"]["d1"]["mean"])
    for figure in ("cpk", "uncertainty", "bias", "histograms", "axes"):
        assert (out / f"{figure}.png").stat().st_size > 10_000, figure
    assert "![axes](axes.png)" in (out / "index.md").read_text(encoding="utf-8")
    printed = capsys.readouterr().out
    assert "alpha3" in printed and "300 iterations" in printed and "d2 " not in printed


def test_noise_free_the_command_returns_the_nominal_parameters_table_4(tmp_path):
    quiet = _variant(tmp_path, "tracker_noise: {a: 5 um, b: 0.3}", "tracker_noise: {a: 0, b: 0}")
    out = tmp_path / "out"
    assert main(["calibrate", "circle-point", str(quiet), "--iterations", "50", "-o", str(out)]) == 0
    for name, row in _summary(out)["parameters"].items():
        assert abs(row["mean"] - row["nominal"]) < 1e-9, name
        assert row["std"] < 1e-9 and row["max"] - row["min"] < 1e-9, name


def test_the_samples_do_not_depend_on_the_number_of_workers(tmp_path):
    runs = {}
    for workers in ("1", "2"):
        out = tmp_path / workers
        argv = ["calibrate", "circle-point", str(KR5), "--iterations", "5000", "--workers", workers,
                "-o", str(out)]
        assert main(argv) == 0
        runs[workers] = _summary(out)
    assert runs["2"]["workers"] == 2 and runs["1"]["workers"] == 1
    assert runs["1"]["parameters"] == runs["2"]["parameters"]


def test_joint_error_motions_written_in_the_file_widen_the_spread(tmp_path):
    wobbly = _variant(tmp_path, "joint_errors:\n  - {}\n  - {}\n  - {}\n  - {}",
                      "joint_errors:\n  - {}\n  - {}\n  - {}\n"
                      "  - {dz: {amplitude: 10 um, period: 180, jitter: 10 um},"
                      " ex: {amplitude: 0.002, phase: 90}}")
    _, plain = load_circle_point(KR5)
    _, m = load_circle_point(wobbly)
    assert m.errors is not None and m.errors.active and m.errors.random
    np.testing.assert_allclose(m.errors.amplitude[3], [0, 0, 10e-6, 0.002 * DEG, 0])
    np.testing.assert_allclose(m.errors.period[3], [2 * np.pi, 2 * np.pi, np.pi, 2 * np.pi, 2 * np.pi])
    np.testing.assert_allclose(m.errors.phase[3, 3], np.pi / 2)
    column = parameter_names(6).index("alpha3")
    spread = [monte_carlo(x, 500, 1, progress=False).deviations[:, column].std() for x in (plain, m)]
    assert spread[1] > 1.5 * spread[0]


def test_a_seed_repeats_its_samples_and_another_seed_draws_others():
    _, m = load_circle_point(KR5)
    first, again, other = (monte_carlo(m, 600, seed, progress=False).deviations for seed in (4, 4, 5))
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, other)


def test_statistics_are_the_sample_mean_std_coverage_interval_and_cpk():
    _, m = load_circle_point(KR5)
    rng = np.random.default_rng(0)
    deviations = np.zeros((10_000, 30))
    a3 = parameter_names(6).index("a3")
    deviations[:, a3] = 0.02 + 0.01 * rng.standard_normal(10_000)
    stats = statistics(Samples(deviations, 10_000, 1.0, 1, "here"), m, tolerance=0.1, coverage=0.95)["a3"]
    assert stats["nominal"] == nominal_parameters(KUKA_KR5_SIXX)["a3"] == pytest.approx(90.0)
    assert stats["bias"] == pytest.approx(0.02, abs=5e-4) and stats["std"] == pytest.approx(0.01, rel=0.03)
    assert stats["ci95_low"] - 90 == pytest.approx(0.02 - 1.96 * 0.01, abs=1e-3)
    assert stats["ci95_high"] - 90 == pytest.approx(0.02 + 1.96 * 0.01, abs=1e-3)
    assert stats["cpk"] == pytest.approx((0.1 - stats["bias"]) / (3 * stats["std"]))  # USL is the near side


def test_a_long_run_shows_a_progress_bar_and_a_short_one_does_not(monkeypatch, capsys):
    _, m = load_circle_point(KR5)
    monte_carlo(m, 300, 0, workers=1)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(montecarlo, "CHUNK", 50)
    monkeypatch.setattr(montecarlo, "LONG_RUN_CHUNKS", 4)
    monte_carlo(m, 300, 0, workers=1, label="kr5")
    err = capsys.readouterr().err
    assert "kr5" in err and "300/300" in err and "it/s" in err


PARSE_ERRORS = """\
calibration: bad
nominal:
  - {d: 335, theta: 0, a: 75, alpha: 90}
  - {d: 0, theta: 0, a: 270, alpha: 0, beta: 0}
initial_joints: [15, 0]
reflektor: [[100, 0, 0], [200, 0, 0]]
swept: [45, 80 s]
points: [15, 2]
tracker_noise: {a: 5 um, b: 0.3 um/s}
"""

MODEL_ERRORS = """\
calibration: bad
nominal:
  - {d: 335, theta: 0, a: 75, alpha: 90}
  - {d: 4, theta: 0, a: 270, alpha: 0, beta: 0}
  - {d: 0, theta: 90, a: 90, alpha: 0}
  - {d: 295, theta: 0, a: 0, alpha: 90}
initial_joints: [15, 0, 0, 0]
reflector: [[100, 0, 0], [200, 0, 0], [0, 0, 30], [20, 0, 0]]
swept: [45, 80, 100]
points: [15, 20, 30, 15]
tracker_noise: {a: 5 um}
"""


@pytest.mark.parametrize(("text", "expected"), [
    (PARSE_ERRORS, [
        ":6:1: unknown key 'reflektor'; did you mean 'reflector'?",
        ":7:13: swept[1]: '80 s' is in units of time, expected a angle",
        ":8:14: points[1]: Input should be greater than or equal to 3",
        ":9:29: tracker_noise.b: cannot read '0.3 um/s' as um/m",
    ]),
    (MODEL_ERRORS, [
        ":4:9: nominal[1].d: a Hayati–Mirmirani joint (beta given) has d = 0, got 4 mm",
        ":8:39: reflector[2]: on the axis of joint 3 (x = y = 0)",
        ":9:8: swept: expected 4 entries (one per joint of 'nominal'), got 3",
    ]),
], ids=["parse", "model"])
def test_a_bad_file_is_reported_at_file_line_col_with_exit_2_and_nothing_written(tmp_path, capsys, text, expected):
    config = tmp_path / "bad.yaml"
    config.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["calibrate", "circle-point", str(config), "--iterations", "10", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    for fragment in expected:
        assert f"{config}{fragment}" in err, (fragment, err)
    assert not out.exists()


def test_a_dh_joint_on_parallel_axes_is_refused_at_its_row(tmp_path, capsys):
    plain = _variant(tmp_path, "{d: 0, theta: 0, a: 270, alpha: 0, beta: 0}", "{d: 0, theta: 0, a: 270, alpha: 0}")
    assert main(["calibrate", "circle-point", str(plain), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    line = next(i for i, text in enumerate(plain.read_text().splitlines(), 1) if "a: 270" in text)
    assert f"{plain}:{line}:5: nominal[1]: joint 2: axes 2 and 3 are parallel" in err
    assert "give the joint a beta (Hayati–Mirmirani)" in err


def test_a_missing_file_is_exit_2(tmp_path, capsys):
    assert main(["calibrate", "circle-point", str(tmp_path / "none.yaml"), "-o", str(tmp_path / "o")]) == 2
    assert "none.yaml:1:1: no such file" in capsys.readouterr().err


# ----------------------------------------------------------------------------------- Dask


def test_no_dask_scheduler_at_the_address_is_exit_2_and_nothing_runs(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    from orbitree.campaign import dask_pool

    monkeypatch.setattr(dask_pool, "CONNECT_TIMEOUT_S", 1.0)
    out = tmp_path / "out"
    code = main(["calibrate", "circle-point", str(KR5), "--iterations", "100", "--scheduler", "tcp://127.0.0.1:9",
                 "-o", str(out)])
    assert code == 2
    assert "no Dask scheduler at 'tcp://127.0.0.1:9'" in capsys.readouterr().err
    assert not (out / "summary.json").exists()


def test_on_a_dask_cluster_the_samples_are_those_of_the_local_run(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = tmp_path / "dask"
        assert main(["calibrate", "circle-point", str(KR5), "--iterations", "5000", "--scheduler",
                     cluster.scheduler_address, "-o", str(remote)]) == 0
    local = tmp_path / "local"
    assert main(["calibrate", "circle-point", str(KR5), "--iterations", "5000", "-o", str(local)]) == 0
    assert _summary(remote)["workers"] == 2
    assert _summary(remote)["parameters"] == _summary(local)["parameters"]
