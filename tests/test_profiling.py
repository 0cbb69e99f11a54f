"""Profiling: nsys and dcgmi command lines, dmon output read by its header, the DCGM monitor's real
subprocess start/stop (through a stand-in `dcgmi` placed first on PATH), the bindings path, the plain
skip without the tools, the workflow's profile_nsys message, and the DCGM note of a measurement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from gpurepro.errors import GpureproError, ResultExistsError
from gpurepro.profiling import dcgm, nsys
from gpurepro.profiling.dcgm import bindings, dmon, dmon_parser

from .conftest import hidden_modules_env, path_without, run_snakemake

ALL_IDS = "1002,1003,1004,1005,1009,1010,252"

# What `dcgmi dmon -e 252,1004,1002,155 -i 0,1` prints, laid out as dcgmi/DeviceMonitor.cpp of DCGM 4 does
# (SetHeaderForOutput, PrintMetricsRow): "#Entity" in 16 columns, each field in its format width + 8,
# left-aligned; "N/A" for a blank value; the header again after 14 rounds. POWER (field 155) is not one
# of ours: its column is skipped, the others still found by name.
DMON_SAMPLE = textwrap.dedent(
    """\
    #Entity         FBUSD             TENSO        SMACT        POWER
    ID                                                          W
    GPU 0           1024              0.125        0.875        301.250
    GPU 1           2048              N/A          0.500        95.000
    Error: something the parser reports but does not fail on
    #Entity         FBUSD             TENSO        SMACT        POWER
    ID                                                          W
    GPU 0           1030              0.250        0.750        302.000
    """
)
# Before DCGM 3 the header read "# Entity" and the unit line "Id" (DCGM 2 user guide, dmon examples).
DMON_SAMPLE_DCGM2 = textwrap.dedent(
    """\
    # Entity  SMACT  SMOCC  TENSO  DRAMA
          Id
        GPU 0  0.000  0.012  0.000  0.003
    """
)


def test_dmon_argv() -> None:
    assert dmon.dmon_argv([0, 2], 100) == ["dcgmi", "dmon", "-e", ALL_IDS, "-i", "0,2", "-d", "100"]


def test_nsys_argv() -> None:
    command = ["gpurepro", "sgemm", "1024", "20", "0"]
    assert nsys.profile_argv("/opt/nsys", Path("out/x"), command) == [
        "/opt/nsys", "profile", "--output=out/x", "--trace=cuda,nvtx,osrt", "--force-overwrite=false",
        *command,
    ]  # fmt: skip
    assert nsys.stats_argv("nsys", Path("out/x.nsys-rep"), Path("out/x"), Path("t/e.sqlite")) == [
        "nsys", "stats", "--report=cuda_gpu_kern_sum", "--format=csv", "--output=out/x",
        "--sqlite=t/e.sqlite", "out/x.nsys-rep",
    ]  # fmt: skip


def test_dmon_parser_reads_columns_by_header_name() -> None:
    parser = dmon_parser.DmonParser()
    for i, line in enumerate(DMON_SAMPLE.splitlines()):
        parser.feed(line, 100.0 + i)
    assert sorted(parser.samples) == sorted(
        [
            (102.0, 0, 252, 1024.0),
            (102.0, 0, 1004, 0.125),
            (102.0, 0, 1002, 0.875),
            (103.0, 1, 252, 2048.0),  # TENSO of GPU 1 was N/A: no sample
            (103.0, 1, 1002, 0.5),
            (107.0, 0, 252, 1030.0),
            (107.0, 0, 1004, 0.25),
            (107.0, 0, 1002, 0.75),
        ]
    )
    assert any("Error: something" in line for line in parser.other_lines)


def test_dmon_parser_reads_the_older_header() -> None:
    parser = dmon_parser.DmonParser()
    for line in DMON_SAMPLE_DCGM2.splitlines():
        parser.feed(line, 5.0)
    assert sorted(parser.samples) == [
        (5.0, 0, 1002, 0.0),
        (5.0, 0, 1003, 0.012),
        (5.0, 0, 1004, 0.0),
        (5.0, 0, 1005, 0.003),
    ]


def test_dmon_parser_ignores_rows_before_a_header() -> None:
    parser = dmon_parser.DmonParser()
    parser.feed("GPU 0  0.5  0.5", 1.0)
    assert parser.samples == [] and not parser.saw_header


def test_dcgm_out_path() -> None:
    assert dcgm.dcgm_out_path(None, "r/x.telemetry.csv", "r/x.csv") is None
    assert dcgm.dcgm_out_path("off", "r/x.telemetry.csv", "r/x.csv") is None
    assert dcgm.dcgm_out_path("auto", "r/x.telemetry.csv", "r/x.csv") == Path("r/x.dcgm.csv")
    assert dcgm.dcgm_out_path("auto", None, "r/y.csv") == Path("r/y.dcgm.csv")
    assert dcgm.dcgm_out_path("auto", None, None) is None
    assert dcgm.dcgm_out_path("d/m.csv", "r/x.telemetry.csv", None) == Path("d/m.csv")


# ---------------------------------------------------------------------------------------------------
# The monitor through a real subprocess: a stand-in `dcgmi` first on PATH that prints dmon's format.

FAKE_DCGMI = """\
#!{python}
import os, signal, sys, time

