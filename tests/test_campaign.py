"""A campaign's tables, figure and comparison, read from the raw layout node jobs leave: made by the
synthetic generator, whose drawn truth says what the tables must find, and by hand where a case needs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from gpurepro.campaign import aggregate, layout, plan, synthetic, tables
from gpurepro.campaign.intervals import _resampled_ranks, group_median_intervals, spearman_interval
from gpurepro.campaign.plot import plot
from gpurepro.compare import campaigns
from gpurepro.errors import GpureproError, ResultExistsError

from .conftest import run_gpurepro

SMALL = {"reps": 20, "gpus_per_node": 4}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame, dict[str, pd.DataFrame]]:
    """48 GPUs on 12 nodes, the last node failed, with a heavy tail of slow cards."""
    folder = tmp_path_factory.mktemp("campaign")
    model = synthetic.Model(nodes=12, failed_nodes=1, slow_fraction=0.15, seed=8, **SMALL)
    truth = synthetic.write(model, folder)
    return folder, truth, aggregate.aggregate(folder / "raw", "made", synthetic.node_names(12))


def summary_value(summary: pd.DataFrame, metric: str, statistic: str) -> float:
    return float(summary.query("metric == @metric and statistic == @statistic")["value"].item())


def test_the_tables_find_the_slow_cards_the_model_drew(cluster) -> None:
    _folder, truth, found = cluster
    gpus = tables.wide_gpus(found["gpus"])
    assert len(gpus) == 44 and gpus["gpu_uuid"].is_unique  # 11 nodes measured, by UUID
    measured = truth[truth["node"] != "node012"].merge(gpus, on=["node", "gpu_uuid"])
    # every card drawn 15% or more slow is a resolved slow outlier, held by the cap it was drawn with
    far = measured[measured["slowdown"] > 1.15]
    assert len(far) >= 2
    assert (far["outlier"] == "slow").all()
    assert far["at_power_cap"].tolist() == (far["cap"] == "power").tolist()
    assert far["at_thermal_cap"].tolist() == (far["cap"] == "thermal").tolist()
    assert set(found["outliers"].query("outlier == 'slow'")["gpu_uuid"]) >= set(far["gpu_uuid"])
    # each GPU's interval holds its median; the rate relative to the cluster median follows the truth
    assert (gpus["rate_ci_low"] <= gpus["rate_median"]).all() and (
        gpus["rate_median"] <= gpus["rate_ci_high"]
    ).all()
    drawn = np.exp(-(measured["node_effect"] + measured["gpu_effect"])) / measured["slowdown"]
    assert scipy_stats.spearmanr(drawn, measured["relative_rate"]).statistic > 0.95

    summary = found["summary"]
    assert summary_value(summary, "gpus", "value") == 44 and summary_value(summary, "nodes", "value") == 11
    slowest = measured["relative_rate"].min()
    assert summary_value(summary, "rate_vs_cluster_median", "min") == pytest.approx(slowest)
    assert summary_value(summary, "outliers", "slow") == (gpus["outlier"] == "slow").sum()
    low, value, high = (
        summary_value(summary, "variation", s) for s in ("sc22_pct_ci_low", "sc22_pct", "sc22_pct_ci_high")
    )
    assert 0 < low < value < high
    # SC22's variation leaves the outliers out; the spread from slowest to fastest card does not
    assert summary_value(summary, "variation", "spread_pct") > value
    # clock follows the rate in the model; the interval of a perfect rank correlation is a point
    assert summary_value(summary, "rate_vs_sm_clock", "spearman") == pytest.approx(1.0)


def test_a_failed_node_is_listed_with_its_reason(cluster) -> None:
    _folder, _truth, found = cluster
    nodes = found["nodes"].set_index("node")
    assert nodes.loc["node012", "status"] == "failed" and "did not answer" in nodes.loc["node012", "reason"]
    assert np.isnan(nodes.loc["node012", "spread_pct"])
    assert (nodes.drop(index="node012")["status"] == "measured").all()
    assert (nodes.drop(index="node012")["gpus_measured"] == 4).all()


def test_the_variance_between_nodes_and_within_them() -> None:
    shares = {}
    for name, node_sd, gpu_sd in (("nodes", 0.05, 0.002), ("cards", 0.0005, 0.05)):
        model = synthetic.Model(nodes=10, node_sd=node_sd, gpu_sd=gpu_sd, slow_fraction=0, seed=1, **SMALL)
        reps = _reps_of(model)
        shares[name] = tables.summarise(reps, "x")["summary"]
    assert summary_value(shares["nodes"], "node_split", "between_nodes_share") > 0.9
    assert summary_value(shares["nodes"], "node_split", "between_nodes_p_value") < 0.001
    assert summary_value(shares["cards"], "node_split", "between_nodes_share") < 0.5
    assert summary_value(shares["cards"], "node_split", "between_nodes_p_value") > 0.01


def _reps_of(model: synthetic.Model, folder: Path | None = None) -> pd.DataFrame:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        target = folder or Path(scratch)
        synthetic.write(model, target)
        return layout.read_campaign(target / "raw")


def test_median_intervals_are_the_order_statistics_of_a_median() -> None:
    values = np.concatenate([np.arange(1.0, 11.0), np.arange(1.0, 6.0), [3.0, np.nan]])
    groups = np.array([0] * 10 + [1] * 5 + [2, 2])
    found = group_median_intervals(values, groups)
    # 10 values: binomial(10, 1/2) puts 2.1% below rank 2, so [x(2), x(9)] covers 95.7%
    assert found.loc[0].tolist() == [5.5, 2.0, 9.0, 10]
    # 5 values cannot give a 95% interval (the widest, [min, max], covers 93.75%); NaNs are dropped
    assert found.loc[1, "median"] == 3.0 and np.isnan(found.loc[1, "ci_low"])
    assert found.loc[2, "count"] == 1 and found.loc[2, "median"] == 3.0


def test_rank_correlation_and_its_interval() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    assert spearman_interval(x, 2 * x + 1).describe().startswith("1 [1, 1]")
    unrelated = spearman_interval(x, rng.normal(size=200))
    assert unrelated.low < 0 < unrelated.high
    related = spearman_interval(x, x + rng.normal(scale=0.5, size=200))
    expected = scipy_stats.spearmanr(x, x + rng.normal(scale=0.5, size=200)).statistic
    assert 0.7 < related.low < related.value < related.high and abs(related.value - expected) < 0.1
    # the counted ranks of a resample are scipy's average ranks, ties included
    values = np.array([3.0, 1.0, 3.0, 2.0, 5.0])
    codes = np.unique(values, return_inverse=True)[1]
    picks = rng.integers(0, 5, size=(50, 5))
    assert np.array_equal(_resampled_ranks(codes, picks), scipy_stats.rankdata(values[picks], axis=1))


def test_attempts_never_reuse_a_folder(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    assert layout.planned_attempt(raw, "n1") == 1
    layout.attempt_dir(raw, "n1", 1).mkdir(parents=True)  # a try that ended before recording
    assert layout.planned_attempt(raw, "n1") == 2
    layout.write_record(layout.attempt_dir(raw, "n1", 2), {"status": "unavailable", "reason": "drained"})
    assert layout.planned_attempt(raw, "n1") == 3
    layout.write_record(layout.attempt_dir(raw, "n1", 3), {"status": "measured", "reason": ""})
    assert layout.planned_attempt(raw, "n1") == 3
    with pytest.raises(ResultExistsError):
        layout.write_record(layout.attempt_dir(raw, "n1", 3), {"status": "failed", "reason": "again"})
    tries = layout.nodes_table(raw, ["n1", "n2"])
    assert tries["status"].tolist() == ["no record", "unavailable", "measured", "not tried"]
    assert tries["current"].tolist() == [False, False, True, True]


def test_a_second_campaign_of_the_same_cards(cluster, tmp_path: Path) -> None:
    folder, _truth, found = cluster
    again = synthetic.Model(nodes=12, failed_nodes=1, slow_fraction=0.15, seed=8, noise_seed=9, **SMALL)
    synthetic.write(again, tmp_path)
    second = aggregate.aggregate(tmp_path / "raw", "again")["gpus"]
    # one card lost 20% between the campaigns, as a card that starts to fail would
    changed = second["gpu_uuid"] == second["gpu_uuid"].iloc[0]
    scaled = changed & second["metric"].isin(["rate", "relative_rate"])
    second.loc[scaled, "value"] *= 0.8
    matched = campaigns.match_gpus(found["gpus"], second)
    assert (matched["in"] == "both").sum() == 44
    summary = campaigns.summarise(matched).set_index("statistic")["value"]
    # the cards differ by a few percent and the reps by 0.3%: the slow cards are slow again
    assert summary["spearman"] > 0.85 and 0.5 < summary["spearman_ci_low"] < summary["spearman"]
    assert summary["changed_standing"] >= 1
    assert matched.loc[matched["changed"], "gpu_uuid"].eq(second["gpu_uuid"].iloc[0]).any()
    assert summary["changed_standing"] <= 3  # the rest moved within their reps' noise
    assert summary["slow_in_both"] >= 2


def test_the_figure_and_the_commands(cluster, tmp_path: Path) -> None:
    folder, _truth, found = cluster
    figure = plot(tables.wide_gpus(found["gpus"]))
    assert len(figure.axes) >= 3 and "made: SGEMM cublas N=25536 on v100" in figure._suptitle.get_text()

    made = tmp_path / "c"
    result = run_gpurepro(
        "campaign", "synthetic", str(made), "--nodes", "3", "--reps", "10", "--failed-nodes", "1"
    )
    assert result.returncode == 0, result.stderr
    result = run_gpurepro(
        "campaign", "tables", str(made / "raw"), "--campaign", "c", "--out-dir", str(made / "t")
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (made / "t").iterdir()) == sorted(aggregate.FILES.values())
    png = made / "c.png"
    result = run_gpurepro("campaign", "plot", str(made / "t" / "campaign_gpus.csv"), "--out", str(png))
    assert result.returncode == 0 and png.read_bytes()[:4] == b"\x89PNG", result.stderr
    gpus_csv = str(made / "t" / "campaign_gpus.csv")
    result = run_gpurepro("campaign", "compare", gpus_csv, gpus_csv, "--out", str(made / "cmp"))
    assert result.returncode == 0, result.stderr
    assert "8 GPUs matched by UUID, rank correlation 1.00" in result.stderr
    record = json.loads((made / "raw" / "node003" / "attempt1" / "node.json").read_text())
    assert record["status"] == "failed"
    result = run_gpurepro("campaign", "estimate", "--nodes", "64", "--gpus-per-node", "4", "--runs", "3",
                          "--run-minutes", "10", "--parallel", "16")  # fmt: skip
    assert "32.0 node-hours, 128.0 GPU-hours" in result.stdout and "about 2.0 h of wall time" in result.stdout


def test_hostlists_expand_as_slurm_writes_them() -> None:
    assert plan.expand_hostlist("node[001-003],gpu7") == ["node001", "node002", "node003", "gpu7"]
    assert plan.expand_hostlist("r[1-2]n[8-9,11]") == ["r1n8", "r1n9", "r1n11", "r2n8", "r2n9", "r2n11"]
    assert len(plan.expand_hostlist("node[001-064]")) == 64
    with pytest.raises(GpureproError, match="bad range '9-1'"):
        plan.expand_hostlist("node[9-1]")


def test_a_drained_node_is_recorded_not_submitted_and_a_measured_one_is_done(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    layout.write_record(layout.attempt_dir(raw, "n1", 1), {"status": "measured", "reason": ""})
    states = {"n1": ("idle", ""), "n2": ("drained", "fan failure"), "n3": ("mixed", ""), "n4": ("down*", "")}
    found = plan.plan(raw, ["n1", "n2", "n3", "n4"], states)
    assert found.done == ["n1"] and found.to_measure == ["n3"]
    assert found.unavailable == {"n2": "SLURM state drained: fan failure", "n4": "SLURM state down*"}
    assert found.attempts == {"n1": 1, "n2": 1, "n3": 1, "n4": 1}
    # without SLURM, every node not yet measured is measured
    assert plan.plan(raw, ["n1", "n2"], None).to_measure == ["n2"]
    assert re.fullmatch(plan.node_pattern(found.unavailable), "n2") and not re.fullmatch(
        plan.node_pattern([]), ""
    )


def test_gpurepro_compare_of_two_campaign_folders_matches_their_gpus(tmp_path: Path) -> None:
    folders = []
    for name, noise in (("a", None), ("b", 5)):
        model = synthetic.Model(nodes=4, reps=10, slow_fraction=0.25, seed=3, noise_seed=noise)
        synthetic.write(model, tmp_path / name)
        aggregate.write(aggregate.aggregate(tmp_path / name / "raw", name), tmp_path / name / "tables")
        folders.append(str(tmp_path / name))
    # one card lost 20% between the campaigns
    b_gpus = tmp_path / "b" / "tables" / aggregate.FILES["gpus"]
    table = pd.read_csv(b_gpus)
    card = table["gpu_uuid"] == table["gpu_uuid"].iloc[0]
    table.loc[card & table["metric"].isin(["rate", "relative_rate"]), "value"] *= 0.8
    table.to_csv(b_gpus, index=False)
    out = tmp_path / "cmp"
    result = run_gpurepro("compare", *folders, "--out", str(out))
    assert result.returncode == 0, result.stderr
    # the same 16 cards measured again: matched by UUID, the slow ones slow again
    assert "cublas N=25536: 16 GPUs matched by UUID, rank correlation" in result.stderr
    summary = pd.read_csv(out / "campaign_compare.csv").set_index("statistic")["value"]
    assert summary["matched"] == 16 and summary["spearman"] > 0.8
    page = (out / "campaign_compare.md").read_text()
    assert page.startswith("# Campaign against campaign") and "16 GPUs matched by UUID" in page
    gpus = pd.read_csv(out / "campaign_compare_gpus.csv")
    named = gpus[gpus["changed"] | gpus["slow_in_both"]]
    assert table["gpu_uuid"].iloc[0] in set(named["gpu_uuid"]) and f"{table['gpu_uuid'].iloc[0]} |" in page
    assert sum(line.startswith("| cublas 25536 |") for line in page.splitlines()) == len(named)
    # a campaign against a run's results folder is refused, naming the folder that is not a campaign's
    run = tmp_path / "run" / "tables"
    run.mkdir(parents=True)
    result = run_gpurepro("compare", folders[0], str(run.parent), "--out", str(tmp_path / "x"))
    assert result.returncode != 0 and f"{run.parent} is not a campaign's folder" in result.stderr
