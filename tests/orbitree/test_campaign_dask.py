"""``orbitree campaign --scheduler``: the same runs and rows on a Dask cluster as on the local pool."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed")

from orbitree.campaign import dask_pool as campaign_dask  # noqa: E402
from orbitree.campaign.local import run_campaign  # noqa: E402
from orbitree.campaign.spec import load_campaign  # noqa: E402
from orbitree.cli import main  # noqa: E402
from tests.orbitree.test_campaign import DEMO, THREE_CASES, flaky_runner, rows_of, write  # noqa: E402

SAME = ("run", "case", "cycle", "seed", "status", "reason", "sim_time_s", "ticks", "phase_s.warm-up")


@pytest.fixture(scope="module")
def cluster():
    import dask

    # a task whose worker dies is not retried: the 'die' case becomes an error row at once; and
    # a worker holds one task at a time (by default it may hold a second, queued, which would
    # die with it)
    settings = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(settings), distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as local:
        yield local




def test_a_campaign_on_a_dask_cluster_gives_the_rows_of_the_local_pool(tmp_path, cluster):
    campaign = write(tmp_path / "c.yaml", THREE_CASES)
    assert main(["campaign", str(campaign), "-o", str(tmp_path / "local"), "--no-progress", "--workers", "2"]) == 1
    code = main(["campaign", str(campaign), "-o", str(tmp_path / "dask"), "--no-progress",
                 "--scheduler", cluster.scheduler_address])
    assert code == 1  # not all succeeded, as locally
    local, remote = rows_of(tmp_path / "local" / "summary.csv"), rows_of(tmp_path / "dask" / "summary.csv")
    assert [[r[k] for k in SAME] for r in remote] == [[r[k] for k in SAME] for r in local]
    assert [r["status"] for r in remote] == ["SUCCESS", "SUCCESS", "FAILURE", "FAILURE", "FAILURE", "FAILURE"]
    assert all((tmp_path / "dask" / r["log"]).stat().st_size > 0 for r in remote)  # the workers wrote the logs
    assert '"workers": 2' in (tmp_path / "dask" / "campaign.json").read_text()  # the cluster's threads


def test_a_raising_case_and_a_dying_worker_are_error_rows_on_dask_too(tmp_path, cluster):
    campaign = write(tmp_path / "c.yaml", f"""
campaign: flaky
mission: {DEMO}
cases: [{{id: first}}, {{id: boom}}, {{id: die}}, {{id: last}}]
""")
    result = run_campaign(load_campaign(campaign), tmp_path / "out", runner=flaky_runner, progress=False,
                          scheduler=cluster.scheduler_address)
    by_case = {row["case"]: row for row in result.rows}
    assert [row["case"] for row in result.rows] == ["first", "boom", "die", "last"]
    assert {case: row["status"] for case, row in by_case.items()} == {
        "first": "SUCCESS", "boom": "error", "die": "error", "last": "SUCCESS"}
    assert by_case["boom"]["reason"] == "RuntimeError: boom in a leaf"
    assert by_case["die"]["reason"].startswith("KilledWorker")


def test_no_scheduler_at_the_address_is_exit_2_and_nothing_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(campaign_dask, "CONNECT_TIMEOUT_S", 1.0)
    campaign = write(tmp_path / "c.yaml", THREE_CASES)
    code = main(["campaign", str(campaign), "-o", str(tmp_path / "out"), "--no-progress",
                 "--scheduler", "tcp://127.0.0.1:9"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no Dask scheduler at 'tcp://127.0.0.1:9'" in err
    assert not (tmp_path / "out" / "summary.csv").exists()
