"""Tests of the CUDA SGEMM programs in kernels/ (gen_data, sgemm).

Without nvcc everything is skipped. With nvcc but no GPU, the build (sm_70 and
sm_90), its provenance and the host-only paths (--help, bad arguments, refused
overwrite, the seed's sin/cos data) still run. With a GPU, products of both
implementations are checked against float64 numpy references at small and
awkward sizes.

cuBLAS/cuRAND that nvcc's toolkit lacks come from the nvidia-* wheels of the
Python running these tests ('.[test]' installs them through '.[kernels]'); set
PYTHON=/path/to/python3 for another's, and SGEMM_BIN_DIR=dir to test binaries
already built there. A build that finds no cuBLAS/cuRAND skips its tests with
the Makefile's reason, and fails them under CI=true: pip provides both.
"""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import subprocess
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from .conftest import GPU_ARCH, KERNELS_HINT, check_built, make

ROOT = Path(__file__).resolve().parents[2]
CSV_HEADER = [
    "impl",
    "n",
    "rep",
    "ms",
    "tflops",
    "gpu_index",
    "gpu_uuid",
    "t_start_unix_s",
    "t_end_unix_s",
    "verify_rel_err",
]
UUID_RE = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
EXIT_USAGE = 2

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found on PATH")


def tolerance(k: int) -> float:
    """The programs' own limit for FP32 products with inner dimension k (kernels/verify.h)."""
    return 10.0 * 2.0**-24 * math.sqrt(k)


needs_gpu = pytest.mark.skipif(GPU_ARCH is None, reason="no NVIDIA GPU (nvidia-smi found none)")


def run(bin_dir: Path, prog: str, *args: object, cwd: Path, timeout: float = 600):
    return subprocess.run(
        [str(bin_dir / prog), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def read_matrix(path: Path, n: int) -> np.ndarray:
    """A column-major float32 file as an (n, n) array indexed [row, col]."""
    data = np.fromfile(path, dtype=np.float32)
    assert data.size == n * n
    return data.reshape(n, n).T


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


def tile_names(bin_dir: Path, tmp_path: Path) -> list[str]:
    text = run(bin_dir, "sgemm", "--help", cwd=tmp_path).stdout
    line = text.split("one of:", 1)[1].split("\n")[1]
    return [name.strip() for name in line.split(",")]


# ---------------------------------------------------------------- no GPU needed


@pytest.mark.parametrize("arch, full", [("sm_70", True), ("sm_75", False), ("sm_80", False), ("sm_90", True)])
def test_build_compiles_without_spills(builds, arch: str, full: bool) -> None:
    """The build works, and the kernels that run whenever N % 4 == 0 (kVec=true,
    mangled `Lb1E`) do not spill registers.

    The 4-byte-access fallback for other N may spill a few bytes under the
    register cap of the 3-blocks-per-SM configuration.
    """
    out = builds(arch, full)
    assert not full or ((out / "sgemm").is_file() and (out / "gen_data").is_file())
    report = (out / "obj" / "ptxas_tiled_sgemm.log").read_text()
    props = re.findall(
        r"Function properties for (\S+)\n\s+\d+ bytes stack frame, (\d+) bytes spill stores", report
    )
    fast = [(name, int(spill)) for name, spill in props if "sgemm_nn" in name and "Lb1E" in name]
    assert fast, f"no vectorised tiled kernels in the ptxas report for {arch}"
    assert all(spill == 0 for _, spill in fast), f"fast-path kernels spill on {arch}: {fast}"


def test_build_records_the_toolkit_and_library_versions(builds) -> None:
    """build.provenance.json names nvcc's release and, for cuBLAS and cuRAND, the file linked, its
    version and whether the toolkit or a wheel brought it (the wheel's version as pip installed it)."""
    arch = GPU_ARCH or "sm_90"
    record = json.loads((builds(arch) / "build.provenance.json").read_text())
    assert record["arch"] == arch and re.fullmatch(r"\d+\.\d+", record["nvcc"]["release"])
    for name in ("cublas", "curand"):
        library = record["libraries"][name]
        assert Path(library["file"]).is_file() and library["from"] in ("toolkit", "wheel", "system")
        assert library["version"], f"no version recorded for {name}: {library}"
        if library["from"] == "wheel":
            assert library["version"] == metadata.version(library["distribution"])


@pytest.mark.parametrize("ci", ["true", None])
def test_a_missing_library_fails_under_ci_and_skips_elsewhere(tmp_path: Path, monkeypatch, ci) -> None:
    """An empty toolkit and a Python without wheels: the Makefile names the library and the extra
    that installs it; under CI that is a failure, not a skip, since pip provides it."""
    toolkit = tmp_path / "toolkit"
    toolkit.mkdir()
    proc = make("all", BUILD_DIR=str(tmp_path / "out"), CUDA_HOME=str(toolkit), PYTHON="false")
    assert proc.returncode != 0 and f"libcublas not found under {toolkit}" in proc.stderr
    assert "pip install -e '.[kernels]' (the nvidia-cublas wheel)" in proc.stderr
    if ci:
        monkeypatch.setenv("CI", ci)
    else:
        monkeypatch.delenv("CI", raising=False)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome, match=re.escape(KERNELS_HINT)):
        check_built(proc)


def test_help(bin_dir: Path, tmp_path: Path) -> None:
    for prog, words in [("sgemm", ["--impl", "--out", "--mode", "--seed"]), ("gen_data", ["--mode"])]:
        proc = run(bin_dir, prog, "--help", cwd=tmp_path)
        assert proc.returncode == 0
        for word in words:
            assert word in proc.stdout
    assert len(tile_names(bin_dir, tmp_path)) >= 1


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["100", "5"],
        ["abc", "5", "0"],
        ["0", "5", "0"],
        ["100", "0", "0"],
        ["100", "5", "-1"],
        ["100", "5", "0", "--impl", "fast"],
        ["100", "5", "0", "--mode", "ones"],
        ["100", "5", "0", "--warmup", "x"],
        ["100", "5", "0", "--tile", "nope"],
        ["100", "5", "0", "--bogus", "1"],
        ["100", "5", "0", "--out"],
    ],
)
def test_sgemm_bad_arguments(bin_dir: Path, tmp_path: Path, args: list[str]) -> None:
    proc = run(bin_dir, "sgemm", *args, cwd=tmp_path)
    assert proc.returncode == EXIT_USAGE
    assert proc.stderr.startswith("sgemm: ") and "--help" in proc.stderr


