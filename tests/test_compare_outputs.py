"""compare's outputs: the verdicts first, one pair per folder, a run never compared with itself, a bad
archive named, a pack never replaced, and each file written atomically."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from gpurepro.cli import main
from gpurepro.compare import destination, outputs, render
from gpurepro.compare.folders import default_out
from gpurepro.compare.outputs import write
from gpurepro.compare.pack import pack, sha256, unpack
from gpurepro.errors import GpureproError
from gpurepro.verdict.rejudge import judged

from .conftest import ROOT
from .test_compare import make_run

REFERENCE = ROOT / "reference-runs"
HFTA = "HFTA (Wang et al., MLSys'21)"


def _slower_than_mps(run: Path) -> None:
    """The fused array made slower than MPS in the run's speedup table (0.8x, interval 0.78-0.82)."""
    path = run / "tables" / "hfta_speedup.csv"
    table = pd.read_csv(path)
    over_mps = (table["metric"] == "speedup") & (table["baseline"] == "mps")
    low, high = table["statistic"].str.endswith("ci_low"), table["statistic"].str.endswith("ci_high")
    table.loc[over_mps, "value"] = 0.8
    table.loc[over_mps & low, "value"], table.loc[over_mps & high, "value"] = 0.78, 0.82
    table.to_csv(path, index=False)


def test_a_changed_measurement_is_named_first_with_the_claims_it_moved(tmp_path: Path) -> None:
    """Both runs judged by this checkout's claims: the fused array slower than MPS in B turns the
    project's own over-MPS check from held to not held, while the paper's over-MPS range (shown, not
    counted: not found in the paper or its artifact) stays informational (HFTA's headline stays "too
    few claims testable" either way), and the page says so before any metric."""
    a = unpack(REFERENCE / "h200-quick-2026-11-28.tar.gz", tmp_path / "a")
    b = tmp_path / "b" / a.name
    shutil.copytree(a, b)
    _slower_than_mps(b)
    paths, summary = write(a, b, tmp_path / "out", judged)
    page = paths[0].read_text()
    assert page.index("## Verdicts") < page.index("## Metrics") < page.index("## What changed")
    verdicts = page[page.index("## Verdicts") : page.index("## Metrics")]
    assert not any(line.endswith("| changed |") for line in verdicts.splitlines())
    moved = [line for line in verdicts.splitlines() if "| held | not held |" in line]
    ids = [line.split(":")[0].strip("| ") for line in moved]
    assert ids == ["h100-hfta-fused-over-mps-b32"]
    assert "hfta-speedup-over-mps" not in verdicts  # informational on both: its grade did not move
    assert "hfta-speedup-over-serial" not in verdicts
    assert summary.startswith("verdicts: 0 of 5 paper headlines changed, 1 claim changed word\n")
    assert "<h2>Verdicts</h2>" in paths[2].read_text()


def test_two_reference_runs_are_judged_by_one_set_of_claims_and_compare_the_speedups(tmp_path: Path) -> None:
    """The shipped H200 run against the 4xH200 host's one-GPU run: their verdicts as drawn differ (HFTA's
    headline, by the claims of their day), judged by today's they agree; the speedups match although one
    run had 4 repeats; no count is graded by a time's spread."""
    a = REFERENCE / "h200-quick-2026-11-28.tar.gz"
    b = REFERENCE / "h200x4-pair-one-quick-2026-11-28.tar.gz"
    drawn = [(unpack(path, tmp_path / path.name) / "verdict.md").read_text() for path in (a, b)]
    assert ("reproduced (2 of 3" in drawn[0]) != ("reproduced (2 of 3" in drawn[1])
    paths, summary = write(a, b, tmp_path / "out", judged)
    assert summary.startswith("verdicts: 0 of 5 paper headlines changed, ")
    assert "both runs judged by this checkout's claims" in paths[0].read_text()
    table = pd.read_csv(paths[1])
    speedups = table[table["table"] == "hfta_speedup"]
    assert len(speedups) == 2 and "not comparable" not in set(speedups["grade"])
    throttled = table[table["metric"] == "throttled_reps"]
    assert set(throttled["kind"]) == {"count"} and not throttled["basis"].str.contains("GSD").any()
    eager = table[(table["metric"] == "latency") & table["point"].str.contains("deit-b.*eager", regex=True)]
    assert set(eager["grade"]) == {"unresolved at this spread"}


