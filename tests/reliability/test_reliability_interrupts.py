"""SIGINT / SIGTERM at random points of version bump, publish and build.

Each run: exit 130 with one `error:` line (or 0 when the command finished first);
afterwards the files are either untouched or complete — never half-written — and
a re-run succeeds. Delays are drawn per seed over the command's measured run time.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests import factories
from tests.helpers import ROOT, run_cli
from tests.reliability import killpoints
from tests.reliability.conftest import FAST, local_wheels, sha256s

SIGNALS = (signal.SIGINT, signal.SIGTERM)
VERSION_SEEDS = range(8)
PUBLISH_SEEDS = range(6)
BUILD_SEEDS = range(3)


def _cli(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    import os

    full = {
        **os.environ,
        "COLUMNS": "200",
        "TWINE_NON_INTERACTIVE": "1",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        **(env or {}),
    }
    full.pop("KESTREL_RELEASE_DEBUG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", *args],
        cwd=ROOT,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _timed(args: list[str], env: dict[str, str] | None = None) -> float:
    start = time.monotonic()
    proc = _cli(args, env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    return time.monotonic() - start


_STARTUP = [0.0]


def _startup() -> float:
    """Start-up time of the CLI; delays are drawn over the whole run and `_interrupt` waits this part out."""
    _STARTUP[0] = _timed(["--version"])
    return _STARTUP[0]


def _interrupt(args: list[str], delay: float, signum: int, env: dict[str, str] | None = None):
    proc = _cli(args, env)
    # Deterministic on a busy machine: the delay counts from the moment the tool's handlers are in
    # place (it catches SIGTERM), never from process start, which may still be importing.
    killpoints.wait_ready(proc)
    time.sleep(max(0.0, delay - _STARTUP[0]))
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    if proc.returncode == 130:
        assert [line for line in err.splitlines() if line.startswith("error:")] != [], err
    elif proc.returncode == -signum:
        # The signal landed after main() returned (interpreter shutdown): the work is done and
        # the caller must find the complete new state; say so by returning "finished".
        assert "error:" not in err, err
        return 0
    else:
        assert proc.returncode == 0, (proc.returncode, out + err)
    return proc.returncode


def _draws(seed: int, low: float, high: float):
    rng = random.Random(seed)
    return rng.uniform(low, max(high, low + 0.05)), rng.choice(SIGNALS)


# --- version bump -------------------------------------------------------------------------------


def _version_state(project: Path) -> tuple[str, str]:
    return (project / "pyproject.toml").read_text(), (project / "src/mini_ext/__init__.py").read_text()


@pytest.fixture(scope="module")
def version_window(tmp_path_factory) -> tuple[float, float]:
    project = factories.make_c_ext_project(tmp_path_factory.mktemp("measure") / "p")
    return _startup(), _timed(["version", "bump", "patch", "--project", str(project)])


@pytest.mark.parametrize("seed", VERSION_SEEDS)
def test_version_bump_interrupted_is_all_or_nothing(tmp_path: Path, version_window, seed: int) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    old = _version_state(project)
    delay, signum = _draws(seed, *version_window)
    code = _interrupt(["version", "bump", "patch", "--project", str(project)], delay, signum)
    now = _version_state(project)
    assert ('version = "0.1.1"' in now[0]) == ('"0.1.1"' in now[1]), now  # both files moved, or neither
    if code == 0:
        assert '"0.1.1"' in now[1]
    elif '"0.1.1"' not in now[1]:
        assert now == old  # interrupted before writing: byte-for-byte untouched
    assert not list(project.rglob(".*.tmp"))  # no temp files left behind
    rerun = run_cli(["version", "set", "0.1.1", "--project", str(project), "--force"])
    assert rerun.code == 0, rerun.output
    assert all('"0.1.1"' in text for text in _version_state(project))


def test_interrupt_between_version_files_restores_the_first(tmp_path: Path, monkeypatch) -> None:
    from kestrel_release.config_loader import load as config
    from kestrel_release.files import fsutil
    from kestrel_release.stages import version

    project = factories.make_c_ext_project(tmp_path / "p")
    old = _version_state(project)
    real, calls = fsutil.atomic_write_text, []

    def write_then_interrupt(path, text, mode=None):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C lands between the first and the second file
        real(path, text, mode)

    monkeypatch.setattr(fsutil, "atomic_write_text", write_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        version.change(config.load(project, env={}), "bump", "patch")
    assert _version_state(project) == old


# --- publish ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", PUBLISH_SEEDS)
def test_publish_interrupted_leaves_only_whole_files_and_a_rerun_completes(
    dist_project: Path, tmp_path: Path, seed: int
) -> None:
    with PypiSandbox(directory=tmp_path / "index") as box:
        env = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, **FAST}
        args = [
            "publish",
            "--project",
            str(dist_project),
            "--target",
            "sandbox",
            "--repository-url",
            box.upload_url,
            "--yes",
        ]
        if seed == 0:  # measure once per module run; the window is the whole publish
            pytest.publish_window = (_startup(), _timed(args, env))  # type: ignore[attr-defined]
            for f in box.directory.iterdir():
                f.unlink()
        low, high = getattr(pytest, "publish_window", (0.4, 3.0))
        delay, signum = _draws(seed, low, high)
        _interrupt(args, delay, signum, env)
        on_index = sha256s(p for p in box.directory.iterdir() if p.is_file() and not p.name.startswith("."))
        local = local_wheels(dist_project)
        assert all(local.get(n) == d for n, d in on_index.items()), (on_index, local)  # whole, intended files
        rerun = run_cli(args, env=env, timeout=180)
        assert rerun.code == 0, rerun.output
        assert sha256s(p for p in box.directory.iterdir() if p.is_file()) == local


# --- build --------------------------------------------------------------------------------------


def _consistent_output(out: Path) -> dict[str, str]:
    """A complete build output: SHA256SUMS and the manifest name exactly the wheels present."""
    import json

    wheels = sha256s(sorted(out.glob("*.whl")))
    sums = dict(reversed(line.split("  ")) for line in (out / "SHA256SUMS").read_text().splitlines())
    listed = {w["filename"]: w["sha256"] for w in json.loads((out / "release-manifest.json").read_text())["wheels"]}
    assert wheels and wheels == sums == listed, (wheels, sums, listed)
    return wheels


@pytest.mark.slow
@pytest.mark.parametrize("seed", BUILD_SEEDS)
def test_build_interrupted_leaves_the_output_untouched_or_complete(tmp_path: Path, seed: int) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    env = {"SOURCE_DATE_EPOCH": "1700000000"}
    args = ["build", "--project", str(project), "--no-gpu-check"]
    start = time.monotonic()
    first = run_cli(args, env=env, timeout=300)
    assert first.code == 0, first.output
    duration = time.monotonic() - start
    out = project / "dist-all"
    before = _consistent_output(out)
    (project / "src" / "c.c").write_text(factories.C_EXT_SOURCE + "/* changed */\n")  # the next build differs
    delay, signum = _draws(seed, _startup(), duration)
    _interrupt(args, delay, signum, env)
    after = _consistent_output(out)  # never a mix: the old set or the new set, each complete
    assert after == before or set(after) == set(before)
    assert not [p.name for p in project.iterdir() if p.name.startswith(".kestrel-staging-")]
    assert not [p.name for p in project.iterdir() if ".old-" in p.name]
    rerun = run_cli(args, env=env, timeout=300)
    assert rerun.code == 0, rerun.output
    _consistent_output(out)


# --- a signal while the CLI is still importing ------------------------------------------------------


@pytest.mark.parametrize("module", ["typer", "kestrel_release.cli", "tomlkit"])
@pytest.mark.parametrize("signum", SIGNALS)
def test_signal_during_imports_is_one_line_not_a_traceback(tmp_path: Path, module: str, signum: int) -> None:
    """Before: a Ctrl-C here printed a raw traceback, a SIGTERM killed the tool without a word."""
    project = factories.make_c_ext_project(tmp_path / "p")
    old = _version_state(project)
    code, err = killpoints.signalled_during_import(
        ["version", "bump", "patch", "--project", str(project)], module, signum
    )
    assert "Traceback" not in err, err
    assert code == 130, (code, err)
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err
    assert _version_state(project) == old  # tomlkit is imported before the first write


# --- a Ctrl-C wherever it lands -------------------------------------------------------------------

# A KeyboardInterrupt raised where a signal can land but a timed signal rarely does: inside an import of the
# CLI, and between the installs of the two handlers (Python's own SIGINT handler still in place).
_LANDS = {
    "during-import": """
import sys
class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == "kestrel_release.cli":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Finder())
""",
    "between-handlers": """
import signal
_real, _calls = signal.signal, []
def _once(signum, handler):
    _calls.append(signum)
    if len(_calls) == 2:
        raise KeyboardInterrupt
    return _real(signum, handler)
signal.signal = _once
""",
}


@pytest.mark.parametrize("where", sorted(_LANDS))
def test_a_ctrl_c_during_start_up_is_one_line_and_exit_130(tmp_path: Path, where: str) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    code = (
        _LANDS[where]
        + "\nimport sys\nfrom kestrel_release.__main__ import main\nsys.argv[0] = 'kestrel-release'\nmain()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "version", "bump", "patch", "--project", str(project)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (130, "error: interrupted; nothing was left half-written\n")
    assert 'version = "0.1.0"' in (project / "pyproject.toml").read_text()
