"""Claim-affine placement: the points one claim compares share a GPU within a round, the groups of each
round are packed onto the selected GPUs longest first, one GPU plans as before, and the estimate says
how the GPUs share the wall time (gpurepro/placement/placer.py, workflow/rules/placement.smk)."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpurepro import registry
from gpurepro.placement import groups, host_share, packing
from gpurepro.placement.groups import EXTRA_ROUND, Slot

from .conftest import copy_workflow, import_installable, run_snakemake

# the resources of a job on GPU 0 of a one-GPU plan (Snakemake's tmpdir is the system's, as $TMPDIR says)
ON_GPU_0 = {"tmpdir": tempfile.gettempdir(), "gpu_0": "1", "gpu": "1"}


def _deit(model: str, batch: int, precision: str, mode: str, run: int) -> dict[str, object]:
    return {"vit_model": model, "batch": batch, "precision": precision, "mode": mode, "run": run}


def test_the_points_a_claim_compares_fall_in_one_group() -> None:
    """DeiT's orders, differences and eager-vs-graph claims read every model and mode at one batch and
    precision; HFTA's speedups every scheme, B and step of one workload and precision; SGEMM's ratios
    both kernels at one N, and its scaled rates the reference job's rate."""
    deit = {
        groups.group_of("infer_deit", _deit(model, 1, "fp16", mode, 1))
        for model in ("deit-t", "deit-s", "deit-b")
        for mode in ("eager", "cudagraph", "compile")
    }
    assert deit == {"deit/batch=1/precision=fp16"}
    assert groups.group_of("infer_deit", _deit("deit-t", 8, "fp16", "eager", 1)) not in deit
    assert groups.group_of("infer_deit", _deit("deit-t", 1, "fp32", "eager", 1)) not in deit
    bert = {"bert_model": "bert-l", "seq": "320", "batch": "1", "precision": "fp16", "mode": "eager"}
    assert groups.group_of("infer_bert", bert) == "bert/batch=1/precision=fp16"
    point = {"net": "resnet18", "precision": "fp16"}
    hfta = {
        groups.group_of("hfta_point", {**point, "step": step, "scheme": scheme, "b": b})
        for step in ("stock", "graphed")
        for scheme in ("serial", "mps", "hfta")
        for b in (1, 32)
    }
    assert hfta == {"hfta/net=resnet18/precision=fp16"}
    sgemm = {
        groups.group_of("sgemm_run", {"backend": b, "n": n})
        for b in ("cublas", "tiled")
        for n in (8192, 25536)
    }
    assert sgemm == {groups.group_of("reference_run", {})} == {groups.REFERENCE_GROUP}
    # DDP and the variability node job hold the GPUs they drive, as before
    assert groups.group_of("train_ddp", {"ngpus": "2", "precision": "fp16"}) is None
    assert groups.group_of("variability_node", {"backend": "cublas", "run": "1"}) is None


def test_a_group_is_placed_round_by_round() -> None:
    assert groups.slot_of("infer_deit", _deit("deit-b", 1, "fp16", "eager", 3)) == Slot(
        "deit/batch=1/precision=fp16", 3
    )
    assert groups.slot_of("sgemm_run", {"backend": "tiled", "n": "8192"}) == Slot("sgemm", 1)
    assert groups.slot_of("plot_deit", {}) is None


def test_longest_first_onto_the_least_loaded_gpu() -> None:
    lengths = {Slot("a", 1): 10.0, Slot("b", 1): 7.0, Slot("c", 1): 5.0, Slot("d", 1): 4.0}
    assert packing.pack(lengths, [0, 1], {}) == {
        Slot("a", 1): 0,
        Slot("b", 1): 1,
        Slot("c", 1): 1,  # 7 < 10
        Slot("d", 1): 0,  # 10 < 12
    }


