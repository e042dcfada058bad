"""A few-KB wheel whose fat binary claims gigabytes of zstd zeros: verify says `cuda-format` and exits 5, in
bounded time and memory (before: 1:55 and ~1 GB, then exit 0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from tests.factories import (
    FATBIN_DEBUG,
    FATBIN_ELF,
    FATBIN_PTX,
    FATBIN_ZSTD,
    fatbin_bytes,
    fatbin_entry,
    make_wheel,
    zstd_zeros,
)
from tests.helpers import CliResult, assert_one_line_error

MEMBER = "kestrel_kernels/precompiled/attn.fatbin"
HANG_GUARD = 120  # seconds: only a guard; the fixed reader answers in about one


def _hostile_wheel(tmp_path):
    flags = 0x11 | FATBIN_ZSTD | FATBIN_DEBUG
    two_gib = 1 << 31
    entries = [
        fatbin_entry(
            kind, 90, zstd_zeros(two_gib), flags=flags, uncompressed_size=two_gib, identifier=b"/home/alice/attn.cu"
        )
        for kind in (FATBIN_PTX, FATBIN_PTX, FATBIN_ELF)
    ]
    wheel = make_wheel(tmp_path / "dist", {"kestrel_kernels/__init__.py": b"", MEMBER: fatbin_bytes(entries)})
    assert wheel.stat().st_size < 8192  # a few KB claiming 6 GiB
    return wheel


def _verify_measured(args: list[str], cwd) -> tuple[int, str, str, int]:
    """Run the CLI; (exit code, stdout, stderr, peak RSS in KiB of that one process, from wait4)."""
    env = dict(os.environ, COLUMNS="200")
    env.pop("KESTREL_RELEASE_DEBUG", None)
    with open(cwd / "out", "w+") as out, open(cwd / "err", "w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kestrel_release", *args], cwd=cwd, env=env, stdout=out, stderr=err
        )
        guard = threading.Timer(HANG_GUARD, proc.kill)
        guard.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            guard.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read(), err.read(), usage.ru_maxrss


@pytest.mark.parametrize("mode", ["standalone", "project"])
def test_lying_fat_binary_is_cuda_format_exit_5_in_bounded_time_and_memory(tmp_path, mode):
    wheel = _hostile_wheel(tmp_path)
    args = ["verify", "--json", str(wheel)]
    if mode == "project":
        (tmp_path / "pyproject.toml").write_text(
            '[project]\nname = "kestrel-kernels"\nversion = "0.1.0"\n\n[tool.kestrel-release]\npython = ["3.11"]\n'
        )
        args += ["--project", str(tmp_path)]
    code, stdout, stderr, peak_kib = _verify_measured(args, tmp_path)
    assert_one_line_error(CliResult(code, stdout, stderr), 5, "verify found 1 error(s) in 1 of 1 wheel(s)")
    errors = [f for w in json.loads(stdout)["wheels"] for f in w["findings"] if f["severity"] == "error"]
    assert [(f["rule"], f["member"]) for f in errors] == [("cuda-format", MEMBER)]
    assert "declares 2147483648 bytes uncompressed" in errors[0]["message"]
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib // 1024} MiB"
