"""The workflow through a real SLURM cluster (profiles/slurm, snakemake-executor-plugin-slurm): the cpu
quick pipeline runs job by job through sbatch with the resources its rules ask for and makes the tables a
local run makes; a GPU profile's job asks SLURM for its GPU model and, on a node without an NVIDIA GPU,
fails with the project's message instead of hanging; a cancelled job loses no raw result and a rerun
completes; a variability campaign runs one exclusive job per node, records a drained node with SLURM's
reason, and measures only that node once it is resumed. They need the test cluster that .ci/slurm.sh
starts (found through SLURM_CONF), and skip saying why without it; under CI, which starts it, they fail."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest
import yaml

from .conftest import GENEROUS_SKEW_S, ROOT, import_installable, missing_service, run_snakemake

pytestmark = pytest.mark.slurm

# What .ci/slurm.sh starts: its cluster's name (also the account jobs are charged to), and what each of
# its two nodes offers.
CLUSTER_NAME = "gpurepro-ci"
NODE_LIMITS = {"cpus_per_task": 1, "mem_mb": 8000}
GPU_NODE = "node1"
NODES = ["node1", "node2", "node3"]

PROFILE = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
# The profile's per-rule resources, cut to what one test node has (its measuring jobs ask for 4 cores and
# 32 GB), as a site with small nodes would pass them; and its defaults with the site's account.
SET_RESOURCES = {
    rule: {key: min(value, NODE_LIMITS.get(key, value)) for key, value in resources.items()}
    for rule, resources in PROFILE["set-resources"].items()
}
DEFAULT_RESOURCES = {**PROFILE["default-resources"], "slurm_account": CLUSTER_NAME}
# Short telemetry and inference windows, as in the local pipeline test, so a job takes seconds.
FAST = {
    "telemetry": {"rate_hz": 50, "idle_seconds": 0.5, "min_energy_window_s": 0.5, "cooldown_max_wait_s": 0},
    "inference": {"min_run_time_s": 0.2, "warmup": 1, "energy_window_s": 0.5},
}
SACCT_FIELDS = ["JobID", "Comment", "State", "Account", "Partition", "ReqCPUS", "ReqMem", "Timelimit"]
SACCT_FIELDS += ["ReqTRES", "NodeList", "WorkDir", "SubmitLine"]


def cluster_unavailable() -> str | None:
    """Why the slurm tests cannot run here, or None. They submit only to the test cluster, never to a
    site's own, which SLURM_CONF or /etc/slurm may name."""
    conf = os.environ.get("SLURM_CONF")
    if not conf:
        return "no test SLURM cluster: SLURM_CONF is not set (.ci/run starts one with .ci/slurm.sh)"
    if not Path(conf).is_file():
        return f"no test SLURM cluster: SLURM_CONF={conf} does not exist"
    if shutil.which("scontrol") is None:
        return "no test SLURM cluster: scontrol is not installed"
    shown = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=60)
    if shown.returncode != 0:
        return f"slurmctld of SLURM_CONF={conf} does not answer: {shown.stderr.strip()[-300:]}"
    name = re.search(r"^ClusterName\s*=\s*(\S+)", shown.stdout, re.MULTILINE)
    if name is None or name.group(1) != CLUSTER_NAME:
        return f"SLURM_CONF={conf} is not the test cluster {CLUSTER_NAME} that .ci/slurm.sh starts"
    return None


@pytest.fixture(scope="module", autouse=True)
def slurm_cluster() -> None:
    import_installable("snakemake_executor_plugin_slurm")  # pip's: never skipped under CI
    reason = cluster_unavailable()
    if reason:
        missing_service(reason)