def test_a_run_compared_with_itself_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path / "results")
    with pytest.raises(GpureproError, match="are one run"):
        write(run, tmp_path / "results", tmp_path / "out")  # results holds only results/h100
    assert main(["compare", str(run), str(run), "--out", str(tmp_path / "out")]) == 2
    assert "a run compared with itself says nothing" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    archive = tmp_path / "one.tar.gz"
    pack(run, archive)
    copy = tmp_path / "copy" / "one.tar.gz"
    copy.parent.mkdir()
    copy.write_bytes(archive.read_bytes())
    Path(f"{copy}.sha256").write_text(Path(f"{archive}.sha256").read_text())
    with pytest.raises(GpureproError, match="are one run"):
        write(archive, copy, tmp_path / "out")


def test_a_folder_holding_another_pairs_comparison_is_refused(tmp_path: Path) -> None:
    """lastmonth/h100 against results/h100 and colleague/h100 against results/h100 share the default
    folder h100_vs_h100: the second is refused, naming the first pair; the first pair again replaces its
    own outputs."""
    mine = make_run(tmp_path / "results")
    lastmonth, colleague = make_run(tmp_path / "lastmonth", seed=2), make_run(tmp_path / "colleague", seed=4)
    out = default_out(lastmonth, mine, tmp_path / "results")
    assert out == default_out(colleague, mine, tmp_path / "results")
    write(lastmonth, mine, out)
    before = (out / "compare.csv").read_bytes()
    with pytest.raises(GpureproError, match=f"holds compare.md.*comparison of A {lastmonth}.*--out"):
        write(colleague, mine, out)
    assert (out / "compare.csv").read_bytes() == before
    write(lastmonth, mine, out)  # the same pair: a rerun replaces its outputs
    (out / destination.RECORD).unlink()  # outputs of a comparison that did not record its runs
    with pytest.raises(GpureproError, match="did not record its runs"):
        write(lastmonth, mine, out)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("mine\n")  # a folder of other files takes a comparison
    write(colleague, mine, elsewhere)
    assert (elsewhere / "notes.txt").read_text() == "mine\n"


def test_every_output_of_either_kind_guards_the_folder() -> None:
    from gpurepro.compare import campaigns

    assert set(outputs.NAMES) | set(campaigns.NAMES) == set(destination.OUTPUTS)


def test_random_bytes_with_a_matching_checksum_are_one_clear_error(tmp_path: Path) -> None:
    archive = tmp_path / "run.tar.gz"
    archive.write_bytes(os.urandom(4096))
    Path(f"{archive}.sha256").write_text(f"{sha256(archive)}  {archive.name}\n")
    with pytest.raises(GpureproError, match=rf"{archive}: not an archive gpurepro pack writes"):
        unpack(archive, tmp_path / "into")
    truncated = tmp_path / "cut.tar.gz"
    pack(make_run(tmp_path / "r"), tmp_path / "whole.tar.gz")
    truncated.write_bytes((tmp_path / "whole.tar.gz").read_bytes()[:300])
    Path(f"{truncated}.sha256").write_text(f"{sha256(truncated)}  {truncated.name}\n")
    with pytest.raises(GpureproError, match=rf"{truncated}: not an archive"):
        write(truncated, make_run(tmp_path / "b"), tmp_path / "out")


def test_pack_never_replaces_an_archive_or_its_checksum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path / "a")
    archive = tmp_path / "run.tar.gz"
    assert main(["pack", str(run), "--out", str(archive)]) == 0
    packed = archive.read_bytes()
    assert main(["pack", str(make_run(tmp_path / "b", seed=3)), "--out", str(archive)]) != 0
    assert f"--out {archive}: {archive} already exists" in capsys.readouterr().err
    assert archive.read_bytes() == packed
    Path(f"{archive}.sha256").rename(tmp_path / "moved.sha256")
    archive.unlink()
    (tmp_path / "moved.sha256").rename(f"{archive}.sha256")  # a checksum left behind
    with pytest.raises(GpureproError, match=r"run.tar.gz.sha256 already exists"):
        pack(run, archive)
    assert not archive.exists() and not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_a_failed_step_leaves_the_last_good_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b", seed=3)
    out = tmp_path / "out"
    write(a, b, out)
    good = (out / "compare.md").read_text()

    def broken(*args: object) -> str:
        raise RuntimeError("render failed")

    monkeypatch.setattr(render, "markdown", broken)
    with pytest.raises(RuntimeError):
        write(a, b, out)
    assert (out / "compare.md").read_text() == good
    assert sorted(p.name for p in out.iterdir()) == sorted([*outputs.NAMES, destination.RECORD])
