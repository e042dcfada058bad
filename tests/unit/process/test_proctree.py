"""proctree.members over a fake /proc: a build's session, ninja's own groups, setsid helpers, adopted daemons."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.process import proctree


def _proc(root: Path, pid: int, ppid: int, pgid: int, sid: int, env: str = "", state: str = "S") -> None:
    d = root / str(pid)
    d.mkdir()
    (d / "stat").write_text(f"{pid} (some (odd) name) {state} {ppid} {pgid} {sid} 0 0\n")
    (d / "environ").write_bytes(f"PATH=/bin\0{env}\0".encode())


def test_the_tree_follows_groups_parents_and_the_tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proctree, "_PROC", str(tmp_path))
    tag = f"{proctree.TAG_VAR}=t1"
    _proc(tmp_path, 100, 1, 100, 100, tag)  # uv, the spawned child (its own session)
    _proc(tmp_path, 101, 100, 100, 100, tag)  # the backend
    _proc(tmp_path, 102, 101, 102, 100, tag)  # ninja's job: its own process group, same session
    _proc(tmp_path, 103, 102, 103, 103)  # a setsid helper of that job, its environment cleared
    _proc(tmp_path, 104, 1, 104, 104, tag)  # a daemon adopted by init: found by its tag alone
    _proc(tmp_path, 105, 104, 104, 104)  # ... and its child
    _proc(tmp_path, 106, 101, 100, 100, tag, state="Z")  # a zombie: nothing left to kill
    _proc(tmp_path, 200, 1, 200, 200, f"{proctree.TAG_VAR}=other")  # another child's tree
    _proc(tmp_path, 300, 1, 300, 300)  # the user's shell
    assert proctree.members([(100, "t1")]) == {100, 101, 102, 103, 104, 105}
    assert proctree.members([(100, None)]) == {100, 101, 102, 103}
    assert proctree.members([(100, "t1"), (200, "other")]) == {100, 101, 102, 103, 104, 105, 200}
