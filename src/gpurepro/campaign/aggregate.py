"""A campaign's raw files to its tables: what `gpurepro campaign tables` writes and the benchmark times."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import GpureproError
from ..results import write_table
from . import layout, tables

# table name -> file name under the run's tables/ folder
FILES = {"gpus": "campaign_gpus.csv", "summary": "campaign_summary.csv",
         "outliers": "campaign_outliers.csv", "nodes": "campaign_nodes.csv"}  # fmt: skip


def aggregate(raw: Path | str, campaign: str, nodes: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Every table of a campaign. `nodes`: the nodes it asked for (all folders under raw/ if None), so a
    node that was never tried is listed too. The nodes table has one row per try at each node, its
    status and reason, and for the try that was read, its GPUs' spread and start-time skew."""
    raw = Path(raw)
    nodes = layout.nodes_of(raw, nodes)
    found = tables.summarise(layout.read_campaign(raw, nodes), campaign)
    tries = layout.nodes_table(raw, nodes)
    spreads = found.pop("node_spreads")
    measured = spreads.drop(columns=["campaign"]).rename(columns={"profile": "profile_measured"})
    tries = tries.merge(measured, on="node", how="left")
    tries.loc[~(tries["current"] & (tries["status"] == "measured")), measured.columns.drop("node")] = None
    found["nodes"] = tries.assign(campaign=campaign)
    return found


def write(found: dict[str, pd.DataFrame], folder: Path | str) -> list[Path]:
    folder = Path(folder)
    return [write_table(found[name], folder / file) for name, file in FILES.items()]


def table_path(folder: Path | str, name: str) -> Path:
    """One of a campaign folder's tables (`name`: a key of FILES), or an error naming the folder and
    saying how to make it."""
    folder = Path(folder)
    if not layout.is_campaign(folder):
        raise GpureproError(
            f"{folder} is not a campaign's folder: expected {folder / layout.RAW}/<node>/attempt<k>/"
            f"{layout.NODE_RECORD} or {folder / layout.TABLES}/{FILES['gpus']} "
            "(e.g. results/v100/campaign/<name>)"
        )
    path = folder / layout.TABLES / FILES[name]
    if not path.is_file():
        raise GpureproError(
            f"{folder}: no {layout.TABLES}/{FILES[name]}: make the campaign's tables first (gpurepro "
            f"campaign tables {folder / layout.RAW} --campaign NAME --out-dir {folder / layout.TABLES}, or "
            "snakemake campaign)"
        )
    return path


def read_tables(folder: Path | str) -> dict[str, pd.DataFrame]:
    """A campaign folder's tables (tables/campaign_*.csv), by file name without .csv."""
    return {Path(file).stem: pd.read_csv(table_path(folder, name)) for name, file in FILES.items()}
