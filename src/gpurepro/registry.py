"""What is measured: one record per measuring rule of the workflow, the one place that says what kind a
measuring rule is.

Planning, placement, the estimate, aggregation and plots each need to know of a measuring rule its study,
its family of points, the device-profile section that sets it, the wildcards that name its claim group,
whether its points are host-paced or GPU-bound, its cool-down, the tables made of its raw files and the
claim files that read them. Written once here, they cannot drift apart between those readers, and the
rule files need not switch on rule names. tests/test_registry.py fails when a rule that writes raw files
(protected outputs, or outputs under a raw/ folder) has no record.

A study has one name everywhere it is written (its results folder, `gpurepro aggregate`, the estimate,
the cool-down settings): the data-parallel training study is `ddp`. `train` stays only where a user
types it: the device profile's section, the `gpurepro train` command and the rule `train_ddp`.

Data only: the records, and lookups that read nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import rounds

# How an HFTA point's training steps ran, as tables, plots and claims name it: torch's eager step (stock,
# as HFTA's paper measured), the whole step replayed as one CUDA graph (hfta_study/graphs.py), or the
# module compiled by torch.compile. Here, not in hfta_study, because the verdict reads them too.
STEP_STOCK, STEP_GRAPHED, STEP_COMPILED = "stock", "graphed", "compiled"


@dataclass(frozen=True)
class HostPace:
    """How a rule's point is told host-paced (the GPU busy under half the time, its figure set by how fast
    one Python thread queues kernels) from GPU-bound: `paced` of the values of `wildcards`, in order."""

    wildcards: tuple[str, ...]
    paced: Callable[..., bool]

    def of(self, wildcards: Mapping[str, Any]) -> bool:
        return self.paced(*(wildcards[name] for name in self.wildcards))


@dataclass(frozen=True)
class Measured:
    """One measuring rule: what its points are, and who reads them."""

    rule: str
    # the study's one name: its results folder, `gpurepro aggregate <study>`, the estimate's line and the
    # cool-down setting (config telemetry.quick.cooldown_studies) its points take
    study: str
    # the points that share a table and a figure (DeiT and BERT are the inference study's two families)
    family: str
    # the device profile's section of its settings (quick values too: profiles.with_quick_settings)
    section: str | None
    # the wildcards that name a point, besides the process (`run`) that measured it
    axes: tuple[str, ...]
    # <results>/tables/<name>.csv made of its raw files
    tables: tuple[str, ...] = ()
    # the claim files of config/expected whose claims read those tables (which point each claim reads is
    # more_processes.points.claim_points)
    claims: tuple[str, ...] = ()
    # the figure `gpurepro plot <figure>` draws of them
    figure: str | None = None
    # the claim group its points are placed by (placement/groups.py): the group's first name and the
    # wildcards whose values name it; None: not placed by claim group
    group: str | None = None
    group_wildcards: tuple[str, ...] = ()
    # the kind config `host_to_itself` names its points by (placement/host_share.py): `<kind>_host_paced`
    # or `<kind>_gpu_bound` where `pace` tells them apart, else `<kind>`; None: not placed by claim group
    kind: str | None = None
    pace: HostPace | None = None
    # mean cool-down wait before a point, in H100 quick runs starting at about 36 C (runplan/durations.py
    # scales it by the starting temperature); 0: no cool-down is expected before it
    cooldown_s: float = 0.0
    # whether its idle baseline is its profile section's idle_seconds (profiles.idle_seconds), rather
    # than config telemetry.idle_seconds
    idle_from_section: bool = False
    # measured in processes, round by round, with more processes where a claim stays inconclusive
    # (more_processes.smk)
    extra_rounds: bool = False
    # its jobs take every core of the host also where nothing is placed beside them: an eager inference
    # point at batch 1 launches hundreds of kernels from Python, and other jobs on the host spread it
    every_core: bool = False
    # some of its points run under an MPS daemon (the `scheme` wildcard `mps`), one daemon on the node at
    # a time
    mps: bool = False
    # the rule that remakes its family's tables before each round of more processes (more_processes.smk)
    round_tables: str | None = None

    def point_kind(self, wildcards: Mapping[str, Any]) -> str | None:
        """The kind of one of its points (host_share.KINDS), None where it is not placed by claim group."""
        if self.kind is None or self.pace is None:
            return self.kind
        return f"{self.kind}_host_paced" if self.pace.of(wildcards) else f"{self.kind}_gpu_bound"

    def kinds(self) -> tuple[str, ...]:
        """Every kind its points may be."""
        if self.kind is None:
            return ()
        if self.pace is None:
            return (self.kind,)
        return (f"{self.kind}_host_paced", f"{self.kind}_gpu_bound")


_INFERENCE_PACE = HostPace(("mode", "batch"), rounds.inference_host_paced)
_HFTA_PACE = HostPace(("scheme", "step", "b"), rounds.hfta_host_paced)

RECORDS: tuple[Measured, ...] = (
    Measured(
        rule="sgemm_run", study="sgemm", family="sgemm", section="sgemm", axes=("backend", "n"),
        tables=("sgemm",), claims=("gpurepro_reference", "seed_power_variability"), figure="sgemm",
        group="sgemm", kind="sgemm", cooldown_s=10.0,
    ),
    # the rates an absolute claim is scaled by, measured on the SGEMM group's GPU (placement/groups.py)
    Measured(
        rule="reference_run", study="reference", family="reference", section="reference", axes=(),
        tables=("reference",), group="sgemm", kind="sgemm",
    ),
    Measured(
        rule="variability_run", study="variability", family="variability", section="variability",
        axes=("backend", "gpu"), tables=("variability_reps", "variability_summary"),
        claims=("gpurepro_reference", "sc22_variability", "seed_power_variability"), figure="variability",
        cooldown_s=15.0,
    ),
    # the same points, every selected GPU of the node in one job (variability.smk)
    Measured(
        rule="variability_node", study="variability", family="variability", section="variability",
        axes=("backend",), tables=("variability_reps", "variability_summary"),
        claims=("gpurepro_reference", "sc22_variability", "seed_power_variability"), figure="variability",
        cooldown_s=15.0,
    ),
    Measured(
        rule="infer_deit", study="inference", family="deit", section="inference",
        axes=("vit_model", "batch", "precision", "mode"),
        tables=("inference_deit", "inference_deit_processes"), claims=("inference",), figure="deit",
        group="deit", group_wildcards=("batch", "precision"), kind="inference", pace=_INFERENCE_PACE,
        cooldown_s=2.0, idle_from_section=True, extra_rounds=True, every_core=True,
        round_tables="inference_round_tables",
    ),
    Measured(
        rule="infer_bert", study="inference", family="bert", section="inference",
        axes=("bert_model", "seq", "batch", "precision", "mode"),
        tables=("inference_bert", "inference_bert_processes"), claims=("inference",), figure="bert",
        group="bert", group_wildcards=("batch", "precision"), kind="inference", pace=_INFERENCE_PACE,
        cooldown_s=2.0, idle_from_section=True, extra_rounds=True, every_core=True,
        round_tables="inference_round_tables",
    ),
    Measured(
        rule="hfta_point", study="hfta", family="hfta", section="hfta",
        axes=("net", "step", "scheme", "precision", "b"), tables=("hfta", "hfta_speedup", "hfta_processes"),
        claims=("gpurepro_reference", "hfta"), figure="hfta", group="hfta",
        group_wildcards=("net", "precision"), kind="hfta", pace=_HFTA_PACE, cooldown_s=12.0,
        idle_from_section=True, extra_rounds=True, mps=True, round_tables="hfta_round_tables",
    ),
    Measured(
        rule="train_ddp", study="ddp", family="ddp", section="train", axes=("ngpus", "precision"),
        tables=("ddp",), claims=("gpurepro_reference", "resnet50_training"), figure="ddp",
    ),
    Measured(rule="loader_bench", study="data", family="loader", section=None, axes=()),
    Measured(rule="profile_nsys_run", study="profiling", family="nsys", section=None, axes=("workload",)),
    # the variability study over a cluster's nodes (campaign.smk): a node's record, measured or not
    Measured(
        rule="campaign_node", study="campaign", family="campaign", section="variability", axes=("node",),
        tables=("campaign_summary",), claims=("sc22_variability", "seed_power_variability"),
    ),
    Measured(
        rule="campaign_unavailable", study="campaign", family="campaign", section="variability",
        axes=("node",), tables=("campaign_summary",), claims=("sc22_variability", "seed_power_variability"),
    ),
)  # fmt: skip

BY_RULE: Mapping[str, Measured] = {record.rule: record for record in RECORDS}
# The profile sections of the studies, in the order the records name them.
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(r.section for r in RECORDS if r.section is not None))
# Every kind of point config `host_to_itself` may name.
KINDS: tuple[str, ...] = tuple(dict.fromkeys(kind for record in RECORDS for kind in record.kinds()))
# Rules whose points are placed by claim group, and the group each names.
PLACED: Mapping[str, Measured] = {r.rule: r for r in RECORDS if r.group is not None}


def with_rounds(family: str) -> Measured:
    """The measuring record of a family whose points get rounds of more processes (hfta, deit, bert)."""
    found = [r for r in RECORDS if r.family == family and r.extra_rounds]
    if len(found) != 1:
        raise KeyError(f"{family}: no family of points with rounds of more processes")
    return found[0]


def record(rule: str) -> Measured | None:
    """The record of a rule; None for a rule that measures nothing."""
    return BY_RULE.get(rule)


def study_of(rule: str) -> str | None:
    """The study of a rule's points; None for a rule that measures nothing."""
    found = BY_RULE.get(rule)
    return None if found is None else found.study
