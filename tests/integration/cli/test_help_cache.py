"""The help cache: `--help`/`--version` answered before are printed without importing the CLI, byte for
byte what the normal path prints, and only while nothing that shaped the text has changed."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

# Runs __main__ as the console script does, then lists (on stderr) what the run imported.
_PROBE = (
    "import sys\n"
    "from kestrel_release.__main__ import main\n"
    "try:\n"
    "    main()\n"
    "finally:\n"
    "    heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')\n"
    "                   or m in ('kestrel_release.cli', 'kestrel_release.entry'))\n"
    "    sys.stderr.write('MODULES ' + ' '.join(heavy) + '\\n')\n"
)


def _run(args: list[str], cache: Path, env: dict[str, str] | None = None, cwd: Path = ROOT, tty: bool = False):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("KESTREL_RELEASE_", "FORCE_COLOR", "NO_COLOR"))}
    full.update({"KESTREL_RELEASE_CACHE_DIR": str(cache), "COLUMNS": "80", "TERM": "dumb"})
    full.pop("PYTHONDONTWRITEBYTECODE", None)
    full.update(env or {})
    argv = [sys.executable, "-c", _PROBE, *args]
    if not tty:
        proc = subprocess.run(argv, cwd=cwd, env=full, capture_output=True, timeout=300)
        out, err, code = proc.stdout, proc.stderr, proc.returncode
    else:  # stdout is a terminal: Click and Rich look at isatty
        master, slave = pty.openpty()
        proc2 = subprocess.Popen(argv, cwd=cwd, env=full, stdout=slave, stderr=subprocess.PIPE)
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(master)
        err = proc2.stderr.read() if proc2.stderr else b""
        code = proc2.wait(timeout=300)
        out = b"".join(chunks)
    lines = err.decode().splitlines()
    modules = next(line for line in lines if line.startswith("MODULES")).split()[1:]
    rest = [line for line in lines if not line.startswith("MODULES")]
    return code, out, rest, modules


CASES = [
    (["--help"], {}, False),
    (["verify", "--help"], {"COLUMNS": "60"}, False),
    (["verify", "--help"], {"COLUMNS": "132"}, False),
    (["sandbox", "pypi", "--help"], {"COLUMNS": "200", "FORCE_COLOR": "1", "TERM": "xterm-256color"}, False),
    (["build", "--help"], {"NO_COLOR": "1", "COLUMNS": "100"}, False),
    (["--version"], {}, False),
    (["--help"], {"COLUMNS": "90", "TERM": "xterm-256color"}, True),
    (["publish", "--help"], {"COLUMNS": "70", "FORCE_COLOR": "1", "TERM": "xterm"}, True),
]


def test_cached_help_is_byte_identical_and_imports_no_cli(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    for i, (args, env, tty) in enumerate(CASES):
        # The reference: a cache that has never seen anything (the normal path).
        ref_code, ref_out, ref_err, ref_modules = _run(args, tmp_path / f"fresh{i}", env, tty=tty)
        assert ref_code == 0 and ref_err == [] and ref_out
        assert "kestrel_release.cli" in ref_modules  # the normal path did render it
        # The shared cache saw other widths and terminals before: first this request fills it...
        code, out, err, _ = _run(args, shared, env, tty=tty)
        assert (code, out, err) == (0, ref_out, [])
        # ...then answers it without Typer, Click, Rich or the CLI's modules.
        code, out, err, modules = _run(args, shared, env, tty=tty)
        assert (code, out, err) == (0, ref_out, []), (args, env, tty)
        assert modules == [], (args, env, tty)
    # Every width and terminal above is its own answer: replaying them again in the shared cache
    # (where a later request replaced the entry of an earlier one) still matches the normal path.
    widths = {c: _run(["verify", "--help"], shared, {"COLUMNS": c})[1] for c in ("60", "132")}
    assert widths["60"] != widths["132"]
    assert widths["60"] == _run(["verify", "--help"], tmp_path / "fresh-60", {"COLUMNS": "60"})[1]


def test_a_changed_source_file_is_not_answered_from_the_cache(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "kestrel_release", copy / "kestrel_release", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    env = {"PYTHONPATH": str(copy)}
    _run(["verify", "--help"], cache, env, cwd=copy)
    code, out, _, modules = _run(["verify", "--help"], cache, env, cwd=copy)
    assert code == 0 and modules == [] and b"Inspect wheels" in out
    command = copy / "kestrel_release" / "commands" / "verify.py"  # the module that holds its help
    text = command.read_text(encoding="utf-8")
    assert '"""Inspect wheels' in text
    command.write_text(text.replace('"""Inspect wheels', '"""Examine wheels'), encoding="utf-8")
    code, out, _, modules = _run(["verify", "--help"], cache, env, cwd=copy)
    assert code == 0 and b"Examine wheels" in out and b"Inspect wheels" not in out
    assert "kestrel_release.cli" in modules
    # The new text is what the cache holds now.
    code, out2, _, modules = _run(["verify", "--help"], cache, env, cwd=copy)
    assert (code, out2, modules) == (0, out, [])


def test_failures_and_unusable_cache_dirs_are_never_cached(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for _ in range(2):
        code, out, err, modules = _run(["bulid", "--help"], cache)
        assert code == 2 and "kestrel_release.cli" in modules
        assert any("No such command" in line for line in err)
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    for _ in range(2):
        code, out, err, modules = _run(["--help"], blocked / "cache")
        assert code == 0 and err == [] and b"Commands" in out and "kestrel_release.cli" in modules


@pytest.mark.parametrize("garbage", [b"", b"\x00\x01garbage", b"\xe9" * 100])
def test_a_damaged_entry_takes_the_normal_path(tmp_path: Path, garbage: bytes) -> None:
    cache = tmp_path / "cache"
    ref = _run(["--help"], cache)[1]
    for entry in (cache / "help").iterdir():
        entry.write_bytes(garbage)
    code, out, err, modules = _run(["--help"], cache)
    assert (code, out, err) == (0, ref, []) and "kestrel_release.cli" in modules


# Block-buffered (a clean login shell) the replayed text waits in the buffer and the failure shows at the
# flush, or at interpreter exit; unbuffered (PYTHONUNBUFFERED=1, set by many CI images) at the write.
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_unwritable_or_closed_stdout_behaves_as_the_normal_path(tmp_path: Path, unbuffered: bool) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KESTREL_RELEASE_") and k != "PYTHONUNBUFFERED"}
    env.update({"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "80"})
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    argv = [sys.executable, "-m", "kestrel_release", "--help"]
    cold = {**env, "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cold")}  # no entry: the normal path itself
    subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, check=True, timeout=300)  # fills the cache
    for run_env in (env, cold):  # replayed, or rendered, into a full disk: one line, exit 2
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                argv, env=run_env, cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300
            )
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("error: cannot write"), done.stderr
        assert "No space left on device" in done.stderr
    closed = subprocess.run(
        argv,
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.close(1),
    )
    assert (closed.returncode, closed.stderr) == (0, "")
