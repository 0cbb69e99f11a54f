"""JSON-schema checks that name the bad key, its value and what is allowed, in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import GpureproError

# The keywords whose alternatives are said one by one when a value fits none of them
CHOICES = ("oneOf", "anyOf")
# A number's bounds in words, in this order ("an integer of 1 or more and at most 8")
BOUNDS = {
    "minimum": "of {} or more",
    "exclusiveMinimum": "above {}",
    "maximum": "at most {}",
    "exclusiveMaximum": "below {}",
}
# How YAML spells null, which Snakemake's loader of nested --config values leaves a string
YAML_NULLS = ("null", "Null", "NULL", "~")


def first_error(data: Any, schema_file: Path | str) -> str | None:
    """The most relevant violation of the schema as 'key a.b: message', or None when data is valid."""
    with Path(schema_file).open() as fh:
        schema = yaml.safe_load(fh)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is None:
        return None
    choice = _nearest_choice(error)
    if choice is error and error.context:  # no alternative came close: say what each one allows
        return f"key {_key(error)}: {_shown(error.instance)} is not any of the allowed forms: {_forms(error)}"
    message = f"key {_key(error)}: {error.message}"
    if choice is not None:  # the error inside one alternative: name the others too
        where = "allowed" if choice.absolute_path == error.absolute_path else f"key {_key(choice)} allows"
        return f"{message}; {where}: {_forms(choice)}"
    if error.validator == "additionalProperties":  # a typo'd key: list the keys that exist
        return f"{message}; allowed keys: {', '.join(sorted(error.schema.get('properties', {})))}"
    if error.validator == "type":  # the type alone hides the rest ('abc' for an integer of 0 or more)
        return f"{message}; allowed: {describe(error.schema)}"
    return message


def _key(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(top level)"


def _nearest_choice(error: jsonschema.ValidationError) -> jsonschema.ValidationError | None:
    """The error itself or its nearest enclosing oneOf/anyOf: jsonschema reports a value that fits no
    alternative as "not valid under any of the given schemas", or by the error of one alternative alone
    ("'abc' is not one of ['all']" where a list was allowed too)."""
    current: jsonschema.ValidationError | None = error
    while current is not None:
        if current.validator in CHOICES:
            return current
        current = current.parent
    return None


def _forms(choice: jsonschema.ValidationError) -> str:
    """Each alternative in its own description where it has one (its author knows best: 'a list of
    distinct GPU indices'), else read from its keywords."""
    return ", or ".join(
        _with_example(alternative, alternative["description"])
        if isinstance(alternative, dict) and "description" in alternative
        else describe(alternative)
        for alternative in choice.validator_value
    )


def _shown(value: Any, width: int = 80) -> str:
    """A value as jsonschema shows it, cut short where it is a whole section."""
    text = repr(value)
    return text if len(text) <= width else f"{text[: width - 3]}..."


def describe(schema: Any) -> str:
    """What a (sub)schema allows, in words read from its keywords (a description says what a key is
    for, not what it takes), with its first example."""
    if not isinstance(schema, dict):  # true / false schemas
        return "anything" if schema else "nothing"
    return _with_example(schema, _described(schema))


def _with_example(schema: dict[str, Any], words: str) -> str:
    examples = schema.get("examples")
    return f"{words}, e.g. {examples[0]!r}" if examples else words


def _described(schema: dict[str, Any]) -> str:
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        values = [repr(value) for value in schema["enum"]]
        return values[0] if len(values) == 1 else f"one of {', '.join(values)}"
    types = schema.get("type")
    if types is None:
        required = schema.get("required")
        if not required:
            return "a value"
        return f"a mapping with key{'s' * (len(required) > 1)} {', '.join(map(repr, required))}"
    return ", or ".join(_typed(kind, schema) for kind in ([types] if isinstance(types, str) else types))


def _typed(kind: str, schema: dict[str, Any]) -> str:
    if kind in ("integer", "number"):
        return f"{'an integer' if kind == 'integer' else 'a number'}{_bounds(schema)}"
    if kind == "array":
        return _list(schema)
    if kind == "string" and "pattern" in schema:
        return f"a string matching {schema['pattern']!r}"
    if kind == "string" and schema.get("minLength"):
        return (
            f"a string of at least {schema['minLength']} characters"
            if schema["minLength"] > 1
            else "a non-empty string"
        )
    return {"boolean": "true or false", "string": "a string", "object": "a mapping"}.get(kind, kind)


def _list(schema: dict[str, Any]) -> str:
    details = [
        f"each item {describe(schema['items'])}" if "items" in schema else "",
        f"at least {schema['minItems']} item(s)" if schema.get("minItems") else "",
        "no item twice" if schema.get("uniqueItems") else "",
    ]
    said = "; ".join(detail for detail in details if detail)
    return f"a list ({said})" if said else "a list"


def _bounds(schema: dict[str, Any]) -> str:
    said = [form.format(schema[key]) for key, form in BOUNDS.items() if key in schema]
    return f" {' and '.join(said)}" if said else ""


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
    correct command line would fail validation with "'0' is not of type 'integer'" (and `{extra: null}`
    with "'null' is not of type 'integer', 'null'").
    """
    if isinstance(value, dict):
        return {k: coerce_cli_scalars(v, top=False) for k, v in value.items()}
    if isinstance(value, list):
        return [coerce_cli_scalars(v, top=False) for v in value]
    if not isinstance(value, str):
        return value
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not top and value in YAML_NULLS:
        return None
    if not top:
        for number in (int, float):
            try:
                return number(value)
            except ValueError:
                pass
    return value
