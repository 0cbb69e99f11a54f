"""A round's points within their claim group run in a seeded order, reversed from one round to the next,
so a ratio's two sides take turns going first; each waits for the one before it, as the workflow asks."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpurepro import round_order

# the full H100 plan's HFTA section, whose claims read serial B=1 and the fused array at B=32
SECTION = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/devices/h100.yaml").read_text())[
    "hfta"
]
PATTERN = "raw/{net}/{step}/{scheme}_{precision}_b{b}_run{run}.csv"


def _hfta(scheme: str, b: int, run: int, net: str = "resnet18") -> dict:
    return {"net": net, "step": "stock", "scheme": scheme, "precision": "fp16", "b": b, "run": run}


# serial B=1 against the fused array at B=32 (a claim's two sides, one group), three rounds each, and
# the same pair of another workload (another group)
POINTS = [
    _hfta(scheme, b, run, net)
    for run in (1, 2, 3)
    for net in ("resnet18", "mlp")
    for scheme, b in (("serial", 1), ("hfta", 32))
]


def _first(run: int, seed: int, net: str = "resnet18") -> str:
    """Which side goes first in a round: the one that waits for no other point of its round."""
    firsts = []
    for scheme, b in (("serial", 1), ("hfta", 32)):
        waits = round_order.waits_for(
            "hfta_point", PATTERN, POINTS, _hfta(scheme, b, run, net), SECTION, seed
        )
        if not any(f"_run{run}.csv" in path for path in waits):
            firsts.append(scheme)
    assert len(firsts) == 1, firsts
    return firsts[0]


def test_the_two_sides_take_turns_going_first() -> None:
    order = [_first(run, seed=0) for run in (1, 2, 3)]
    assert order[0] != order[1] and order[1] != order[2]


def test_the_order_follows_the_seed_and_each_groups_name() -> None:
    """One seed gives one order every time; over seeds both sides go first in round 1."""
    assert _first(1, seed=0) == _first(1, seed=0)
    firsts = {_first(1, seed) for seed in range(16)}
    assert firsts == {"serial", "hfta"}


def test_a_point_waits_for_the_last_round_and_the_point_before_it() -> None:
    second = next(
        point
        for point in (_hfta("serial", 1, 2), _hfta("hfta", 32, 2))
        if _first(2, seed=0) != point["scheme"]
    )
    waits = round_order.waits_for("hfta_point", PATTERN, POINTS, second, SECTION, 0)
    last_round = [PATTERN.format(**p) for p in POINTS if p["run"] == 1]
    other = _hfta(_first(2, seed=0), 1 if _first(2, seed=0) == "serial" else 32, 2)
    assert waits == [*last_round, PATTERN.format(**other)]


def test_a_process_asked_for_after_the_planned_rounds_waits_as_before() -> None:
    """A fourth process of a point (a round of more processes) is in no planned round's order."""
    waits = round_order.waits_for("hfta_point", PATTERN, POINTS, _hfta("serial", 1, 4), SECTION, 0)
    assert waits == [PATTERN.format(**p) for p in POINTS if p["run"] == 3]


def test_a_point_only_a_figure_shows_keeps_snakemakes_order() -> None:
    """Concurrent training at B=4 (no claim reads it) beside the two sides: it waits for the last round
    only, and no side waits for it."""
    figure = _hfta("concurrent", 4, 2)
    points = [*POINTS, _hfta("concurrent", 4, 1), figure]
    last_round = [PATTERN.format(**p) for p in points if p["run"] == 1]
    assert round_order.waits_for("hfta_point", PATTERN, points, figure, SECTION, 0) == last_round
    for side in (_hfta("serial", 1, 2), _hfta("hfta", 32, 2)):
        assert PATTERN.format(**figure) not in round_order.waits_for(
            "hfta_point", PATTERN, points, side, SECTION, 0
        )
