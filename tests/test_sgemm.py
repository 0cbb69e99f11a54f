"""The torch SGEMM path: correct products, rates from the FLOP count, the CLI writing raw files with
telemetry and provenance, aggregation to a tidy table, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from gpurepro.results import write_raw
from gpurepro.sgemm import torch_mm
from gpurepro.sgemm.summary import summarise
from gpurepro.tables import pick

from .conftest import HAVE_GPU, run_gpurepro

FAST = ["--idle-seconds", "0.2", "--energy-window-s", "0.2", "--cooldown-max-wait-s", "0", "--rate-hz", "100"]


def test_product_is_right_and_rates_follow_the_flop_count() -> None:
    product = torch_mm.TorchSgemm(96, torch.device("cpu"), seed=3)
    reps = product.timed_reps(reps=4, warmup=1)
    expected = (product.a.double() @ product.b.double()).float()
    assert torch.allclose(product.c, expected, rtol=1e-4, atol=1e-4)
    assert reps["verify_rel_err"].iloc[0] < 1e-6
    assert reps["tflops"].tolist() == pytest.approx((2 * 96**3 / (reps["ms"] * 1e-3) / 1e12).tolist())
    assert (reps["t_end_unix_s"] >= reps["t_start_unix_s"]).all()


def test_operands_are_seeded_random_not_constant() -> None:
    a1, _, _ = torch_mm.make_operands(64, torch.device("cpu"), seed=1)
    a2, _, _ = torch_mm.make_operands(64, torch.device("cpu"), seed=1)
    a3, _, _ = torch_mm.make_operands(64, torch.device("cpu"), seed=2)
    assert torch.equal(a1, a2) and not torch.equal(a1, a3)
    assert a1.std() > 0.2


def test_relative_error_catches_a_wrong_block() -> None:
    product = torch_mm.TorchSgemm(128, torch.device("cpu"), seed=0)
    product()
    product.c[:, :16] = 0
    assert torch_mm.relative_error(product.a, product.b, product.c, rows=128) > 1e-2


def test_cli_writes_raw_trace_and_provenance(tmp_path: Path) -> None:
    out, trace = tmp_path / "raw" / "torch_n128.csv", tmp_path / "raw" / "torch_n128.telemetry.csv"
    result = run_gpurepro(
        "sgemm",
        "128",
        "5",
        "cpu",
        "--out",
        str(out),
        "--trace-out",
        str(trace),
        *FAST,
        "--config-hash",
        "abc",
    )
    assert result.returncode == 0, result.stderr
    assert "verified: relative Frobenius error" in result.stderr
    reps = pd.read_csv(out)
    assert len(reps) == 5 and set(reps["backend"]) == {"torch"} and set(reps["n"]) == {128}
    assert {"power_w_median", "sm_clock_mhz_median", "throttled", "verify_rel_err"} <= set(reps.columns)
    samples = pd.read_csv(trace)
    assert "idle" in set(samples["phase"])  # reps this short may fall between samples
    meta = json.loads(out.with_name("torch_n128.provenance.json").read_text())
    assert meta["profile"] == "cpu" and meta["config_hash"] == "abc"
    assert 0 < meta["measurement"]["telemetry"]["achieved_rate_hz"] <= 105  # how many: the host's to say
    assert (
        "git" in meta
        and "software" in meta
        and meta["workload"] == {"backend": "torch", "n": 128, "data_mode": "random", "run": 1}
    )

    again = run_gpurepro("sgemm", "128", "5", "cpu", "--out", str(out), *FAST)
    assert again.returncode == 2 and "never overwritten" in again.stderr

    table = summarise([str(out)])
    assert set(table.columns) >= {"metric", "statistic", "value", "unit", "backend", "n", "profile"}
    rate = table[(table["metric"] == "rate") & (table["statistic"] == "median")]
    assert rate["unit"].item() == "TFLOP/s" and rate["value"].item() == pytest.approx(reps["tflops"].median())


def test_seed_interface_prints_reps_to_stdout() -> None:
    result = run_gpurepro("sgemm", "64", "3", "cpu", *FAST)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("profile,device,backend,n,data_mode,run,rep,ms")
    assert len(result.stdout.splitlines()) == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["0", "3", "cpu"], "must be 1 or more"),
        (["64", "3", "gpu0"], "'gpu0' is not a GPU index"),
        (["64", "3", "cpu", "--profile", "h999"], "device profile 'h999' does not exist"),
        (["64", "3", "cpu", "--profile", "h100"], "profile 'h100' measures a GPU"),
    ],
)
def test_bad_arguments_say_what_is_wrong(args: list[str], message: str) -> None:
    result = run_gpurepro("sgemm", *args, *FAST)
    assert result.returncode == 2 and message in result.stderr


@pytest.mark.skipif(HAVE_GPU, reason="checks the message on a machine without a GPU")
def test_gpu_job_without_gpu_says_so() -> None:
    result = run_gpurepro("sgemm", "64", "3", "0", "--profile", "h100", *FAST)
    assert result.returncode == 2 and "cannot measure on GPU 0" in result.stderr


def sweep_point(folder: Path, backend: str, n: int, tflops: np.ndarray) -> str:
    """A raw file of one size of a sweep on one GPU, with these per-rep rates."""
    reps = pd.DataFrame({
        "profile": "h100", "device": "0", "backend": backend, "n": n, "ms": 2 * n**3 / (tflops * 1e12) * 1e3,
        "tflops": tflops, "power_w_median": 600.0, "sm_clock_mhz_median": 1980.0,
        "temperature_c_median": 50.0, "throttled": False, "verify_rel_err": 1e-7,
    })  # fmt: skip
    sidecar = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0"}], "measurement": {}}
    return str(write_raw(reps, folder / f"{backend}_n{n}.csv", sidecar))


def noisy(rate: float, seed: int) -> np.ndarray:
    """20 reps of a rate with 2% noise."""
    return rate * np.exp(np.random.default_rng(seed).normal(0, 0.02, 20))


def test_rate_against_the_best_size_of_the_sweep(tmp_path: Path) -> None:
    sweep = ((8192, 50.5), (2048, 40.0), (4096, 50.0))  # TFLOP/s: 4096 and 8192 on the plateau
    paths = [sweep_point(tmp_path, "cublas", n, noisy(rate, seed=n)) for n, rate in sweep]
    paths.append(sweep_point(tmp_path, "kernel", 4096, noisy(20.0, seed=1)))  # one size: no sweep
    table = summarise(paths)
    assert list(table[["backend", "n"]].drop_duplicates().itertuples(index=False, name=None)) == [
        ("cublas", 2048), ("cublas", 4096), ("cublas", 8192), ("kernel", 4096),
    ]  # fmt: skip
    plateau = table[table["metric"] == "rate_vs_sweep_best"]
    assert set(plateau["unit"]) == {"1"} and set(plateau["backend"]) == {"cublas"}
    ratio = {(n, s): v for n, s, v in plateau[["n", "statistic", "value"]].itertuples(index=False)}
    rates = pick(table[table["backend"] == "cublas"], "rate").set_index("n")["value"]
    for n in (2048, 4096):
        assert ratio[n, "median"] == pytest.approx(rates[n] / rates[8192])
        assert ratio[n, "ci_low"] < ratio[n, "median"] < ratio[n, "ci_high"]
    assert ratio[2048, "median"] == pytest.approx(40 / 50.5, rel=0.03) and ratio[2048, "ci_high"] < 1
    assert ratio[4096, "ci_low"] < 1 < ratio[4096, "ci_high"]  # 1% below the best, within 2% noise: on it
    # the best size against itself: 1, and no interval (its reps against themselves would be a tautology)
    assert ratio[8192, "median"] == 1 and np.isnan(ratio[8192, "ci_low"]) and np.isnan(ratio[8192, "ci_high"])