def slurm_command(workflow: Path, *args: str, settings: dict[str, object] = FAST) -> list[str]:
    """snakemake --profile profiles/slurm with `settings` and the resources the test nodes fit; SLURM is
    asked for the jobs' states every few seconds rather than the plugin's default 40."""
    config = workflow / "test-settings.yaml"
    config.write_text(yaml.safe_dump(settings))
    set_resources = [
        f"{rule}:{key}={value}" for rule, res in SET_RESOURCES.items() for key, value in res.items()
    ]
    return [
        sys.executable, "-m", "snakemake", "--profile", "profiles/slurm",
        # a --configfile replaces the profile's: name its cluster.yaml as well
        "--configfile", "profiles/slurm/cluster.yaml", str(config),
        "--set-resources", *set_resources,
        "--default-resources", *(f"{key}={value}" for key, value in DEFAULT_RESOURCES.items()),
        "--slurm-init-seconds-before-status-checks", "2", *args,
    ]  # fmt: skip


def through_slurm(
    workflow: Path, *args: str, settings: dict[str, object] = FAST, timeout: int = 900
) -> subprocess.CompletedProcess[str]:
    command = slurm_command(workflow, *args, settings=settings)
    return subprocess.run(command, cwd=workflow, capture_output=True, text=True, timeout=timeout)


def expected_resources(rule: str) -> dict[str, object]:
    return {**DEFAULT_RESOURCES, **SET_RESOURCES.get(rule, {})}


def group_members(log: str) -> dict[str, list[str]]:
    """Each group job Snakemake submitted, by name: its jobs' rules, as its log lists them (indented,
    after a blank line, each with its shell command on a line of its own)."""
    groups: dict[str, list[str]] = {}
    rules: list[str] | None = None
    for line in log.splitlines():
        opened = re.search(r"Group job (\S+) \(jobs in lexicogr\. order\):$", line)
        if opened:
            # the first listing: a failed job's log (show-failed-logs) lists each job again
            rules = None if opened.group(1) in groups else groups.setdefault(opened.group(1), [])
        elif rules is not None and (member := re.fullmatch(r"\s+rule (\w+):", line)):
            rules.append(member.group(1))
        elif rules is not None and line and not line.startswith((" ", "\t", "Shell command:")):
            rules = None
    return groups


def job_rules(comment: str, groups: dict[str, list[str]]) -> list[str]:
    """The rules of the jobs one SLURM job ran: a group job's comment is rule_<group>_<its rules>."""
    for name, rules in groups.items():
        if comment.startswith(f"rule_{name}_"):
            return rules
    return [re.sub(r"^rule_(.+?)(?:_wildcards_.*)?$", r"\1", comment)]


def asked_resources(rules: list[str]) -> dict[str, object]:
    """What a SLURM job of these rules' jobs asks for: a group job runs them one after another (profiles/
    slurm cores: 1), so it asks for the most cores and memory of any and the sum of their runtimes."""
    each = [expected_resources(rule) for rule in rules]
    return {
        **each[0],
        "cpus_per_task": max(r["cpus_per_task"] for r in each),
        "mem_mb": max(r["mem_mb"] for r in each),
        "runtime": sum(r["runtime"] for r in each),
    }


