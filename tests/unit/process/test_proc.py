"""proc.kill_all with /proc (proctree), on POSIX without it (os.killpg) and on Windows (no killpg:
CTRL_BREAK_EVENT, then terminate)."""

from __future__ import annotations

import signal

import pytest

from kestrel_release.errors import BuildError
from kestrel_release.process import proc


class FakeChild:
    def __init__(self, pid: int = 4242) -> None:
        self.pid = pid
        self.calls: list[tuple] = []

    def send_signal(self, sig) -> None:
        self.calls.append(("signal", sig))

    def kill(self) -> None:
        self.calls.append(("kill",))


def _track(monkeypatch, child) -> None:
    monkeypatch.setattr(proc, "_live", {child: "t1"})
    monkeypatch.setattr(proc, "_stopping", proc.threading.Event())
    monkeypatch.setattr(proc.proctree, "available", lambda: False)  # no /proc: the process group alone


def test_with_proc_the_whole_tree_gets_sigterm_then_sigkill(monkeypatch):
    child = FakeChild()
    _track(monkeypatch, child)
    monkeypatch.setattr(proc.proctree, "available", lambda: True)
    stopped = []
    monkeypatch.setattr(proc.proctree, "kill", lambda roots, grace: stopped.append((roots, grace)))
    proc.kill_all()
    assert stopped == [([(4242, "t1")], proc.GRACE)]
    assert proc.stopping()


def test_posix_kills_the_process_group(monkeypatch):
    child = FakeChild()
    _track(monkeypatch, child)
    killed = []
    monkeypatch.setattr(proc.os, "killpg", lambda pid, sig: killed.append((pid, sig)), raising=False)
    proc.kill_all()
    assert killed == [(4242, signal.SIGKILL)]
    assert child.calls == []
    assert proc.stopping()


def test_windows_without_killpg_breaks_the_group_then_terminates(monkeypatch):
    child = FakeChild()
    _track(monkeypatch, child)
    monkeypatch.delattr(proc.os, "killpg", raising=False)
    monkeypatch.setattr(proc.signal, "CTRL_BREAK_EVENT", 1, raising=False)
    proc.kill_all()
    assert child.calls == [("signal", 1), ("kill",)]


def test_windows_child_already_gone_is_not_an_error(monkeypatch):
    class Gone(FakeChild):
        def kill(self) -> None:
            raise OSError("the handle is invalid")

    child = Gone()
    _track(monkeypatch, child)
    monkeypatch.delattr(proc.os, "killpg", raising=False)
    monkeypatch.delattr(proc.signal, "CTRL_BREAK_EVENT", raising=False)
    proc.kill_all()  # no exception
    assert child.calls == []


def test_spawn_on_windows_asks_for_a_new_process_group(monkeypatch):
    seen = {}

    def fake_popen(argv, **kwargs):
        seen.update(kwargs)
        return FakeChild()

    monkeypatch.setattr(proc.os, "name", "nt")
    monkeypatch.setattr(proc, "popen", fake_popen)
    monkeypatch.setattr(proc, "_live", {})
    child = proc.spawn(["x"])
    assert seen["env"][proc.proctree.TAG_VAR] == proc._live[child]  # its descendants carry the tag
    assert "start_new_session" not in seen
    assert seen["creationflags"] & 0x200
    assert child in proc._live


def test_nothing_starts_once_kill_all_has_run(monkeypatch):
    """A build thread that waited (for a build slot) while an interrupt's kill_all ran must not start its build
    then: kill_all never sees it, and the tool waited 20 minutes for that nvcc before exiting (seen with
    torchsort, 4 Pythons, SIGTERM during the lead's wheel)."""
    started = []
    monkeypatch.setattr(proc, "popen", lambda argv, **kw: started.append(argv) or FakeChild())
    monkeypatch.setattr(proc, "_live", {})
    monkeypatch.setattr(proc, "_stopping", proc.threading.Event())
    monkeypatch.setattr(proc.proctree, "available", lambda: False)
    proc.kill_all()
    with pytest.raises(BuildError, match="uv not started: the command is stopping"):
        proc.spawn(["uv", "build"])
    assert started == [] and proc._live == {}


def test_a_child_that_starts_while_kill_all_runs_is_killed_at_once(monkeypatch):
    child = FakeChild()
    stopping = proc.threading.Event()

    def popen(argv, **kw):
        stopping.set()  # kill_all, in another thread, between spawn's check and its registration
        return child

    monkeypatch.setattr(proc, "popen", popen)
    monkeypatch.setattr(proc, "_live", {})
    monkeypatch.setattr(proc, "_stopping", stopping)
    monkeypatch.setattr(proc.proctree, "available", lambda: False)
    killed = []
    monkeypatch.setattr(proc, "kill_group", killed.append)
    with pytest.raises(BuildError, match="stopped as it started"):
        proc.spawn(["nvcc"])
    assert killed == [child] and proc._live == {}