def test_rounds_are_packed_in_order_and_a_pinned_group_keeps_its_gpu() -> None:
    """Round 2 starts from the loads round 1 left, so its longest group goes where round 1 ended first:
    a group may move to another card between rounds. The pinned group (SGEMM and the reference rates)
    stays on its GPU, taken before the others of its round."""
    lengths = {
        Slot("long", 1): 10.0,
        Slot("short", 1): 3.0,
        Slot("sgemm", 1): 1.0,
        Slot("long", 2): 10.0,
        Slot("short", 2): 3.0,
    }
    placed = packing.pack(lengths, [4, 6], {"sgemm": 6})
    assert placed[Slot("sgemm", 1)] == 6
    assert placed[Slot("long", 1)] == 4 and placed[Slot("short", 1)] == 6  # 1 + 3 on GPU 6
    assert placed[Slot("long", 2)] == 6 and placed[Slot("short", 2)] == 4  # 4 < 10, then 10 < 14
    with pytest.raises(ValueError, match="no GPU"):
        packing.pack(lengths, [], {})


def _points() -> Iterator[tuple[str, dict[str, object]]]:
    """A small sweep: DeiT at two batches in 3 rounds (the CUDA-graph point in one), SGEMM, reference."""
    for run in (1, 2, 3):
        for batch in (1, 32):
            for model in ("deit-t", "deit-b"):
                yield "infer_deit", _deit(model, batch, "fp16", "eager", run)
    yield "infer_deit", _deit("deit-b", 1, "fp16", "cudagraph", 1)
    for n in (8192, 25536):
        for backend in ("cublas", "tiled"):
            yield "sgemm_run", {"backend": backend, "n": n}
    yield "reference_run", {}


def test_every_job_of_a_group_and_round_gets_one_gpu_and_extra_processes_follow_round_one() -> None:
    points = list(_points())
    placement = packing.place(points, [30.0 if rule == "infer_deit" else 20.0 for rule, _ in points], [2, 3])
    by_slot: dict[Slot, set[int | None]] = {}
    for rule, wildcards in points:
        slot = groups.slot_of(rule, wildcards)
        assert slot is not None
        by_slot.setdefault(slot, set()).add(placement.gpu(rule, wildcards))
    assert all(len(gpus) == 1 for gpus in by_slot.values()), by_slot
    assert {gpu for gpus in by_slot.values() for gpu in gpus} == {2, 3}
    assert by_slot[Slot("sgemm", 1)] == {2}  # the first selected GPU
    # Snakemake passes wildcards as strings; the sweeps hold numbers
    assert placement.gpu("infer_deit", {k: str(v) for k, v in points[0][1].items()}) == placement.gpu(
        *points[0]
    )
    # a process a claim asks for after the planned rounds (run 4, or the CUDA-graph point's run 2, which
    # round 2 of the group did not hold) runs where its group's round 1 ran, whatever its run number
    first = placement.slots[Slot("deit/batch=1/precision=fp16", 1)]
    assert placement.gpu("infer_deit", _deit("deit-t", 1, "fp16", "eager", 4)) == first
    assert placement.gpu("infer_deit", _deit("deit-b", 1, "fp16", "cudagraph", 2)) == first
    assert Slot("deit/batch=1/precision=fp16", EXTRA_ROUND) not in placement.slots
    assert placement.gpu("plot_deit", {}) is None


def test_the_gpus_end_within_one_group_of_each_other() -> None:
    """Each group goes to the least loaded GPU, so no GPU ends more than one group's length after the
    first to end (the classic bound of longest-first packing)."""
    lengths = {Slot(f"g{i}", r): float((7 * i + 3 * r) % 11 + 1) for i in range(13) for r in (1, 2, 3)}
    placed = packing.pack(lengths, [0, 1, 2, 3], {})
    load = {gpu: sum(s for slot, s in lengths.items() if placed[slot] == gpu) for gpu in range(4)}
    assert max(load.values()) - min(load.values()) <= max(lengths.values())