args = sys.argv[1:]
if args == ["--version"]:
    print("dcgmi  version: 3.3.5")
    sys.exit(0)
log = open(os.environ["FAKE_DCGMI_LOG"], "a")
log.write(f"start {{os.getpid()}} {{' '.join(args)}}\\n")
log.flush()
if os.environ.get("FAKE_DCGMI_MODE") == "no-hostengine":
    print("Error: unable to establish a connection to the specified host: localhost")
    print("Error: Unable to connect to host engine. Host engine connection invalid/disconnected.")
    sys.exit(255)
stopping = []
signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
short = {{"1002": "SMACT", "1003": "SMOCC", "1004": "TENSO", "1005": "DRAMA", "1009": "PCITX",
          "1010": "PCIRX", "252": "FBUSD"}}
ids = args[args.index("-e") + 1].split(",")[::-1]  # columns in another order than asked: read by name
gpus = args[args.index("-i") + 1].split(",")
delay = int(args[args.index("-d") + 1]) / 1000
print("#Entity".ljust(16) + "".join(short[i].ljust(13) for i in ids))
print("ID")
sys.stdout.flush()
while not stopping:
    for g in gpus:
        cells = [
            str(int(i) * 10 + int(g)) if int(i) in (252, 1009, 1010)
            else f"{{(int(i) - 1000) / 10 + int(g) / 100:.3f}}"
            for i in ids
        ]
        print(f"GPU {{g}}".ljust(16) + "".join(c.ljust(13) for c in cells))
    sys.stdout.flush()
    time.sleep(delay)
