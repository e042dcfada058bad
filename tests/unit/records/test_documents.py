"""Every `--json` document is printed with the --json schema version first, failures included."""

from __future__ import annotations

import json

import pytest

from kestrel_release.records import documents
from kestrel_release.ui import console


def _printed(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out)


def test_a_document_starts_with_the_schema_version_and_keeps_its_content(capsys: pytest.CaptureFixture[str]) -> None:
    console.emit_json({"ok": True, "wheels": [{"filename": "x.whl"}]})
    console.flush_json()
    printed = _printed(capsys)
    assert list(printed) == ["schema_version", "ok", "wheels"]
    assert printed == {"schema_version": documents.SCHEMA_VERSION, "ok": True, "wheels": [{"filename": "x.whl"}]}


def test_a_failure_document_carries_it_too(capsys: pytest.CaptureFixture[str]) -> None:
    console.emit_json({"ok": True, "target": "pypi"})
    console.flush_json({"message": "m", "hint": "h", "exit_code": 5, "kind": "verify"})
    printed = _printed(capsys)
    assert printed["schema_version"] == documents.SCHEMA_VERSION and printed["ok"] is False
    assert printed["target"] == "pypi" and printed["error"]["exit_code"] == 5
