"""Schema helpers: one-line errors that name the key, and typing of `--config` strings."""

from __future__ import annotations

import yaml

from gpurepro.schema import coerce_cli_scalars, first_error

from .conftest import ROOT

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"


def test_coerce_types_what_snakemake_leaves_as_strings() -> None:
    config = {
        "quick": "true",
        "gpus": ["0", "2"],
        "results_dir": "results-2",
        "seed": 3,
        "telemetry": {"rate_hz": "12.5", "name": "x"},
    }
    assert coerce_cli_scalars(config) == {
        "quick": True,
        "gpus": [0, 2],
        "results_dir": "results-2",
        "seed": 3,
        "telemetry": {"rate_hz": 12.5, "name": "x"},
    }
    assert coerce_cli_scalars("7") == "7"  # top-level numbers are typed by snakemake itself
    assert coerce_cli_scalars({"extra": "null", "other": "~"}) == {"extra": None, "other": None}


def test_first_error_names_nested_keys() -> None:
    assert first_error({"device": "cpu"}, SCHEMA).startswith("key (top level):")
    defaults = yaml.safe_load((ROOT / "config/config.yaml").read_text())  # every other section valid
    message = first_error(
        {
            **defaults,
            "device": "cpu",
            "telemetry": {
                "rate_hz": 0,
                "idle_seconds": 1,
                "min_energy_window_s": 1,
                "cooldown_max_wait_s": 1,
            },
        },
        SCHEMA,
    )
    assert message == "key telemetry.rate_hz: 0 is less than or equal to the minimum of 0"