def accounted_jobs(workflow: Path, count: int) -> pd.DataFrame:
    """sacct's record of the jobs submitted from `workflow`, one row per job with its rule, once all
    `count` are there (slurmctld hands a job's end to slurmdbd a moment after it ends)."""
    deadline = time.monotonic() + 60
    while True:
        listed = subprocess.run(
            ["sacct", "--allocations", "--parsable2", "--noheader", "--starttime", "now-1days",
             "--format", ",".join(SACCT_FIELDS)],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        rows = [dict(zip(SACCT_FIELDS, line.split("|"), strict=True)) for line in listed.stdout.splitlines()]
        jobs = pd.DataFrame(rows, columns=SACCT_FIELDS)
        jobs = jobs[jobs["WorkDir"] == str(workflow)].copy()
        jobs["rule"] = jobs["Comment"].str.extract(r"^rule_(.+?)(?:_wildcards_.*)?$", expand=False)
        if (len(jobs) >= count and jobs["rule"].notna().all()) or time.monotonic() > deadline:
            return jobs
        time.sleep(2)


def submitted_jobs(log: str) -> list[str]:
    return re.findall(r"has been submitted with SLURM jobid (\d+)", log)


def timelimit(minutes: object) -> str:
    return f"{int(minutes) // 60:02d}:{int(minutes) % 60:02d}:00"


def table_shape(path: Path) -> tuple[list[str], list[tuple[str, ...]]]:
    """A table's columns and its rows' text columns (what was measured, not the numbers). The HFTA
    summary's at_best_b rows (and their intervals' ends) are left out: which B the fused array peaks at is
    itself measured (on a CPU B=1 and B=2 trade places from run to run), and a baseline has such rows only
    where it ran at that B."""
    table = pd.read_csv(path)
    if path.name == "hfta_speedup.csv":
        table = table[~table["statistic"].astype(str).str.startswith("at_best_b")]
    text = [column for column in table.columns if table[column].dtype == object]
    return list(table.columns), sorted(table[text].astype(str).itertuples(index=False, name=None))


def assert_raw_files_whole(raw: Path) -> None:
    """Every raw file is complete: no temporary file left, every table parses, every sidecar is JSON."""
    assert not [p.name for p in raw.rglob(".*.tmp")]
    for path in raw.rglob("*.csv"):
        assert len(pd.read_csv(path)) > 0, path
        sidecar = path.with_name(f"{path.stem}.provenance.json")
        assert json.loads(sidecar.read_text())["file"] == path.name


@pytest.mark.pipeline
def test_cpu_quick_pipeline_runs_through_sbatch(workflow_copy: Path) -> None:
    result = through_slurm(workflow_copy, "--config", "device=cpu", "quick=true")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]

    # every job that is not a local rule went through sbatch, alone or in its claim group's job, and sacct
    # shows it with what its rules asked
    groups = group_members(log)
    remote_rules = set(re.findall(r"^rule (\w+):$", log, re.MULTILINE))
    assert "sgemm_run" in {rule for rules in groups.values() for rule in rules}
    assert "plot_sgemm" not in remote_rules
    jobs = accounted_jobs(workflow_copy, len(submitted_jobs(log)))
    assert sorted(jobs["JobID"]) == sorted(submitted_jobs(log))
    jobs["rules"] = [job_rules(comment, groups) for comment in jobs["Comment"]]
    assert {rule for rules in jobs["rules"] for rule in rules} == remote_rules | {
        rule for rules in groups.values() for rule in rules
    }
    assert set(jobs["State"]) == {"COMPLETED"}, jobs[["JobID", "rule", "State"]]
    for job in jobs.itertuples():
        asked = asked_resources(job.rules)
        assert job.Partition == asked["slurm_partition"] and job.Account == asked["slurm_account"], job
        assert int(job.ReqCPUS) == asked["cpus_per_task"], job
        assert job.ReqMem == f"{asked['mem_mb']}M", job
        assert job.Timelimit == timelimit(asked["runtime"]), job
        assert "gres/gpu" not in job.ReqTRES, job  # the cpu profile asks for no GPU
    assert set(jobs["NodeList"]) <= set(NODES)

    # the same tables, columns and rows, as the same pipeline run here without SLURM
    local = run_snakemake(
        "--cores", "2", "--configfile", str(workflow_copy / "test-settings.yaml"),
        "--config", "device=cpu", "quick=true", "results_dir=results-local", cwd=workflow_copy,
    )  # fmt: skip
    assert local.returncode == 0, local.stderr[-4000:]
    cluster_tables = workflow_copy / "results" / "cpu" / "tables"
    local_tables = workflow_copy / "results-local" / "cpu" / "tables"
    names = sorted(path.name for path in cluster_tables.iterdir())
    assert names == sorted(path.name for path in local_tables.iterdir())
    assert {"sgemm.csv", "variability_reps.csv", "inference_bert.csv", "hfta.csv"} <= set(names)
    for name in names:
        assert table_shape(cluster_tables / name) == table_shape(local_tables / name), name
    assert (workflow_copy / "results" / "cpu" / "verdict.md").is_file()