@pytest.mark.parametrize("args", [[], ["-3"], ["10", "--mode", "x"], ["10", "--data-dir", "/nonexistent"]])
def test_gen_data_bad_arguments(bin_dir: Path, tmp_path: Path, args: list[str]) -> None:
    proc = run(bin_dir, "gen_data", *args, cwd=tmp_path)
    assert proc.returncode == EXIT_USAGE
    assert proc.stderr.startswith("gen_data: ")


def test_refuses_to_overwrite_output(bin_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    out.write_text("keep me\n")
    proc = run(bin_dir, "sgemm", "64", "1", "0", "--out", out, cwd=tmp_path)
    assert proc.returncode == EXIT_USAGE
    assert "refusing to overwrite" in proc.stderr
    assert out.read_text() == "keep me\n"


def test_gen_data_sincos_is_the_seeds_data(bin_dir: Path, tmp_path: Path) -> None:
    n = 33
    proc = run(bin_dir, "gen_data", n, "--mode", "sincos", "--data-dir", tmp_path, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"host_A_{n}.bin",
        f"host_B_{n}.bin",
        f"host_meta_{n}.txt",
    ]
    assert (tmp_path / f"host_meta_{n}.txt").read_text() == f"n={n}\nmode=sincos\nseed=1\n"
    idx = np.arange(n * n, dtype=np.float32).astype(np.float64)  # the seed's float(i + j*N)
    for name, fn in [("A", np.sin), ("B", np.cos)]:
        got = np.fromfile(tmp_path / f"host_{name}_{n}.bin", dtype=np.float32)
        exact = fn(idx)
        ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
        assert np.all(np.abs(got - exact) <= ulp), f"{name} is not sin/cos of the index within 1 ulp"


# ---------------------------------------------------------------- GPU


def run_sgemm_csv(bin_dir: Path, cwd: Path, n: int, reps: int, *args: object) -> list[dict[str, str]]:
    out = cwd / f"sgemm_{n}.csv"
    proc = run(bin_dir, "sgemm", n, reps, 0, "--out", out, *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert not (cwd / f"sgemm_{n}.csv.tmp").exists()
    with out.open(newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == CSV_HEADER
        return list(reader)


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 17, 33, 64, 100, 1000, 1025])
def test_products_match_float64(bin_dir: Path, tmp_path: Path, n: int) -> None:
    proc = run(bin_dir, "gen_data", n, "--seed", 7, "--data-dir", tmp_path, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = run_sgemm_csv(
        bin_dir, tmp_path, n, 2, "--impl", "both", "--data-dir", tmp_path, "--save-c", tmp_path / "c"
    )
    assert [r["impl"] for r in rows] == ["cublas", "tiled"] * 2
    a = read_matrix(tmp_path / f"host_A_{n}.bin", n).astype(np.float64)
    b = read_matrix(tmp_path / f"host_B_{n}.bin", n).astype(np.float64)
    assert a.min() >= -1.0 and a.max() <= 1.0 and np.count_nonzero(a) == a.size  # uniform in (-1, 1]
    ref = a @ b
    for impl in ["cublas", "tiled"]:
        c = read_matrix(tmp_path / f"c_{impl}.bin", n)
        assert np.isfinite(c).all()
        err = rel_err(c, ref)
        assert err <= tolerance(n), f"{impl} N={n}: rel err {err:.3e} > {tolerance(n):.3e}"
        assert all(float(r["verify_rel_err"]) <= tolerance(n) for r in rows if r["impl"] == impl)


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("n", [33, 257, 1000, 1028])
def test_every_tile_config(bin_dir: Path, tmp_path: Path, n: int) -> None:
    run(bin_dir, "gen_data", n, "--seed", 3, "--data-dir", tmp_path, cwd=tmp_path)
    a = read_matrix(tmp_path / f"host_A_{n}.bin", n).astype(np.float64)
    b = read_matrix(tmp_path / f"host_B_{n}.bin", n).astype(np.float64)
    ref = a @ b
    for tile in tile_names(bin_dir, tmp_path):
        prefix = tmp_path / tile
        proc = run(
            bin_dir,
            "sgemm",
            n,
            1,
            0,
            "--impl",
            "tiled",
            "--tile",
            tile,
            "--data-dir",
            tmp_path,
            "--save-c",
            prefix,
            "--out",
            tmp_path / f"{tile}.csv",
            cwd=tmp_path,
        )
        assert proc.returncode == 0, f"{tile}: {proc.stderr}"
        err = rel_err(read_matrix(Path(f"{prefix}_tiled.bin"), n), ref)
        assert err <= tolerance(n), f"tile {tile} N={n}: rel err {err:.3e}"


@needs_gpu
@pytest.mark.gpu
def test_csv_rows(bin_dir: Path, tmp_path: Path) -> None:
    n, reps = 256, 3
    before = time.time()
    rows = run_sgemm_csv(bin_dir, tmp_path, n, reps, "--impl", "both", "--warmup", 1)
    after = time.time()
    assert [(r["impl"], int(r["rep"])) for r in rows] == [
        (i, k) for k in range(reps) for i in ("cublas", "tiled")
    ]
    uuids = {r["gpu_uuid"] for r in rows}
    assert len(uuids) == 1 and UUID_RE.match(uuids.pop())
    previous_end = before
    for r in rows:
        assert int(r["n"]) == n and int(r["gpu_index"]) == 0
        ms, start, end = float(r["ms"]), float(r["t_start_unix_s"]), float(r["t_end_unix_s"])
        assert ms > 0 and previous_end <= start < end <= after
        assert end - start >= ms / 1e3 * 0.5  # the host window brackets the event-timed product
        assert float(r["tflops"]) == pytest.approx(2 * n**3 / (ms * 1e-3) / 1e12, rel=1e-3)
        assert 0 <= float(r["verify_rel_err"]) <= tolerance(n)
        previous_end = end


@needs_gpu
@pytest.mark.gpu
def test_csv_to_stdout(bin_dir: Path, tmp_path: Path) -> None:
    proc = run(bin_dir, "sgemm", 64, 2, 0, "--impl", "tiled", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == ",".join(CSV_HEADER) and len(lines) == 3
    assert "PASS" in proc.stderr and "PASS" not in proc.stdout


@needs_gpu
@pytest.mark.gpu
def test_sincos_mode(bin_dir: Path, tmp_path: Path) -> None:
    """sgemm's own sin/cos data (no files) equals gen_data's, and the products match float64."""
    n = 100
    files = tmp_path / "files"
    files.mkdir()
    assert run(bin_dir, "gen_data", n, "--mode", "sincos", "--data-dir", files, cwd=tmp_path).returncode == 0
    a = read_matrix(files / f"host_A_{n}.bin", n).astype(np.float64)
    b = read_matrix(files / f"host_B_{n}.bin", n).astype(np.float64)
    ref = a @ b
    for source, extra in [("generated", []), ("files", ["--data-dir", files])]:
        prefix = tmp_path / source
        proc = run(
            bin_dir,
            "sgemm",
            n,
            1,
            0,
            "--impl",
            "both",
            "--mode",
            "sincos",
            "--save-c",
            prefix,
            *extra,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        assert ("mode=sincos" in proc.stderr) and (source == "files") == ("loaded" in proc.stderr)
        for impl in ["cublas", "tiled"]:
            err = rel_err(read_matrix(Path(f"{prefix}_{impl}.bin"), n), ref)
            assert err <= tolerance(n), f"{source} {impl}: rel err {err:.3e}"


@needs_gpu
@pytest.mark.gpu
def test_data_file_problems(bin_dir: Path, tmp_path: Path) -> None:
    n = 16
    assert run(bin_dir, "gen_data", n, "--data-dir", tmp_path, cwd=tmp_path).returncode == 0
    proc = run(bin_dir, "sgemm", n, 1, 0, "--mode", "sincos", "--data-dir", tmp_path, cwd=tmp_path)
    assert proc.returncode == EXIT_USAGE and "mode=random" in proc.stderr
    (tmp_path / f"host_B_{n}.bin").unlink()
    proc = run(bin_dir, "sgemm", n, 1, 0, "--data-dir", tmp_path, cwd=tmp_path)
    assert proc.returncode == EXIT_USAGE and "but not" in proc.stderr


@needs_gpu
@pytest.mark.gpu
def test_bad_gpu_index(bin_dir: Path, tmp_path: Path) -> None:
    proc = run(bin_dir, "sgemm", 16, 1, 1000, cwd=tmp_path)
    assert proc.returncode == EXIT_USAGE and "does not exist" in proc.stderr
