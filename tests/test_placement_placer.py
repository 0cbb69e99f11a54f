"""The placement object every rule asks (gpurepro/placement/placer.py): on one GPU, on several GPUs by claim
group, on a cluster, on the cpu profile and under Docker, each job's GPU, resources, threads, torch threads,
container prefix and cluster group; and common.smk keeps only what Snakemake needs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from snakemake.iocontainers import Namedlist, Wildcards

from gpurepro import registry
from gpurepro.containers.plan import ContainerPlan
from gpurepro.host import SLICE_GPUS_VAR
from gpurepro.placement import groups, host_share
from gpurepro.placement.placer import Placer, Point

from .conftest import ROOT

CORES = 16
HOST_TO_ITSELF = frozenset({"inference_host_paced", "hfta_host_paced"})


def _deit(model: str, batch: int, mode: str, run: int) -> dict[str, object]:
    return {"vit_model": model, "batch": batch, "precision": "fp16", "mode": mode, "run": run}


def _hfta(scheme: str, b: int, run: int) -> dict[str, object]:
    return {"net": "resnet18", "step": "stock", "scheme": scheme, "precision": "fp16", "b": b, "run": run}


# A small sweep: DeiT at two batches (eager is host-paced at batch 1, GPU-bound at 256), HFTA serial and
# under MPS, SGEMM and the reference job, in two rounds.
POINTS: dict[str, list[dict[str, object]]] = {
    "infer_deit": [_deit(m, b, mode, r) for r in (1, 2) for b in (1, 256) for m in ("deit-t", "deit-b")
                   for mode in ("eager", "cudagraph")],
    "hfta_point": [_hfta(s, b, r) for r in (1, 2) for s, b in (("serial", 1), ("mps", 8), ("hfta", 8))],
    "sgemm_run": [{"backend": b, "n": n} for b in ("cublas", "tiled") for n in (8192, 25536)],
    "reference_run": [{}],
}  # fmt: skip


def _seconds(points: Sequence[Point]) -> list[float]:
    """Lengths that differ by rule, so that packing has something to balance."""
    return [{"infer_deit": 30.0, "hfta_point": 50.0}.get(rule, 10.0) for rule, _ in points]


def _placer(
    gpus: Sequence[int] = (0, 1, 2, 3),
    *,
    gpu_profile: bool = True,
    cluster: bool = False,
    claim_groups: bool = True,
    engine: str = "none",
    gpu_model: str = "h100",
) -> Placer:
    containers = ContainerPlan(
        engine=engine, repo=Path("/repo"), image_id_file="build/image.id", gpu_jobs=gpu_profile,
        selected_gpus=tuple(gpus),
    )  # fmt: skip
    placer = Placer(
        gpus=gpus if gpu_profile else [], gpu_profile=gpu_profile, cluster=cluster,
        claim_groups=claim_groups, host_to_itself=HOST_TO_ITSELF, cores=CORES, gpu_model=gpu_model,
        containers=containers, seconds=_seconds,
    )  # fmt: skip
    for rule, points in POINTS.items():
        placer.plan(rule, points)
    return placer


def _wildcards(point: Mapping[str, object]) -> Wildcards:
    """A point's wildcards as Snakemake passes them: strings."""
    return Wildcards(fromdict={name: str(value) for name, value in point.items()})


def _evaluated(entries: Mapping[str, Any], point: Mapping[str, object]) -> dict[str, Any]:
    wildcards = _wildcards(point)
    return {name: entry(wildcards) if callable(entry) else entry for name, entry in entries.items()}


def _held(resources: Mapping[str, Any]) -> list[int]:
    return [int(name[4:]) for name, value in resources.items() if re.fullmatch(r"gpu_\d+", name) and value]


def test_on_one_gpu_every_point_holds_it_with_the_threads_of_its_record() -> None:
    placer = _placer((2,))
    assert not placer.placed and placer.measure_gpu == 2
    for rule in POINTS:
        assert placer.resources(rule) == {"gpu_2": 1, "gpu": 1}
        # the flags as they are: a one-GPU plan's commands stay as they were
        assert placer.flags(rule, "--seed 0") == "--seed 0"
        # every core where the record says so (eager inference), one otherwise
        assert placer.threads(rule) == (CORES if registry.BY_RULE[rule].every_core else 1)
    params = placer.params()
    assert params["host_gpu"](_wildcards({}), Namedlist(fromdict={"gpu_2": 1})) == 2
    assert params["gpu"](_wildcards({}), Namedlist(fromdict={"gpu_2": 1})) == 2
    assert placer.container_prefix() == ""
    assert placer.environment() == {}


def test_placed_points_of_one_claim_group_and_round_hold_one_gpu() -> None:
    placer = _placer()
    assert placer.placed
    by_slot: dict[groups.Slot, set[int]] = {}
    for rule, points in POINTS.items():
        resources = placer.resources(rule)
        for point in points:
            held = _held(_evaluated(resources, point))
            assert len(held) == 1, (rule, point, held)
            slot = groups.slot_of(rule, point)
            assert slot is not None
            by_slot.setdefault(slot, set()).update(held)
            assert held[0] == placer.placement().gpu(rule, point)
    assert all(len(gpus) == 1 for gpus in by_slot.values()), by_slot
    # the groups spread over more than one GPU; SGEMM and the reference rates on the first
    assert len({gpu for gpus in by_slot.values() for gpu in gpus}) > 1
    assert by_slot[groups.Slot(groups.REFERENCE_GROUP, 1)] == {0}
    # the GPU a placed job's command names is the one whose resource it holds
    params = placer.params()
    assert params["gpu"](_wildcards({}), Namedlist(fromdict={"gpu_3": 1})) == 3
    assert placer.container_prefix() == ""
    assert placer.environment() == {SLICE_GPUS_VAR: "0,1,2,3"}


