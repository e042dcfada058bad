"""The release state file as a record: a run's own state resumes, an older one is read, a newer one refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kestrel_release import __version__
from kestrel_release.errors import IncompatibleRecordError, UsageError
from kestrel_release.flows.release import state
from kestrel_release.records import release_state as record


def test_a_saved_state_loads_back_and_says_which_tool_wrote_it(tmp_path: Path) -> None:
    made = state.ReleaseState(tmp_path / state.STATE_FILE, {"targets": ["pypi"]}, ["build"], {"x.whl": "ab"}, "1.0")
    made.mark("verify", 1.234)
    data = json.loads(made.path.read_text())
    assert (data["schema_version"], data["tool_version"], data["timings"]) == (2, __version__, {"verify": 1.23})
    loaded = state.load(tmp_path)
    assert loaded is not None and (loaded.done, loaded.version, loaded.bump) == (["build", "verify"], "1.0", None)


def test_a_state_written_before_schemas_resumes(tmp_path: Path) -> None:
    old = {"params": {}, "done": ["build"], "artifacts": {}, "version": "1.0", "timings": {"build": 3}, "bump": None}
    (tmp_path / state.STATE_FILE).write_text(json.dumps({**old, "saved_at": 1}))
    loaded = state.load(tmp_path)
    assert loaded is not None and loaded.done == ["build"] and loaded.timings == {"build": 3.0}


def test_a_newer_state_is_refused_naming_both_tools(tmp_path: Path) -> None:
    newer = {"schema_version": record.SCHEMA_VERSION + 1, "tool_version": "9.0.0", "params": {}, "done": []}
    (tmp_path / state.STATE_FILE).write_text(json.dumps({**newer, "artifacts": {}}))
    with pytest.raises(IncompatibleRecordError, match=r"written by kestrel-release 9\.0\.0 \(state schema 3\)"):
        state.load(tmp_path)


def test_a_damaged_state_names_the_field(tmp_path: Path) -> None:
    (tmp_path / state.STATE_FILE).write_text(json.dumps({"params": {}, "done": "build", "artifacts": {}}))
    with pytest.raises(UsageError) as err:
        state.load(tmp_path)
    assert "is damaged (field 'done' is str, not a list)" in err.value.message
    assert "release --force" in (err.value.hint or "")
