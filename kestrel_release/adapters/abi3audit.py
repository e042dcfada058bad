"""abi3audit: does an abi3 wheel really use only the limited C API it claims?

Run as cibuildwheel runs it (`abi3audit --strict --report WHEEL`), in a child process
through proc.py (_abi3audit_child: the same CLI with a fast DLL import reader); the JSON report
is parsed into one line per problem.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from kestrel_release.process import proc


def command() -> list[str] | None:
    """How abi3audit runs here (None: not installed); verify's verdict cache keys on it too."""
    from importlib.util import find_spec

    if find_spec("abi3audit") is not None and find_spec("pefile") is not None:  # installed with the tool
        return [sys.executable, "-m", "kestrel_release.adapters._abi3audit_child"]  # its CLI, DLLs read fast
    beside = Path(sys.executable).parent / "abi3audit"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("abi3audit")
    return [found] if found else None


def audit(wheel: Path) -> tuple[list[str], str | None]:
    """(problems, why-not-run): each problem names the shared object and the offending symbols."""
    argv = command()
    if argv is None:
        return [], "abi3audit is not installed (reinstall kestrel-release)"
    result = proc.run([*argv, "--strict", "--report", str(wheel)], check=False, timeout=300)
    start = result.output.find('{"specs"')
    try:
        report = json.loads(result.output[start:].splitlines()[0]) if start >= 0 else None
    except (ValueError, IndexError):
        report = None
    if report is None:
        return [], f"abi3audit gave no report (exit {result.returncode}): {result.tail(1)}"
    problems = []
    for spec in report.get("specs", {}).values():
        for so in spec.get("wheel", []) or []:
            res = so.get("result", {}) or {}
            name = so.get("name", "?")
            bad = res.get("non_abi3_symbols") or []
            if bad:
                problems.append(f"{name} uses symbols outside the limited API: {', '.join(sorted(bad)[:8])}")
            if res.get("is_abi3_baseline_compatible") is False:
                problems.append(
                    f"{name} needs the limited API of Python {res.get('computed')}, newer than the "
                    f"wheel's tag claims ({res.get('baseline')})"
                )
            if res.get("is_abi3") is False and not bad:
                problems.append(f"{name} is not an abi3 object (no .abi3.so build)")
    if result.returncode != 0 and not problems:
        problems.append(f"abi3audit --strict failed (exit {result.returncode})")
    return problems, None
