"""JSON-schema checks that name the bad key, its value and what is allowed, in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import GpureproError


def first_error(data: Any, schema_file: Path | str) -> str | None:
    """The most relevant violation of the schema as 'key a.b: message', or None when data is valid."""
    with Path(schema_file).open() as fh:
        schema = yaml.safe_load(fh)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    hint = ""
    if error.validator == "additionalProperties":  # a typo'd key: list the keys that exist
        hint = f"; allowed keys: {', '.join(sorted(error.schema.get('properties', {})))}"
    return f"key {where}: {error.message}{hint}"


def read_yaml(path: Path, what: str) -> Any:
    """A YAML file's data; invalid YAML is an error naming the file (`what`: e.g. 'claim file')."""
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise GpureproError(f"bad {what} {path}: not valid YAML: {err}") from None


def coerce_cli_scalars(value: Any, top: bool = True) -> Any:
    """Type the strings that `snakemake --config` leaves untyped.

    Snakemake parses nested values (`gpus=[0,1]`) with YAML's BaseLoader, which keeps every scalar a
    string, and takes only `True`/`False` as booleans, so `quick=true` arrives as 'true'. Without this a
    correct command line would fail validation with "'0' is not of type 'integer'".
    """
    if isinstance(value, dict):
        return {k: coerce_cli_scalars(v, top=False) for k, v in value.items()}
    if isinstance(value, list):
        return [coerce_cli_scalars(v, top=False) for v in value]
    if not isinstance(value, str):
        return value
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not top:
        for number in (int, float):
            try:
                return number(value)
            except ValueError:
                pass
    return value