def test_gpu_job_asks_for_its_model_and_fails_plainly_without_a_gpu(workflow_copy: Path) -> None:
    # an SGEMM point and the reference rates: one claim group, so one job of one GPU
    targets = ["results/h100/sgemm/raw/torch_n256.csv", "results/h100/reference/raw/rates.csv"]
    started = time.monotonic()
    result = through_slurm(workflow_copy, *targets, "--config", "device=h100", "quick=true", timeout=600)
    log = result.stdout + result.stderr
    assert result.returncode != 0, log[-4000:]
    assert time.monotonic() - started < 300, "the failed GPU job kept Snakemake waiting"

    (job_id,) = submitted_jobs(log)
    assert group_members(log) == {"sgemm_round-1": ["reference_run", "sgemm_run"]}, log[-4000:]
    # Snakemake 9.27 reports a failed group job as such, without the plugin's SLURM status
    assert "Error in group sgemm_round-1" in log, log[-4000:]
    (job,) = accounted_jobs(workflow_copy, 1).itertuples()
    # one GPU for both, which run one after another: the most either asks, and both runtimes
    assert "--gpus=h100:1" in job.SubmitLine, job.SubmitLine
    assert "gres/gpu:h100=1" in job.ReqTRES and job.NodeList == GPU_NODE, job
    assert job.Timelimit == timelimit(asked_resources(["sgemm_run", "reference_run"])["runtime"]), job
    assert job.State == "FAILED"
    # the project's message, in the log of the job that ran first and in Snakemake's report of the failure
    message = "cannot measure on GPU 0: NVML could not start"
    logs = workflow_copy / "results" / "h100" / "logs"
    member_logs = (logs / "sgemm" / "torch_n256.log", logs / "reference" / "rates.log")
    assert any(path.exists() and message in path.read_text() for path in member_logs)
    assert message in log and "no NVIDIA driver or GPU here" in log
    assert not any((workflow_copy / target).exists() for target in targets)