def test_the_record_names_each_groups_gpu_round_by_round(tmp_path: Path) -> None:
    points = list(_points())
    placement = packing.place(points, [1.0] * len(points), [0, 1])
    path = packing.write(placement, tmp_path / "h100" / "placement.json")
    record = json.loads(path.read_text())
    assert record["gpus"] == [0, 1]
    assert set(record["groups"]["deit/batch=32/precision=fp16"]) == {"1", "2", "3"}
    assert record["groups"]["sgemm"] == {"1": 0}
    assert not list(path.parent.glob("*.tmp"))


# Dry-runs of the full H100 plan with the default placement, claim_groups (about 15 s each), made once
# for the tests below, in one copy of the workflow: in the checkout a plan would read the user's results/.
@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    copy = copy_workflow(tmp_path_factory.mktemp("workflow"))
    made = {}
    for name, gpus, printed, more in (
        ("one", "[0]", ["-p"], []),
        ("four", "[0,1,2,3]", ["-p"], []),
        ("eight", "[0,1,2,3,4,5,6,7]", [], []),
        # every kind of point beside the other GPUs' jobs, none keeping the host to itself
        ("four_shared", "[0,1,2,3]", [], ["host_to_itself=[]"]),
        ("eight_shared", "[0,1,2,3,4,5,6,7]", [], ["host_to_itself=[]"]),
    ):
        result = run_snakemake(
            "-n", *printed, "--cores", "16", "--config", "device=h100", f"gpus={gpus}", *more, cwd=copy
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        made[name] = result.stdout + result.stderr
    return made


PLACED_RULES = tuple(registry.PLACED)


def _placed_jobs(planned: str) -> list[tuple[str, dict[str, str], dict[str, str], str]]:
    """(rule, wildcards, resources, shell command) of each placed job a dry-run with -p printed."""
    found = []
    for block in re.split(r"\n(?=\[[^\n]*\]\n(?:local)?rule )", planned):
        head = re.search(r"^(?:local)?rule (\w+):", block, flags=re.MULTILINE)
        if not head or head.group(1) not in PLACED_RULES:
            continue
        wildcards = re.search(r"^\s+wildcards: (.*)$", block, flags=re.MULTILINE)
        resources = re.search(r"^\s+resources: (.*)$", block, flags=re.MULTILINE)
        command = re.search(r"^Shell command: (.*)$", block, flags=re.MULTILINE)
        assert resources and command, block[:500]
        pairs = (
            dict(p.split("=", 1) for p in text.group(1).split(", ")) if text else {}
            for text in (wildcards, resources)
        )
        found.append((head.group(1), *pairs, command.group(1)))
    return found


def _threads_by_kind(planned: str) -> dict[str, set[int]]:
    """The threads the placed jobs of each kind (host_share.KINDS) have in a dry-run printed with -p."""
    found: dict[str, set[int]] = {}
    for block in re.split(r"\n(?=\[[^\n]*\]\n(?:local)?rule )", planned):
        head = re.search(r"^(?:local)?rule (\w+):", block, flags=re.MULTILINE)
        wildcards = re.search(r"^\s+wildcards: (.*)$", block, flags=re.MULTILINE)
        if not head or head.group(1) not in PLACED_RULES:
            continue
        values = dict(p.split("=", 1) for p in wildcards.group(1).split(", ")) if wildcards else {}
        threads = re.search(r"^\s+threads: (\d+)$", block, flags=re.MULTILINE)
        kind = host_share.kind_of(head.group(1), values)
        found.setdefault(kind, set()).add(int(threads.group(1)) if threads else 1)
    return found


def test_host_paced_points_take_every_core_the_others_one_when_placed(plans: dict[str, str]) -> None:
    """config host_to_itself (inference_host_paced, hfta_host_paced by default): those points take all 16
    cores, so Snakemake runs nothing beside them; the others one each, side by side on their slices. On
    one GPU every inference point takes every core, as before placement existed."""
    four = _threads_by_kind(plans["four"])
    assert four == {
        "inference_host_paced": {16}, "hfta_host_paced": {16},
        "inference_gpu_bound": {1}, "hfta_gpu_bound": {1}, "sgemm": {1},
    }  # fmt: skip
    one = _threads_by_kind(plans["one"])
    assert one["inference_gpu_bound"] == {16} and one["hfta_host_paced"] == {1}


def test_a_placed_point_measures_with_the_torch_threads_of_the_one_gpu_plan(plans: dict[str, str]) -> None:
    """The cores a placed job holds decide what runs beside it, not the threads it measures with: a serial
    HFTA point that keeps the host holds all 16 cores and measures with one torch thread, as on one GPU; a
    CUDA-graph inference point holds one core and asks for every core's threads, as on one GPU (its slice
    caps them). The one-GPU plan's commands never name --torch-threads."""
    asked: dict[str, set[str]] = {}
    for rule, wildcards, _, command in _placed_jobs(plans["four"]):
        found = re.search(r"--torch-threads (\d+)", command)
        asked.setdefault(host_share.kind_of(rule, wildcards) or rule, set()).add(found[1] if found else "")
    assert asked["hfta_host_paced"] == {"1"} and asked["inference_gpu_bound"] == {"16"}
    assert asked["inference_host_paced"] == asked["hfta_gpu_bound"] == asked["sgemm"] == {""}
    assert all("--torch-threads" not in command for *_, command in _placed_jobs(plans["one"]))


def test_kinds_of_points() -> None:
    assert host_share.kind_of("infer_deit", {"mode": "eager", "batch": "8"}) == "inference_host_paced"
    assert host_share.kind_of("infer_bert", {"mode": "eager", "batch": "16"}) == "inference_gpu_bound"
    assert host_share.kind_of("infer_bert", {"mode": "cudagraph", "batch": "1"}) == "inference_gpu_bound"
    assert (
        host_share.kind_of("hfta_point", {"scheme": "serial", "step": "graphed", "b": "1"})
        == "hfta_host_paced"
    )
    assert (
        host_share.kind_of("hfta_point", {"scheme": "hfta", "step": "stock", "b": "8"}) == "hfta_host_paced"
    )
    assert host_share.kind_of("hfta_point", {"scheme": "mps", "step": "stock", "b": "16"}) == "hfta_gpu_bound"
    assert host_share.kind_of("reference_run", {}) == "sgemm"
    assert host_share.kind_of("train_ddp", {}) is None


def _held_gpu(resources: dict[str, str]) -> int:
    held = [
        int(name[4:]) for name, value in resources.items() if re.fullmatch(r"gpu_\d+", name) and value == "1"
    ]
    assert len(held) == 1 and resources["gpu"] == "1", resources
    return held[0]


def _grouped(
    jobs: list[tuple[str, dict[str, str], dict[str, str], str]],
) -> list[tuple[str, dict[str, str], dict[str, str], str]]:
    """The jobs placed by claim group: under placement each GPU measures its own reference rates, a job
    per GPU (test_each_gpu_measures_its_own_reference_rates_when_placed)."""
    return [job for job in jobs if not (job[0] == "reference_run" and "gpu" in job[1])]


def test_four_gpus_each_carry_claim_groups_never_split_within_a_round(plans: dict[str, str]) -> None:
    jobs = _placed_jobs(plans["four"])
    assert {rule for rule, *_ in jobs} == set(PLACED_RULES)
    by_slot: dict[Slot, set[int]] = {}
    for rule, wildcards, resources, command in _grouped(jobs):
        gpu = _held_gpu(resources)
        # the command measures the GPU whose resource the job holds
        named = re.search(r" --gpu (\d+) ", command) or re.search(
            r"^gpurepro (?:sgemm \d+ \d+|reference) (\d+) ", command
        )
        assert named and int(named.group(1)) == gpu, command
        slot = groups.slot_of(rule, wildcards)
        assert slot is not None
        by_slot.setdefault(slot, set()).add(gpu)
    split = {slot: gpus for slot, gpus in by_slot.items() if len(gpus) > 1}
    assert not split
    assert {gpu for gpus in by_slot.values() for gpu in gpus} == {0, 1, 2, 3}
    assert by_slot[Slot(groups.REFERENCE_GROUP, 1)] == {0}
    # a group moves between rounds where the packing sends it elsewhere
    moved = {
        group for group in {slot.group for slot in by_slot}
        if len({gpu for slot, gpus in by_slot.items() if slot.group == group for gpu in gpus}) > 1
    }  # fmt: skip
    assert moved


def test_one_gpu_plans_as_before_and_placement_changes_only_the_gpu(plans: dict[str, str]) -> None:
    """On one GPU every measuring job holds gpu_0 and names GPU 0 as the placer's measure_resources() and
    job_gpu gave it; on four, the same commands but for the GPU each job holds and, where its cores
    differ from the one-GPU plan's, the torch threads it has there (test above)."""
    one = {(rule, tuple(sorted(w.items()))): (r, c) for rule, w, r, c in _placed_jobs(plans["one"])}
    four = {
        (rule, tuple(sorted(w.items()))): (r, c) for rule, w, r, c in _grouped(_placed_jobs(plans["four"]))
    }
    one.pop(("reference_run", ()))  # four GPUs measure the rates on each (test below)
    assert one.keys() == four.keys()
    assert len(one) > 400  # the full H100 plan's measuring jobs
    for key, (resources, command) in one.items():
        assert resources == ON_GPU_0, key
        other_resources, other_command = four[key]
        gpu = _held_gpu(other_resources)
        as_one = re.sub(rf"( --gpu | (?:sgemm \d+ \d+|reference) ){gpu} ", r"\g<1>0 ", other_command, count=1)
        as_one = re.sub(r" --torch-threads \d+", "", as_one)
        assert as_one == command, (key, other_command)
    assert "GPUs side by side" not in plans["one"]


def test_each_gpu_measures_its_own_reference_rates_when_placed(plans: dict[str, str]) -> None:
    """Under placement every selected GPU measures its reference rates, each job holding its own
    gpu_<g> and naming it, so that a claim is scaled by its own card's rates (issue 60, item 5); one GPU
    plans the one job of old, at its old path, so finished results are not measured again."""
    four = [(w, r, c) for rule, w, r, c in _placed_jobs(plans["four"]) if rule == "reference_run"]
    assert sorted(int(wildcards["gpu"]) for wildcards, _, _ in four) == [0, 1, 2, 3]
    for wildcards, resources, command in four:
        gpu = int(wildcards["gpu"])
        assert _held_gpu(resources) == gpu
        assert command.startswith(f"gpurepro reference {gpu} "), command
        assert f" --out results/h100/reference/raw/rates_gpu{gpu}.csv " in command
    table = re.search(r"rule reference:\n\s+input: (.*)", plans["four"])
    assert table and table.group(1).count("reference/raw/rates_gpu") == 4
    assert re.search(r"^reference_run\s+8$", plans["eight"], flags=re.MULTILINE)

    [(wildcards, resources, command)] = [
        (w, r, c) for rule, w, r, c in _placed_jobs(plans["one"]) if rule == "reference_run"
    ]
    assert wildcards == {} and resources == ON_GPU_0
    assert command.startswith("gpurepro reference 0 ")
    assert " --out results/h100/reference/raw/rates.csv " in command


def _side_by_side(planned: str) -> tuple[str, str]:
    """Each GPU's least and most seconds of jobs, as the estimate prints them."""
    line = next(line for line in planned.splitlines() if "GPUs side by side" in line)
    found = re.search(r"side by side, (.+?) to (.+?) of jobs each", line)
    assert found, line
    return found.group(1), found.group(2)


def _seconds(printed: str) -> float:
    """'2 h 36 min', '58 min 12 s' or '45 s' in seconds."""
    units = {"h": 3600, "min": 60, "s": 1}
    return sum(float(value) * units[unit] for value, unit in re.findall(r"(\d+) (h|min|s)\b", printed))


def _wall(planned: str) -> float:
    return _seconds(re.search(r"jobs planned, about (.+?) with", planned).group(1))


def test_the_gpus_work_is_packed_within_the_targets(plans: dict[str, str]) -> None:
    """Issue 60's targets for the full H100 plan, 3 h 30 min on four GPUs and 2 h on eight, hold for
    each GPU's own jobs: the groups are packed within minutes of each other."""
    for name, target, gpus in (("four", 3.5 * 3600, 4), ("eight", 2 * 3600, 8)):
        low, high = map(_seconds, _side_by_side(plans[name]))
        assert f"{gpus} GPUs side by side" in plans[name]
        assert high <= target and high - low <= 5 * 60, (name, low, high)
        assert _wall(plans[name]) < _wall(plans["one"])


def _worst(planned: str) -> float:
    return _seconds(
        re.search(r"more processes where claims stay inconclusive .*?: about (.+?) in all", planned).group(1)
    )


def test_the_full_plan_meets_its_wall_time_targets_with_host_paced_points_alone(
    plans: dict[str, str],
) -> None:
    """With host-paced points keeping the host to themselves (config host_to_itself as shipped: on four
    H200s eager DeiT-B batch 1 read 1.66x slower beside busy neighbours, serial HFTA 0.91x;
    benchmarks/isolation.py, docs/runtime.md), the full H100 plan prints at most 4 h on one GPU, 3 h 30
    min on four and 2 h on eight, and at worst, with its rounds of more processes, 2 h 15 min on eight."""
    assert _wall(plans["one"]) <= 4 * 3600
    assert _wall(plans["four"]) <= 3.5 * 3600 and _wall(plans["eight"]) <= 2 * 3600
    assert _worst(plans["eight"]) <= 2.25 * 3600


def test_with_every_point_beside_others_the_full_plan_comes_near_the_targets(plans: dict[str, str]) -> None:
    """Issue 60's wall-time targets (3 h 30 min on four GPUs, 2 h on eight) are about what the packing
    gives where no kind of point keeps the host: the gap the default leaves is the host-paced points'
    isolation. On eight GPUs the HFTA MPS points, one at a time on the node (mps_daemon), and the order
    Snakemake lists the jobs in (which moves the simulated wall time by minutes: 2 h 00 min to 2 h 04
    min seen) put it at the target's edge, so the bound there is 2 h 10 min."""
    assert _wall(plans["four_shared"]) <= 3.5 * 3600 and _wall(plans["eight_shared"]) <= 2 * 3600 + 600
    assert "nothing beside them, 9 min" in plans["four_shared"]  # only the variability node job


# On a cluster (profiles/slurm) the slots are Snakemake job groups: one allocation measures a slot's points.


def test_a_jobs_cluster_group_is_its_slot_named_for_snakemake_and_slurm() -> None:
    points = list(_points())
    planned = groups.planned_keys(points)
    names = {groups.cluster_group(rule, wildcards, planned) for rule, wildcards in points}
    assert names == {
        groups.group_name(slot) for slot in (groups.slot_of(rule, wildcards) for rule, wildcards in points)
    }
    deit = groups.cluster_group("infer_deit", _deit("deit-b", 1, "fp16", "cudagraph", 1), planned)
    assert deit == "deit_batch-1_precision-fp16_round-1"
    assert groups.cluster_group("reference_run", {}, planned) == "sgemm_round-1"
    # a log folder's and a job comment's name: no '/', '=' or space, whatever the wildcards hold
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", name) for name in names if name)
    assert groups.group_name(Slot("hfta/net=resnet 18/precision=fp32", 2)) == (
        "hfta_net-resnet_18_precision-fp32_round-2"
    )
    assert groups.cluster_group("train_ddp", {"ngpus": "2", "precision": "fp16"}, planned) is None


def test_processes_asked_for_after_the_planned_rounds_share_their_groups_extra_round() -> None:
    """The processes of one extra round of a group have different run numbers (the point's next), so
    they are one group by their claim group alone, apart from every planned round's."""
    planned = groups.planned_keys(_points())
    extra = {
        groups.cluster_group("infer_deit", _deit(model, 1, "fp16", mode, run), planned)
        for model, mode, run in (("deit-t", "eager", 4), ("deit-b", "cudagraph", 2), ("deit-s", "eager", 7))
    }
    assert extra == {"deit_batch-1_precision-fp16_extra"}
    assert (
        groups.cluster_group("infer_deit", _deit("deit-b", 1, "fp16", "cudagraph", 1), planned) not in extra
    )
    # Snakemake passes wildcards as strings; the planned points hold numbers
    strings = {k: str(v) for k, v in _deit("deit-b", 1, "fp16", "cudagraph", 1).items()}
    assert groups.cluster_group("infer_deit", strings, planned) == "deit_batch-1_precision-fp16_round-1"


def test_cluster_settings_that_would_split_a_group_or_ask_for_its_gpus_in_all_are_refused() -> None:
    assert groups.cluster_settings_problem(1, 100000) is None
    assert "as many GPUs as fit" in str(groups.cluster_settings_problem(4, 100000))
    assert "an allocation of its own" in str(groups.cluster_settings_problem(1, 1))


def _group_jobs(planned: str) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """Each group job of a dry-run's listing: its jobs' rules and wildcards."""
    jobs: dict[str, list[tuple[str, dict[str, str]]]] = {}
    members: list[tuple[str, dict[str, str]]] | None = None
    for line in planned.splitlines():
        if opened := re.search(r"Group job (\S+) \(jobs in lexicogr\. order\):$", line):
            members = jobs.setdefault(opened.group(1), [])
        elif members is not None and (rule := re.fullmatch(r"\s+rule (\w+):", line)):
            members.append((rule.group(1), {}))
        elif members is not None and (wildcards := re.fullmatch(r"\s+wildcards: (.+)", line)):
            members[-1][1].update(item.split("=", 1) for item in wildcards.group(1).split(", "))
        elif members is not None and line and not line.startswith((" ", "Shell command:")):
            members = None
    return jobs


def test_on_a_cluster_each_claim_group_and_round_is_one_group_job(tmp_path: Path) -> None:
    """The slurm profile's plan: every placed job in the group job of its slot, one per slot, which the
    estimate counts as one SLURM job; DDP asks for its GPUs on one node. A local plan has no group."""
    import_installable("snakemake_executor_plugin_slurm")
    copy = copy_workflow(tmp_path)
    argv = ("-n", "--config", "device=h100", "quick=true")
    cluster = run_snakemake("--profile", "profiles/slurm", *argv, cwd=copy)
    assert cluster.returncode == 0, cluster.stderr[-3000:]
    planned = cluster.stdout + cluster.stderr
    jobs = _group_jobs(planned)
    slots = {
        name: {groups.slot_of(rule, wildcards) for rule, wildcards in members}
        for name, members in jobs.items()
    }
    assert all(len(held) == 1 and groups.group_name(*held) == name for name, held in slots.items()), slots
    rules = {rule for members in jobs.values() for rule, _ in members}
    assert rules == set(registry.PLACED) and not re.search(
        r"^rule (infer_\w+|hfta_point|sgemm_run):", planned, re.M
    )
    assert any(len(members) > 1 for members in jobs.values())
    assert f"the {len(jobs)} claim-group jobs each measuring" in planned
    assert "of wall time on the cluster with 16 SLURM jobs running at once" in planned
    ddp = re.findall(r"^rule train_ddp:\n(?:\s+.*\n)*?\s+resources: (.*)$", planned, re.M)
    assert ddp and all(", nodes=1" in resources for resources in ddp), ddp
    local = run_snakemake("--cores", "4", *argv, cwd=copy)
    assert local.returncode == 0 and "Group job" not in local.stdout + local.stderr