print("\\n\\ndmon was stopped due to receiving a signal")
log.write("stopped by SIGINT\\n")
"""


def expected_value(gpu: int, field_id: int) -> float:
    return (
        field_id * 10 + gpu if field_id in (252, 1009, 1010) else round((field_id - 1000) / 10 + gpu / 100, 3)
    )


@pytest.fixture
def fake_dcgmi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`dcgmi` first on PATH; no DCGM bindings found; returns the stand-in's log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "dcgmi"
    script.write_text(FAKE_DCGMI.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "dcgmi.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DCGMI_LOG", str(log))
    monkeypatch.setattr(bindings, "BINDINGS_DIRS", ())
    monkeypatch.delitem(sys.modules, "DcgmReader", raising=False)
    return log


def started_pid(log: Path) -> int:
    return int(next(line for line in log.read_text().splitlines() if line.startswith("start")).split()[1])


def assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_monitor_samples_through_dcgmi_dmon(fake_dcgmi: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.dcgm.csv"
    with dcgm.dcgm_monitor([0, 1], out, interval_ms=20) as status:
        assert status.available and status.reason == "dcgmi dmon 3.3.5"
        pid = started_pid(fake_dcgmi)
        import time

        time.sleep(0.3)
    assert_gone(pid)
    assert "stopped by SIGINT" in fake_dcgmi.read_text()
    assert f"dmon -e {ALL_IDS} -i 0,1 -d 20" in fake_dcgmi.read_text()
    table = pd.read_csv(out)
    assert list(table.columns) == dcgm.COLUMNS
    assert set(table["gpu"]) == {0, 1} and set(table["field_id"]) == {f.field_id for f in dcgm.FIELDS}
    for row in table.itertuples():
        assert row.value == pytest.approx(expected_value(row.gpu, row.field_id))
        assert (row.field, row.unit) == (
            dcgm.FIELD_BY_ID[row.field_id].name,
            dcgm.FIELD_BY_ID[row.field_id].unit,
        )
    assert table["t_unix_s"].is_monotonic_increasing
    sidecar = json.loads((tmp_path / "run.dcgm.provenance.json").read_text())
    assert sidecar["dcgm"]["source"] == "dcgmi dmon 3.3.5" and sidecar["dcgm"]["samples"] == len(table)


def test_monitor_stops_dmon_when_the_body_raises(fake_dcgmi: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.dcgm.csv"
    with pytest.raises(RuntimeError, match="workload failed"), dcgm.dcgm_monitor([0], out, interval_ms=20):
        pid = started_pid(fake_dcgmi)
        raise RuntimeError("workload failed")
    assert_gone(pid)
    assert not out.exists() and not (tmp_path / "run.dcgm.provenance.json").exists()


def test_monitor_says_why_dmon_did_not_start(
    fake_dcgmi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_DCGMI_MODE", "no-hostengine")
    out = tmp_path / "run.dcgm.csv"
    with dcgm.dcgm_monitor([0], out) as status:
        assert not status.available
        assert "Unable to connect to host engine" in status.reason and "exit status 255" in status.reason
    assert list(tmp_path.glob("run.dcgm*")) == []


def test_monitor_refuses_to_overwrite(fake_dcgmi: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.dcgm.csv"
    out.write_text("earlier\n")
    with pytest.raises(ResultExistsError), dcgm.dcgm_monitor([0], out):
        pass
    assert out.read_text() == "earlier\n"
    assert not fake_dcgmi.exists()  # refused before starting dmon


def test_monitor_without_dcgm_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # DCGM hidden, whether this machine has it or not: no dcgmi on PATH, no bindings where DCGM puts them,
    # and DcgmReader unimportable from anywhere else
    monkeypatch.setenv("PATH", path_without(["dcgmi"], tmp_path / "bin"))
    monkeypatch.setattr(bindings, "BINDINGS_DIRS", (tmp_path / "no-dcgm",))
    monkeypatch.setitem(sys.modules, "DcgmReader", None)
    out = tmp_path / "run.dcgm.csv"
    with dcgm.dcgm_monitor([0], out) as status:
        assert not status.available
        assert status.reason.startswith("dcgmi not found on PATH and DCGM Python bindings not importable")
        assert status.note.startswith("DCGM not available: dcgmi not found")
    with dcgm.dcgm_monitor([], out) as status:
        assert not status.available and "no GPU" in status.reason
    assert not dcgm.dcgm_status().available
    assert list(tmp_path.glob("run*")) == []


def test_measurement_records_dcgm_beside_the_trace(fake_dcgmi: Path, tmp_path: Path) -> None:
    """What run_job does around the harness: the samples in <stem>.dcgm.csv, and what the provenance says."""
    path = dcgm.dcgm_out_path("auto", str(tmp_path / "p.telemetry.csv"), str(tmp_path / "p.csv"))
    with dcgm.monitor_if_requested([0], path) as record:
        pass
    assert record == {
        "available": True,
        "reason": "dcgmi dmon 3.3.5",
        "file": "p.dcgm.csv",
        "note": "DCGM: dcgmi dmon 3.3.5",
    }
    assert (tmp_path / "p.dcgm.csv").is_file()
    with dcgm.monitor_if_requested([0], None) as record:
        assert record == {"available": False, "note": "DCGM not requested"}


# ---------------------------------------------------------------------------------------------------
# The bindings path: DCGM's DcgmReader cannot run without a GPU and libdcgm, so a small stand-in module
# with its interface (InitWrapped, GetAllGpuValuesAsDictSinceLastCall, Shutdown) in a bindings folder.

FAKE_READER = """\
import types

