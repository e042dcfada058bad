"""The published `--json` schemas (docs/reference/schemas/, generated from records/): a test reads a command's
real `--json` output and checks it fits the schema a user of that output reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "reference" / "schemas"


def fits(name: str, stdout: str) -> dict[str, Any]:
    """`stdout` parsed, after checking it is one JSON document that fits schemas/<name>.json."""
    document = json.loads(stdout)
    schema = json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)
    return dict(document)
