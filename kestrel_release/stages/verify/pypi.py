"""PyPI's 2025-2026 upload rules as verify findings, the build's ZIP gate, and the 14-day rule.

The rules themselves live in artifacts/pypi_rules.py, shared with the strict sandbox,
so verify, build and the sandbox can never disagree on what PyPI refuses.
"""

from __future__ import annotations

import datetime as dt
import mmap
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.artifacts import pypi_rules
from kestrel_release.artifacts.errors import UNREADABLE_ZIP
from kestrel_release.errors import BuildError
from kestrel_release.stages.verify.finding import Finding

if TYPE_CHECKING:
    from kestrel_release.config.model import Config
    from kestrel_release.stages.verify.report import WheelReport

__all__ = ["check_built_wheel", "pypi_findings", "release_age_findings"]


def _violations(path: Path, only_zip: bool = False) -> list[pypi_rules.Violation]:
    import zipfile

    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if not only_zip:
            return pypi_rules.check_wheel(path.name, mm, fh)
        try:
            with zipfile.ZipFile(fh) as archive:
                infos = archive.infolist()
        except UNREADABLE_ZIP:
            return [pypi_rules.Violation("pypi-zip", "", pypi_rules.INVALID + "File is not a zipfile")]
        return pypi_rules.zip_violations(mm, infos)


def pypi_findings(path: Path) -> list[Finding]:
    """One error finding per PyPI rule the wheel at `path` breaks, quoting PyPI's refusal."""
    try:
        violations = _violations(path)
    except (OSError, ValueError):  # mmap of an empty file; the integrity rules already report it
        return []
    return [Finding(v.rule, "error", v.member, f"PyPI refuses it: {v.message}") for v in violations]


def check_built_wheel(path: Path) -> None:
    """BuildError (exit 4) when PyPI would refuse the repaired wheel's zip structure."""
    try:
        violations = _violations(path, only_zip=True)
    except (OSError, ValueError) as exc:
        raise BuildError(f"{path.name}: cannot read the repaired wheel ({exc})", "rebuild") from None
    if violations:
        v = violations[0]
        raise BuildError(
            f"{path.name}: PyPI would refuse this wheel ({v.rule}): {v.message}",
            "the repaired wheel was rewritten by a tool that streams or appends to zips: rebuild without it",
        )


def release_age_findings(filename: str, existing: dict[str, str], first_upload: dt.datetime | None) -> list[Finding]:
    """The 14-day rule for one wheel: `existing` maps filenames the index already has to their
    sha256; `first_upload` is the release's earliest upload time on the index (None: a new release).
    A file the index already has is an identical re-upload (a 200 on PyPI) and is never refused."""
    if filename in existing:
        return []
    violation = pypi_rules.release_age(first_upload)
    if violation is None:
        return []
    return [Finding(violation.rule, "error", "", f"PyPI refuses it: {violation.message} Publish a new version instead")]


def release_age_set(reports: list[WheelReport], cfg: Config, target: str) -> list[Finding]:
    """The 14-day rule for every release in `reports`, against `target`'s index (its JSON API).
    An index that cannot be read gives a warning: the rule is then unknown, not passed."""
    return release_age_check(reports, index_simple_url(cfg, target), cfg.publish.timeout)


def release_age_check(reports: list, url: str, timeout: float) -> list[Finding]:
    """The 14-day rule for wheels (WheelReports: name, version, filename) against the index at the
    simple URL `url`; publish's preflight calls it with the wheels it is about to upload. Each request
    has `timeout` (publish.timeout) for the whole answer."""
    from kestrel_release.adapters.pypi import json_api as pypi_json

    out: list[Finding] = []
    releases = sorted({(w.name, w.version) for w in reports if w.name and w.version})
    for name, version in releases:
        try:
            seen = pypi_json.read_release_files(url, name, version, timeout)
        except pypi_json.Unavailable as exc:
            out.append(
                Finding(
                    "pypi-release-age",
                    "warning",
                    "",
                    f"could not read the upload times of {name} {version} from {url} ({exc}): "
                    "the 14-day rule was not checked",
                )
            )
            continue
        for w in reports:
            if (w.name, w.version) == (name, version):
                out += [
                    Finding(f.rule, f.severity, w.filename, f.message)
                    for f in release_age_findings(w.filename, seen.files, seen.first_upload)
                ]
    return out


def index_simple_url(cfg: Config, target: str) -> str:
    """The simple URL of the index `target` as configured (or PyPI's/TestPyPI's own)."""
    from kestrel_release.adapters.pypi.client import simple_url_for

    t = cfg.targets[target]  # an index target's settings (config.load puts the built-in ones there too)
    return t.simple_url or simple_url_for(t.repository_url)


def standalone_config(cwd: Path | None = None) -> Config:
    """The configuration of verify outside any kernel project: no matrix, no required
    architectures, no forbid lists, PTX and debug info reported but allowed."""
    from kestrel_release.config.model import Config, VerifyConfig

    rules = VerifyConfig(required_sass=(), allow_ptx=True, allow_debug=True, forbid=(), allow=())
    return Config(project_dir=(cwd or Path.cwd()).resolve(), name="", version=None, python=(), verify=rules)


# Outside a project only these fail verify: the wheel's integrity and what PyPI refuses. Not file-size:
# PyPI raises the 100 MiB limit per project (cupy-cuda12x ships 140 MiB wheels), and no project says so here.
STANDALONE_ERRORS = frozenset(
    {
        "unsafe-path",
        "zip-bomb",
        "zip-format",
        "record-mismatch",
        "metadata",
        "cuda-format",
        "binary-platform",
        "secret",  # a credential in a wheel leaks whoever built it: never a matter of one project's policy
        "platform-tag",
        "local-version",
    }
)


def standalone_severity(findings: list[Finding]) -> list[Finding]:
    """Outside a project, integrity, PyPI's rules and secrets (credentials files, tokens, private keys with
    their body) fail verify; the rest (source and build-path heuristics, runtime policies) is reported as a
    warning: it is no project's policy here, and a third-party wheel may carry such text legitimately."""
    return [
        f
        if f.rule in STANDALONE_ERRORS or f.rule.startswith("pypi-") or f.severity != "error"
        else Finding(f.rule, "warning", f.member, f.message)
        for f in findings
    ]