class DcgmReader:
    instances = []

    def __init__(self, hostname="localhost", fieldIds=None, updateFrequency=10000000, gpuIds=None,
                 ignoreBlank=True, fieldGroupName="dcgm_fieldgroupData", **kwargs):
        self.hostname, self.fieldIds, self.gpuIds = hostname, fieldIds, gpuIds
        self.updateFrequency, self.fieldGroupName = updateFrequency, fieldGroupName
        self.calls, self.shut = 0, False
        DcgmReader.instances.append(self)

    def InitWrapped(self, path=None):
        if self.hostname == "localhost":
            raise RuntimeError("Host engine connection invalid/disconnected")

    def GetAllGpuValuesAsDictSinceLastCall(self, mapById):
        self.calls += 1
        if self.calls == 1:
            return {}
        ts = 1_700_000_000_000_000 + self.calls * 100_000
        return {gpu: {fid: [types.SimpleNamespace(ts=ts, value=fid + gpu)] for fid in self.fieldIds}
                for gpu in self.gpuIds}

    def Shutdown(self):
        self.shut = True
"""


def test_monitor_uses_the_bindings_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_dcgmi: Path
) -> None:
    folder = tmp_path / "bindings"
    folder.mkdir()
    (folder / "DcgmReader.py").write_text(FAKE_READER)
    monkeypatch.setattr(bindings, "BINDINGS_DIRS", (tmp_path / "absent", folder))
    monkeypatch.setattr(sys, "path", list(sys.path))
    out = tmp_path / "b.dcgm.csv"
    try:
        with dcgm.dcgm_monitor([0, 3], out, interval_ms=50) as status:
            assert status.available
            assert status.reason == f"DCGM Python bindings ({folder}), embedded host engine"
        reader_module = sys.modules["DcgmReader"]
    finally:
        sys.modules.pop("DcgmReader", None)
    local, embedded = reader_module.DcgmReader.instances
    assert local.hostname == "localhost" and local.shut  # no nv-hostengine: tried, closed, then embedded
    assert embedded.hostname is None and embedded.shut and embedded.gpuIds == [0, 3]
    assert embedded.updateFrequency == 50_000 and embedded.fieldGroupName == f"gpurepro_{os.getpid()}"
    table = pd.read_csv(out)
    assert set(table["gpu"]) == {0, 3} and len(table) == 2 * len(dcgm.FIELDS)
    assert (table["value"] == table["field_id"] + table["gpu"]).all()
    assert table["t_unix_s"].iloc[0] == pytest.approx(1_700_000_000.2)
    assert not fake_dcgmi.exists()  # dmon was not needed


# ---------------------------------------------------------------------------------------------------
# nsys: a stand-in `nsys` that runs the command and writes what the real one writes, for the flow
# around it (scratch folder, linking into place, kernel summary with provenance, never overwriting).

FAKE_NSYS = """\
#!{python}
import subprocess, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA Nsight Systems version 2024.5.1.113-245134619542v0")
    sys.exit(0)
options = {{a.split("=")[0]: a.split("=", 1)[1] for a in args[1:] if a.startswith("--")}}
if args[0] == "profile":
    command = [a for a in args[1:] if not a.startswith("--")]
    status = subprocess.run(command).returncode
    open(options["--output"] + ".nsys-rep", "wb").write(b"NSYS-REP")
    sys.exit(status)
if args[0] == "stats":
    assert options["--report"] == "cuda_gpu_kern_sum" and options["--format"] == "csv"
    open(options["--output"] + "_cuda_gpu_kern_sum.csv", "w").write(
        'Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\\n'
        '98.5,2000000,20,100000.0,99000.0,95000,120000,5000.0,"void sgemm_tiled<32>(int, const float *)"\\n'
    )
