"""benchmarks/run.py as a user runs it: bad arguments, missing stages, the results file."""

from __future__ import annotations

import subprocess
import sys

from benchmarks import run as bench_run
from benchmarks.common import BenchFailed, Figure, NotAvailable, Section
from tests.helpers import ROOT, CliResult, assert_one_line_error


def _run(*args: str) -> CliResult:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def test_unknown_benchmark_is_one_error_line(tmp_path):
    result = _run("--only", "startup,bogus", "--out", str(tmp_path / "R.md"))
    assert_one_line_error(result, 2, "unknown benchmark bogus")
    assert not (tmp_path / "R.md").exists()


def test_wheels_dir_without_wheels_is_refused(tmp_path):
    assert_one_line_error(_run("--wheels", str(tmp_path), "--only", "publish"), 2, "no *.whl in")


def test_default_results_file_depends_on_the_run_kind():
    assert bench_run.parse_args([]).out.name == "RESULTS.md"
    assert bench_run.parse_args(["--quick"]).out.name == "RESULTS-quick.md"
    assert bench_run.parse_args(["--only", "startup"]).out.name == "RESULTS-quick.md"


def test_missing_stage_is_recorded_and_exit_is_1(tmp_path, monkeypatch, capsys):
    def fake(name, args, work, wheels):
        if name == "verify":
            raise NotAvailable("kestrel_release.stages.verify does not exist yet")
        if name == "publish":
            raise BenchFailed("twine upload exited 1: error: 403")
        return Section("Start-up", figures=[Figure("kestrel-release --help", [0.1])]), wheels

    monkeypatch.setattr(bench_run, "_one", fake)
    out = tmp_path / "R.md"
    assert bench_run.main(["--only", "verify,publish,startup", "--out", str(out)]) == 1
    text = out.read_text()
    assert "Not available: kestrel_release.stages.verify does not exist yet" in text
    assert "Not available: failed: twine upload exited 1: error: 403" in text
    assert "| kestrel-release --help | 100 ms |" in text
    assert "not available: kestrel_release.stages.verify" in capsys.readouterr().out


def test_interrupt_writes_nothing(tmp_path, monkeypatch):
    def fake(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_run, "_one", fake)
    out = tmp_path / "R.md"
    assert bench_run.main(["--only", "startup", "--out", str(out)]) == 130
    assert not out.exists()


def test_wait_quiet_reports_how_the_wait_went(monkeypatch):
    loads = iter(["2.50 1.0 1.0", "0.40 1.0 1.0"])
    monkeypatch.setattr(bench_run.report, "load", lambda: next(loads))
    monkeypatch.setattr(bench_run.time, "sleep", lambda _: None)
    assert bench_run.wait_quiet(5).startswith("quiet (1-min load 0.40)")
    monkeypatch.setattr(bench_run.report, "load", lambda: "3.00 1.0 1.0")
    assert bench_run.wait_quiet(0.0001, poll=0).startswith("never quiet: 1-min load still 3.00")
    assert bench_run.wait_quiet(0) == "not waited for"
