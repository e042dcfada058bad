"""run_context: two invocations in one process, one after the other or in two threads, never see each other's
policy (--json, --allow-insecure-http) or bookkeeping (the failure reported, the held --json document)."""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

import pytest

from kestrel_release import entry
from kestrel_release.adapters import http_policy
from kestrel_release.errors import EXIT_USAGE, UsageError


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The console script's entry, as a second run in the same process sees it (its signal handlers left out:
    they would outlive the test)."""
    monkeypatch.setattr(sys, "argv", ["kestrel-release", *args])
    monkeypatch.setattr(signal, "signal", lambda *_: None)
    with pytest.raises(SystemExit) as ended:
        entry.main()
    printed = capsys.readouterr()
    return int(ended.value.code or 0), printed.out, printed.err


def test_a_json_run_leaves_nothing_to_the_next_run(monkeypatch, capsys, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\n[tool.kestrel-release]\nnosuch = 1\n'
    )
    code, out, err = _main(monkeypatch, capsys, "verify", "--json", "--project", str(tmp_path))
    assert code == EXIT_USAGE and json.loads(out)["error"]["kind"] == "config"  # after --json was configured

    code, out, err = _main(monkeypatch, capsys, "nosuch", "--json")  # its own failure document
    assert code == EXIT_USAGE and json.loads(out)["error"]["message"] == "No such command 'nosuch'."

    code, out, err = _main(monkeypatch, capsys, "nosuch")  # no --json: the error line only, nothing on stdout
    assert (code, out) == (EXIT_USAGE, "")
    assert err.splitlines() == ["error: No such command 'nosuch'. — see --help"]


def test_two_threads_running_at_once_keep_their_own_http_policy():
    """One invocation allows insecure http, the other does not; each checks its URL while the other's flag is set."""
    both_set = threading.Barrier(2, timeout=30)
    seen: dict[bool, str] = {}

    def one(allow: bool) -> None:
        from kestrel_release import run_context

        with run_context.using(run_context.RunContext()):
            http_policy.allow_insecure(allow)
            both_set.wait()
            try:
                http_policy.require_secure("http://index.example/upload", "the upload URL")
                seen[allow] = "allowed"
            except UsageError:
                seen[allow] = "refused"

    threads = [threading.Thread(target=one, args=(allow,)) for allow in (True, False)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {True: "allowed", False: "refused"}


def test_worker_pools_run_in_their_callers_context():
    from kestrel_release import run_context
    from kestrel_release.process import pools
    from kestrel_release.ui import console

    with run_context.using(run_context.RunContext(verbose=True)), pools.threads(2) as pool:
        assert list(pool.map(lambda _: console.verbose(), range(2))) == [True, True]
    assert console.verbose() is False


def test_a_ctrl_c_wrapped_by_python_is_an_interruption_not_a_bug() -> None:
    """Python wraps an exception raised while a class is made ("Error calling __set_name__"): a Ctrl-C that
    lands in a lazy import of a dataclass reaches the entry as a RuntimeError caused by KeyboardInterrupt."""
    from kestrel_release import entry

    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as inner:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance 'ok'") from inner
    except RuntimeError as wrapped:
        assert entry._interrupted(wrapped)
    assert not entry._interrupted(RuntimeError("a bug"))