def test_one_mps_point_at_a_time_on_the_node() -> None:
    placer = _placer()
    resources = placer.resources("hfta_point")
    assert _evaluated(resources, _hfta("mps", 8, 1))["mps_daemon"] == 1
    assert _evaluated(resources, _hfta("hfta", 8, 1))["mps_daemon"] == 0
    assert "mps_daemon" not in placer.resources("infer_deit")


def test_host_paced_points_keep_the_host_and_measure_with_the_one_gpu_plans_torch_threads() -> None:
    placer = _placer()
    for rule, points in POINTS.items():
        threads, flags = placer.threads(rule), placer.flags(rule, "--seed 0")
        unplaced = _placer((0,)).threads(rule)
        for point in points:
            wildcards = _wildcards(point)
            takes_host = host_share.takes_the_host(rule, point, HOST_TO_ITSELF)
            assert threads(wildcards) == (CORES if takes_host else 1)
            expected = (
                "--seed 0" if threads(wildcards) == unplaced else f"--seed 0 --torch-threads {unplaced}"
            )
            assert flags(wildcards) == expected
    # both sides of the rule's own kinds occur in the sweep, so the test reads both branches
    assert {host_share.kind_of("infer_deit", p) for p in POINTS["infer_deit"]} == {
        "inference_host_paced", "inference_gpu_bound",
    }  # fmt: skip


def test_placement_one_gpu_keeps_every_point_on_the_first() -> None:
    placer = _placer(claim_groups=False)
    assert not placer.placed
    assert placer.resources("infer_deit") == {"gpu_0": 1, "gpu": 1}
    assert placer.own_gpu_resources("reference_run") == {"gpu_0": 1, "gpu": 1}


def test_under_placement_each_gpu_measures_its_own_reference_rates() -> None:
    placer = _placer()
    resources = placer.own_gpu_resources("reference_run")
    assert _held(_evaluated(resources, {"gpu": 2})) == [2]
    params = placer.own_gpu_params()
    assert params["gpu"](_wildcards({"gpu": 2})) == "2" and params["host_gpu"](_wildcards({"gpu": 2})) == "2"


def test_on_a_cluster_a_job_asks_for_one_gpu_and_measures_gpu_0_of_it() -> None:
    placer = _placer(cluster=True)
    assert not placer.placed and placer.measure_gpu == 0 and placer.gpu_argument == "0"
    assert placer.resources("infer_deit") == {"gpu": 1, "gpu_model": "h100"}
    assert placer.per_gpu_resources() == {"gpu": 1, "gpu_model": "h100"}
    assert _placer(cluster=True, gpu_model="any").cluster_resources() == {"gpu": 1}
    assert placer.params() == {"gpu": 0}
    # the scheduler gives each job its own cores: one, also for host-paced points
    assert placer.threads("infer_deit") == 1
    # a claim group's points of one round are one group job; a process asked for later its extra round
    point = _deit("deit-b", 1, "eager", 2)
    assert placer.cluster_group("infer_deit", _wildcards(point)) == "deit_batch-1_precision-fp16_round-2"
    extra = _deit("deit-b", 1, "eager", 3)
    assert placer.cluster_group("infer_deit", _wildcards(extra)) == "deit_batch-1_precision-fp16_extra"
    assert placer.cluster_group("train_ddp", _wildcards({"ngpus": 2})) is None


def test_the_cpu_profile_holds_no_gpu_and_a_measurement_takes_every_core() -> None:
    placer = _placer(gpu_profile=False)
    assert placer.measure_gpu == placer.job_gpu == "cpu"
    assert placer.resources("sgemm_run") == placer.per_gpu_resources() == placer.all_gpus_resources() == {}
    assert placer.measure_threads() == CORES
    assert placer.params() == {"gpu": "cpu"}


def test_a_docker_job_names_gpu_0_of_the_gpu_it_is_given() -> None:
    placer = _placer(engine="docker")
    assert placer.job_gpu == 0 and placer.job_gpu_argument == "0"
    assert "--gpus {params.host_gpu} --" in placer.container_prefix()
    params = placer.params()
    resources = Namedlist(fromdict={"gpu_3": 1})
    assert (
        params["gpu"](_wildcards({}), resources) == 0 and params["host_gpu"](_wildcards({}), resources) == 3
    )
    assert placer.all_gpus_resources() == {"gpu_0": 1, "gpu_1": 1, "gpu_2": 1, "gpu_3": 1, "gpu": 4}


def test_points_registered_after_the_placement_was_made_are_refused() -> None:
    placer = _placer()
    placer.placement()
    with pytest.raises(RuntimeError, match="after the placement"):
        placer.plan("infer_deit", [_deit("deit-s", 1, "eager", 1)])


def test_common_smk_keeps_only_what_snakemake_needs() -> None:
    """At most 300 lines, and no rule file switches on rule names (the registry says what a rule is)."""
    common = ROOT / "workflow" / "rules" / "common.smk"
    assert len(common.read_text().splitlines()) <= 300
    for path in [ROOT / "Snakefile", *(ROOT / "workflow" / "rules").glob("*.smk")]:
        assert not re.search(r"\brule\w*\.(startswith|endswith)\(", path.read_text()), path
