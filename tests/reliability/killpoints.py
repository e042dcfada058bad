"""Run the CLI as a user would, and kill it: at a seeded file operation, or once it is ready.

`run_killed_at(n, ...)` starts `python -m kestrel_release` through a tiny wrapper that counts the
tool's own filesystem mutations (create, mkdir, rename/replace, unlink, rmdir) and SIGKILLs the
process just before the n-th: every seed lands between two real steps, deterministically, on a
busy machine too. `count_ops` runs it to the end and returns how many there were. With
KESTREL_TEST_COUNT_UNDER=<dir> in the environment only operations on paths under <dir> count.

`signalled_during_import` sends SIGINT/SIGTERM while a given module is being imported.

`wait_ready(proc)` waits until the tool has installed its signal handlers (SIGTERM appears in
/proc/PID/status SigCgt), so an interrupt test never races interpreter start-up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import ROOT

_WRAPPER = r"""
import os, runpy, signal, sys, threading
kill_at = int(os.environ.pop("KESTREL_TEST_KILL_AT_OP", "0"))
count_file = os.environ.pop("KESTREL_TEST_OP_COUNT_FILE", "")
lock, count = threading.Lock(), [0]
# Only operations on paths under this prefix count (when set): threads of the tool that write elsewhere
# (a rehearsal's in-process stand-ins, caches) then cannot move a kill point between runs.
under = os.environ.pop("KESTREL_TEST_COUNT_UNDER", "")

def _is_under(args):
    if not under:
        return True
    return any(os.path.abspath(os.fsdecode(a)).startswith(under) for a in args[:2]
               if isinstance(a, (str, bytes, os.PathLike)))

def hit():
    with lock:
        count[0] += 1
        if count[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

def counted(real):
    def op(*args, **kwargs):
        if _is_under(args):
            hit()
        return real(*args, **kwargs)
    return op

for name in ("replace", "rename", "unlink", "remove", "rmdir", "mkdir"):
    setattr(os, name, counted(getattr(os, name)))
real_open = os.open
def os_open(path, flags, *args, **kwargs):
    if flags & os.O_CREAT and _is_under((path,)):
        hit()
    return real_open(path, flags, *args, **kwargs)
os.open = os_open
if count_file:
    import atexit
    atexit.register(lambda: open(count_file, "w").write(str(count[0])))
on_import = os.environ.pop("KESTREL_TEST_SIGNAL_ON_IMPORT", "")
if on_import:  # "module:signum": the signal lands while the CLI imports that module
    import builtins
    module, _, signum = on_import.partition(":")
    real_import, fired = builtins.__import__, []
    def signalling_import(name, *args, **kwargs):
        if name == module and not fired:
            fired.append(1)
            os.kill(os.getpid(), int(signum))
        return real_import(name, *args, **kwargs)
    builtins.__import__ = signalling_import
sys.argv = ["kestrel-release", *sys.argv[1:]]
runpy.run_module("kestrel_release", run_name="__main__", alter_sys=True)
"""


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    full = {
        **os.environ,
        "COLUMNS": "200",
        "TWINE_NON_INTERACTIVE": "1",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        **(extra or {}),
    }
    full.pop("KESTREL_RELEASE_DEBUG", None)
    return full


def start(
    args: list[str], extra_env: dict[str, str] | None = None, kill_at: int = 0, count_file: Path | None = None
) -> subprocess.Popen:
    full = env(extra_env)
    if kill_at:
        full["KESTREL_TEST_KILL_AT_OP"] = str(kill_at)
    if count_file is not None:
        full["KESTREL_TEST_OP_COUNT_FILE"] = str(count_file)
    return subprocess.Popen(
        [sys.executable, "-c", _WRAPPER, *args],
        cwd=ROOT,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def signalled_during_import(args: list[str], module: str, signum: int) -> tuple[int, str]:
    """Run `args` with `signum` sent while the CLI imports `module`: (exit status, stderr)."""
    proc = start(args, {"KESTREL_TEST_SIGNAL_ON_IMPORT": f"{module}:{int(signum)}"})
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def count_ops(args: list[str], tmp: Path, extra_env: dict[str, str] | None = None) -> int:
    """How many filesystem mutations a complete run of `args` makes (it must succeed)."""
    counter = tmp / "op-count"
    proc = start(args, extra_env, count_file=counter)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out + err
    return int(counter.read_text())


def run_killed_at(n: int, args: list[str], extra_env: dict[str, str] | None = None) -> int:
    """Run `args`, SIGKILLed before its n-th filesystem mutation; returns the exit status."""
    proc = start(args, extra_env, kill_at=n)
    out, err = proc.communicate(timeout=600)
    assert "Traceback" not in err, err
    assert proc.returncode in (0, -signal.SIGKILL), (proc.returncode, out + err)
    return proc.returncode


def wait_ready(proc: subprocess.Popen, timeout: float = 60) -> None:
    """Until the tool catches SIGTERM (its handlers are in place), or it has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            return
        caught = next((line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0")
        if int(caught, 16) & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.005)


def processes_mentioning(needle: str) -> list[str]:
    """Command lines of live processes (other than this one) whose argv or cwd mentions `needle`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
            state = next(
                (line for line in (entry / "status").read_text().splitlines() if line.startswith("State:")), ""
            )
        except OSError:
            continue
        if "zombie" in state:
            continue
        if needle in cmdline or cwd.startswith(needle):
            found.append(cmdline.strip() or f"[pid {entry.name}]")
    return found


def wait_gone(needle: str, timeout: float = 20) -> list[str]:
    """Wait for every process mentioning `needle` to end; returns the survivors (empty: all gone)."""
    deadline = time.monotonic() + timeout
    while True:
        left = processes_mentioning(needle)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)
