"""Device profiles: every one validates, the config schema knows them all, NVML names map correctly,
quick settings apply, and a GPU that is not the profile's model stops the job (or warns)."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from gpurepro import profiles
from gpurepro.errors import GpureproError
from gpurepro.nvml import GpuInfo

from .conftest import ROOT

ALL = ["cpu", "v100", "a100", "h100", "h200", "rtx6000", "t4"]


def gpu(name: str, index: int = 0) -> GpuInfo:
    fields = {f.name: None for f in dataclasses.fields(GpuInfo)}
    return GpuInfo(**{**fields, "index": index, "name": name, "uuid": f"GPU-{index}", "driver_version": "x"})


def test_every_profile_exists_and_validates() -> None:
    assert profiles.profile_names() == sorted(ALL)
    for name in ALL:
        profile = profiles.load_profile(name)
        assert profile["name"] == name


def test_config_schema_lists_exactly_the_profiles() -> None:
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    assert sorted(schema["properties"]["device"]["enum"]) == sorted(["auto", *ALL])


def test_volta_and_turing_have_no_bf16_or_tf32() -> None:
    for name in ["v100", "t4", "rtx6000"]:
        assert not {"bf16", "tf32"} & set(profiles.load_profile(name)["precisions"])
    assert profiles.load_profile("v100")["cuda_arch"] == "sm_70"
    assert 25536 in profiles.load_profile("v100")["sgemm"]["sizes"]


@pytest.mark.parametrize(
    ("nvml_name", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H100 PCIe", "h100"),
        ("NVIDIA H200", "h200"),
        ("Tesla V100-SXM2-16GB", "v100"),
        ("Tesla V100-PCIE-32GB", "v100"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("Tesla T4", "t4"),
        ("Quadro RTX 6000", "rtx6000"),
        ("NVIDIA RTX 6000 Ada Generation", None),
        ("NVIDIA RTX A6000", None),
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_nvml_names_map_to_profiles(nvml_name: str, expected: str | None) -> None:
    assert profiles.profile_for_gpu(nvml_name) == expected


def test_auto_pick() -> None:
    assert profiles.pick_profile([]) == "cpu"
    assert profiles.pick_profile([gpu("NVIDIA H100 80GB HBM3", 0), gpu("NVIDIA H100 80GB HBM3", 1)]) == "h100"
    with pytest.raises(
        GpureproError, match=r"'NVIDIA GeForce RTX 4090' matches no device profile.*--config device="
    ):
        profiles.pick_profile([gpu("NVIDIA GeForce RTX 4090")])
    with pytest.raises(GpureproError, match="mixes GPU models"):
        profiles.pick_profile([gpu("NVIDIA H100 80GB HBM3", 0), gpu("Tesla V100-SXM2-16GB", 1)])


def test_quick_settings_replace_only_when_asked() -> None:
    full = profiles.load_profile("h100")
    quick = profiles.load_profile("h100", quick=True)
    raw = profiles.read_profile("h100")
    assert full["sgemm"]["sizes"] == raw["sgemm"]["sizes"]
    assert quick["sgemm"]["sizes"] == raw["sgemm"]["quick"]["sizes"]
    assert quick["sgemm"]["warmup"] == raw["sgemm"]["warmup"]  # keys without a quick value stay
    assert "quick" not in full["sgemm"] and "quick" not in quick["sgemm"]


def test_bad_profile_names_the_key(tmp_path) -> None:
    profile = profiles.read_profile("h100")
    profile["sgemm"]["sizes"] = [4096, -8]
    with pytest.raises(GpureproError, match=r"key sgemm\.sizes\.1: -8 is less than the minimum of 1"):
        profiles.validate_profile(profile)
    with pytest.raises(GpureproError, match="known profiles: .*h100"):
        profiles.read_profile("h999")


def test_gpu_check_against_profile() -> None:
    h100 = profiles.load_profile("h100")
    assert profiles.check_gpu_matches(h100, gpu("NVIDIA H100 80GB HBM3"), "error") is None
    found = gpu("Tesla V100-SXM2-16GB")
    with pytest.raises(GpureproError) as caught:
        profiles.check_gpu_matches(h100, found, "error")
    message = str(caught.value)
    assert "'Tesla V100-SXM2-16GB'" in message and "profile 'v100'" in message
    assert "asked for profile 'h100'" in message and "device_check=warn" in message
    assert "asked for profile 'h100'" in profiles.check_gpu_matches(h100, found, "warn")
    with pytest.raises(GpureproError, match="needs an NVIDIA GPU"):
        profiles.check_gpu_matches(h100, None, "warn")
    assert profiles.check_gpu_matches(profiles.load_profile("cpu"), None, "error") is None


def test_a_quick_run_cools_down_only_before_the_studies_it_names() -> None:
    """The shipped config: a quick run cools down before the variability study's points (15 s at most),
    and the other studies' points start after the settle alone; the full plan waits before the points of
    the studies whose figures a warmer card moves (not HFTA's, whose claims read rates), and a quick block
    without cooldown_studies keeps the full plan's."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    quick = {**config, "quick": True}
    assert profiles.cooldown_max_wait_s(quick, "variability") == 15
    for study in ("inference", "hfta", "sgemm"):
        assert profiles.cooldown_max_wait_s(quick, study) == 0, study
        assert profiles.cooldown_max_wait_s(config, study) == (0 if study == "hfta" else 120), study
    everywhere = {**quick, "telemetry": {**config["telemetry"], "quick": {"cooldown_max_wait_s": 5}}}
    assert profiles.cooldown_max_wait_s(everywhere, "inference") == 5