def job_steps(job_id: str) -> pd.DataFrame:
    """The numbered steps of one SLURM job (one srun each: the slurm-jobstep executor runs each of a group
    job's jobs as one), with their start, end and node, in the order they started."""
    fields = ["JobID", "Start", "End", "NodeList", "State"]
    listed = subprocess.run(
        ["sacct", "--jobs", job_id, "--parsable2", "--noheader", "--format", ",".join(fields)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in listed.stdout.splitlines()]
    steps = pd.DataFrame(rows, columns=fields)
    steps = steps[steps["JobID"].str.fullmatch(rf"{job_id}\.\d+")].copy()
    for column in ("Start", "End"):
        # sacct's times are the cluster's local time
        steps[column] = [datetime.fromisoformat(value).astimezone(timezone.utc) for value in steps[column]]
    return steps.sort_values("Start")


def measured_window(raw_table: Path) -> tuple[datetime, datetime, str]:
    """When a raw table's measurement started and ended, and on which host (its provenance sidecar)."""
    record = json.loads(raw_table.with_name(f"{raw_table.stem}.provenance.json").read_text())
    start, end = (datetime.fromisoformat(record[key]) for key in ("start_time", "end_time"))
    return start, end, record["host"]["hostname"]


def test_a_claim_groups_points_run_in_one_allocation_one_after_another(workflow_copy: Path) -> None:
    """The SGEMM points and the reference rates, which one claim group compares (gpurepro/placement/
    groups.py), run in one SLURM job on one node, one after another; a DeiT point, of another claim
    group, in a job of its own."""
    group = [
        "results/cpu/sgemm/raw/torch_n256.csv",
        "results/cpu/sgemm/raw/torch_n512.csv",
        "results/cpu/reference/raw/rates.csv",
    ]
    deit = "results/cpu/inference/raw/deit/deit-t_b1_fp32_eager_run1.csv"
    result = through_slurm(workflow_copy, *group, deit, "--config", "device=cpu", "quick=true")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert group_members(log) == {
        "sgemm_round-1": ["reference_run", "sgemm_run", "sgemm_run"],
        "deit_batch-1_precision-fp32_round-1": ["infer_deit"],
    }, log[-4000:]

    jobs = accounted_jobs(workflow_copy, 2)
    assert sorted(jobs["JobID"]) == sorted(submitted_jobs(log)) and len(jobs) == 2
    assert set(jobs["State"]) == {"COMPLETED"}, jobs
    (job,) = jobs[jobs["Comment"].str.startswith("rule_sgemm_round-1_")].itertuples()
    # one allocation of one node, asking for the most one point asks and for all their runtimes
    assert job.NodeList in NODES and job.Timelimit == timelimit(
        asked_resources(["sgemm_run", "sgemm_run", "reference_run"])["runtime"]
    ), job
    # its three points: one step each, on its node, each after the one before
    steps = job_steps(job.JobID)
    assert len(steps) == 3 and set(steps["NodeList"]) == {job.NodeList}, steps
    assert (steps["End"].to_numpy()[:-1] <= steps["Start"].to_numpy()[1:]).all(), steps
    # and their provenance: measured on one host within those steps, never two at once
    windows = sorted(measured_window(workflow_copy / target) for target in group)
    assert len({host for _, _, host in windows}) == 1
    ends, starts = [end for _, end, _ in windows[:-1]], [start for start, _, _ in windows[1:]]
    assert all(end <= start for end, start in zip(ends, starts, strict=True)), windows
    allocated = (steps["Start"].min() - timedelta(seconds=1), steps["End"].max() + timedelta(seconds=1))
    assert all(allocated[0] <= start and end <= allocated[1] for start, end, _ in windows), (windows, steps)


def running_job(comment: str, log: Path) -> str:
    """The id of the job with this sbatch comment, once it runs and its rule's command has started."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        queue = subprocess.run(
            ["squeue", "--noheader", "--format=%i|%T|%k"], capture_output=True, text=True, timeout=60
        )
        for job_id, state, job_comment in (line.split("|", 2) for line in queue.stdout.splitlines()):
            if job_comment.strip() == comment and state == "RUNNING" and log.exists():
                return job_id
        time.sleep(0.5)
    pytest.fail(f"no running job {comment} within 180 s: {queue.stdout}{queue.stderr}")


def test_cancelled_job_is_reported_and_a_rerun_completes(workflow_copy: Path) -> None:
    # A 10 s idle baseline keeps each job running long enough to be cancelled in the middle of it.
    settings = {**FAST, "telemetry": {**FAST["telemetry"], "idle_seconds": 10}}
    results = workflow_copy / "results" / "cpu"
    raw = results / "sgemm" / "raw"
    # two claim groups' points, so two SLURM jobs (SGEMM's points share one: see the test below)
    deit = "results/cpu/inference/raw/deit/deit-t_b1_fp32_eager_run1.csv"
    targets = [deit, "results/cpu/sgemm/raw/torch_n128.csv"]
    args = [*targets, "--config", "device=cpu", "quick=true"]
    output = workflow_copy / "snakemake.out"
    with output.open("w") as out:
        run = subprocess.Popen(
            slurm_command(workflow_copy, *args, "--keep-going", settings=settings),
            cwd=workflow_copy, stdout=out, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    try:
        job_id = running_job("rule_sgemm_round-1_sgemm_run", results / "logs" / "sgemm" / "torch_n128.log")
        subprocess.run(["scancel", job_id], check=True, timeout=60)
        status = run.wait(timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Snakemake still waits 300 s after the cancel: {output.read_text()[-4000:]}")
    finally:
        run.kill()
        run.wait()
    log = output.read_text()
    assert status != 0, log[-4000:]
    # a group job of one point (Snakemake 9.27 reports it without the plugin's SLURM status)
    assert "Error in group sgemm_round-1" in log, log[-4000:]
    (job,) = accounted_jobs(workflow_copy, 2).query("JobID == @job_id").itertuples()
    assert job.State.startswith("CANCELLED")

    # the other job's results are whole and kept; of the cancelled one, nothing
    assert not list(raw.glob("*"))
    deit_raw = (workflow_copy / deit).parent
    kept = sorted(deit_raw.iterdir())
    assert [path.name for path in kept] == sorted(
        f"deit-t_b1_fp32_eager_run1{suffix}"
        for suffix in (".csv", ".provenance.json", ".telemetry.csv", ".telemetry.provenance.json")
    )
    assert_raw_files_whole(deit_raw)
    stamps = {path: path.stat().st_mtime_ns for path in kept}

    rerun = through_slurm(workflow_copy, *args, settings=settings)
    log = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, log[-4000:]
    assert len(submitted_jobs(log)) == 1 and "wildcards: backend=torch, n=128" in log
    assert {path: path.stat().st_mtime_ns for path in kept} == stamps
    assert (raw / "torch_n128.csv").is_file()
    assert_raw_files_whole(raw)


def node_state(node: str, *update: str) -> None:
    subprocess.run(["scontrol", "update", f"nodename={node}", *update], check=True, timeout=60)


def campaign_dir(workflow: Path) -> Path:
    return workflow / "results" / "cpu" / "campaign" / "ci"


def campaign_table(workflow: Path) -> pd.DataFrame:
    return pd.read_csv(campaign_dir(workflow) / "tables" / "campaign_nodes.csv")


@pytest.mark.pipeline
def test_campaign_one_job_per_node_a_drained_node_recorded_then_measured_alone(workflow_copy: Path) -> None:
    campaign = {"name": "ci", "nodes": ["node[1-3]"], "gpus_per_node": 2, "run_minutes": 1}
    settings = {**FAST, "campaign": campaign}
    args = ["campaign", "--keep-going", "--config", "device=cpu", "quick=true"]
    node_state("node3", "state=drain", "reason=gpurepro test: fan failure")
    try:
        result = through_slurm(workflow_copy, *args, settings=settings)
    finally:
        node_state("node3", "state=resume")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert "campaign: 2 node(s) x 2 GPU(s)" in log and "1 unavailable in SLURM" in log

    # one exclusive job per available node, on that node; the drained one was never submitted
    jobs = accounted_jobs(workflow_copy, 2)
    assert sorted(jobs["rule"]) == ["campaign_node", "campaign_node"], jobs[["rule", "NodeList"]]
    assert sorted(jobs["NodeList"]) == ["node1", "node2"] and set(jobs["State"]) == {"COMPLETED"}
    for job in jobs.itertuples():
        assert f"--nodelist={job.NodeList}" in job.SubmitLine and "--exclusive" in job.SubmitLine, job
    nodes = campaign_table(workflow_copy).set_index("node")
    assert nodes.loc["node3", "status"] == "unavailable"
    assert "drain" in nodes.loc["node3", "reason"] and "fan failure" in nodes.loc["node3", "reason"]
    for node in ("node1", "node2"):
        assert nodes.loc[node, "status"] == "measured" and nodes.loc[node, "gpus_measured"] == 2
        # the node's two stand-ins left the barrier together (a generous bound: GENEROUS_SKEW_S)
        assert 0 <= nodes.loc[node, "start_skew_s"] < GENEROUS_SKEW_S
    raw = campaign_dir(workflow_copy) / "raw"
    assert_raw_files_whole(raw)
    kept = {path: path.stat().st_mtime_ns for path in raw.rglob("*") if path.is_file()}

    # resumed: the second run submits node3 alone, in a new attempt; nothing measured before is touched
    rerun = through_slurm(workflow_copy, *args, settings=settings)
    log = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, log[-4000:]
    assert len(submitted_jobs(log)) == 1 and "wildcards: node=node3, attempt=2" in log, log[-4000:]
    assert {path: path.stat().st_mtime_ns for path in kept} == kept
    nodes = campaign_table(workflow_copy)
    node3 = nodes[nodes["node"] == "node3"].set_index("attempt")
    assert node3.loc[1, "status"] == "unavailable" and not node3.loc[1, "current"]
    assert node3.loc[2, "status"] == "measured" and node3.loc[2, "current"]
    summary = pd.read_csv(campaign_dir(workflow_copy) / "tables" / "campaign_summary.csv")
    assert summary.query("metric == 'gpus'")["value"].item() == 6
    assert (campaign_dir(workflow_copy) / "plots" / "campaign.png").is_file()
