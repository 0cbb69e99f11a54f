"""The look a family's claims are judged at, read back from the round plans a run wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpurepro import looks

LEVELS = looks.levels("pocock", 0.05, 3, 10, 7)


def _plan(folder: Path, k: int, points: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    look = looks.Look(k, LEVELS, "pocock", 0.05)
    plan = {"round": k, "points": [{"study": "hfta", "wildcards": {}}] * points, **look.record()}
    (folder / f"round{k}.json").write_text(json.dumps(plan))


def test_the_last_look_is_the_last_plans_or_the_one_after_it(tmp_path: Path) -> None:
    """Rounds that ended with a plan of no points stand at that plan's look; rounds cut off by their
    count (the last plan still gave processes) at the look after it, whose tables hold that round."""
    ended, cut = tmp_path / "results" / looks.PLANS / "hfta", tmp_path / "results" / looks.PLANS / "deit"
    for k, points in ((1, 2), (2, 1), (3, 0)):
        _plan(ended, k, points)
    for k in range(1, 8):
        _plan(cut, k, 1)
    found = looks.run_looks(tmp_path / "results")
    assert (found["hfta"].index, found["deit"].index) == (3, 8)
    assert found["hfta"].confidence == pytest.approx(LEVELS[2]) and found["deit"].confidence == LEVELS[-1]
    assert "look 3 of at most 8: intervals at 98.76%" in found["hfta"].describe()


def test_a_run_without_plans_judges_once_at_95(tmp_path: Path) -> None:
    assert looks.run_looks(tmp_path) == {} and looks.run_looks(None) == {}
    assert looks.of_claim({}, "hfta_speedup") is None


def test_a_claim_is_judged_at_its_familys_look() -> None:
    hfta, deit = looks.Look(2, LEVELS, "pocock", 0.05), looks.Look(1, LEVELS, "pocock", 0.05)
    found = {"hfta": hfta, "deit": deit}
    assert looks.of_claim(found, "hfta_speedup") is hfta
    assert looks.of_claim(found, "inference_deit_processes") is deit
    assert looks.of_claim(found, "inference_bert") is None and looks.of_claim(found, "sgemm") is None


def test_intervals_widen_on_the_scale_of_what_they_bound() -> None:
    """A ratio's interval widens on the log scale (its ends stay positive), a difference's on its own."""
    look = looks.Look(1, LEVELS, "pocock", 0.05)
    (ratio,) = looks.widen([(1.8, 2.2)], look, (3, 3), difference=False)
    (difference,) = looks.widen([(-1.0, 3.0)], look, (3, 3), difference=True)
    assert ratio[0] < 1.8 and ratio[1] > 2.2 and ratio[0] * ratio[1] == pytest.approx(1.8 * 2.2)
    assert difference[0] < -1.0 and sum(difference) == pytest.approx(2.0)