"""


def test_nsys_profile_writes_report_and_kernel_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text(FAKE_NSYS.format(python=sys.executable))
    (bin_dir / "nsys").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    stem = tmp_path / "profiles" / "sgemm_tiled_n256"
    marker = tmp_path / "ran"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('yes')"]
    report, kern_sum = nsys.profile(stem, command, {"profile": "cpu"})
    assert marker.read_text() == "yes"
    assert report.read_bytes() == b"NSYS-REP" and report.name == "sgemm_tiled_n256.nsys-rep"
    kernels = pd.read_csv(kern_sum)
    assert kernels["workload"].tolist() == ["sgemm_tiled_n256"] and kernels["Instances"].tolist() == [20]
    record = json.loads((tmp_path / "profiles" / "sgemm_tiled_n256_kern_sum.provenance.json").read_text())
    assert record["nsys"]["version"] == "2024.5.1.113-245134619542v0"
    assert record["nsys"]["profiled_command"] == command and record["profile"] == "cpu"
    assert sorted(p.name for p in stem.parent.iterdir()) == [
        "sgemm_tiled_n256.nsys-rep",
        "sgemm_tiled_n256_kern_sum.csv",
        "sgemm_tiled_n256_kern_sum.provenance.json",
    ]  # fmt: skip
    with pytest.raises(ResultExistsError):
        nsys.profile(stem, command, {})
    failing = [sys.executable, "-c", "raise SystemExit(3)"]
    with pytest.raises(GpureproError, match="exit status 3"):
        nsys.profile(tmp_path / "profiles" / "other", failing, {})
    assert not any(p.name.startswith(("other", ".other")) for p in stem.parent.iterdir())


def _without_tools(tmp_path: Path) -> dict[str, str]:
    """The environment with Nsight Systems and DCGM hidden, installed here or not: neither nsys nor dcgmi
    on PATH, and DCGM's Python bindings unimportable, from its install folders too."""
    env = {**os.environ, "PATH": path_without(["nsys", "dcgmi"], tmp_path / "bin")}
    return hidden_modules_env(["DcgmReader"], tmp_path / "site", env)


def _run_without_tools(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`gpurepro ...` without nsys and DCGM (_without_tools)."""
    env = _without_tools(tmp_path)
    return subprocess.run(
        [sys.executable, "-m", "gpurepro", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_profile_nsys_without_nsys_says_so_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _run_without_tools(
        tmp_path, "profile", "nsys", "--out", str(out / "x"), "--", "gpurepro", "detect"
    )
    assert result.returncode == 2
    assert (
        "gpurepro profile: error: nsys not found: gpurepro profile nsys needs Nsight Systems" in result.stderr
    )
    assert "nothing was profiled" in result.stderr
    assert not out.exists()


def test_profile_dcgm_without_dcgm_says_so_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "d.csv"
    result = _run_without_tools(
        tmp_path, "profile", "dcgm", "--gpus", "0", "--seconds", "1", "--out", str(out)
    )
    assert result.returncode == 2
    assert (
        "DCGM not available: dcgmi not found on PATH" in result.stderr
        and "nothing was sampled" in result.stderr
    )
    assert not out.exists()


def test_workflow_profile_nsys_without_nsys(
    workflow_copy: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    hidden = path_without(["nsys"], tmp_path_factory.mktemp("bin"))  # hidden where it is installed
    env = {**os.environ, "PATH": hidden}
    result = run_snakemake("-n", "profile_nsys", "--config", "device=h100", cwd=workflow_copy, env=env)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert (
        "nsys not found: profile_nsys needs Nsight Systems (in the project's container image, or install "
        "nsight-systems-cli); nothing was profiled" in output
    )
    assert not (workflow_copy / "results").exists()
    # Everything else still plans without nsys, and the traces are not part of `all`.
    default = run_snakemake("-n", "--config", "device=h100", cwd=workflow_copy, env=env)
    assert default.returncode == 0, default.stderr
    assert "sgemm_run" in default.stdout and "profile_nsys_run" not in default.stdout
