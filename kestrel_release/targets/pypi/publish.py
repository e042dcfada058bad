"""publish --target testpypi|pypi|NAME: upload the verified bytes exactly once, then prove they install.

Order matters: everything that can refuse (integrity, verify, the index's current
content, confirmation) runs before the first byte is sent, so a refused publish
leaves the index untouched; a re-run after an interruption uploads only what is
missing, because identical files already on the index are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kestrel_release.adapters.pypi import client as pypi
from kestrel_release.adapters.pypi import config as pypi_config
from kestrel_release.adapters.retry import RetryPolicy
from kestrel_release.config.model import Config
from kestrel_release.errors import PublishError
from kestrel_release.files import fsutil
from kestrel_release.records import serde
from kestrel_release.stages.publish.smoke import SmokeTestError, forget_rejected, smoke_test
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.stages.publish.snapshot import Snapshots
    from kestrel_release.stages.verify.report import VerifyReport, WheelReport

Creds = tuple[str, str] | None  # None: a dry run reads no credentials


class NeedsNewVersion(PublishError):
    """This version's files are on `target` with other bytes (or may no longer be added): only a new version
    gets past it, since an index never replaces a file (release's advice reads the class)."""

    def __init__(self, message: str, hint: str | None, target: str) -> None:
        super().__init__(message, hint)
        self.target = target


@dataclass
class PublishResult:
    target: str
    upload_url: str
    simple_url: str
    dry_run: bool = False
    version: str = ""
    uploaded: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    planned: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[dict[str, Any]] = field(default_factory=list)  # publish --python: wheels for other Pythons
    smoke: list[dict[str, Any]] = field(default_factory=list)
    url_source: str = ""  # which setting chose upload_url (--repository-url, TWINE_REPOSITORY_URL, .pypirc, ...)
    quota: dict[str, Any] = field(default_factory=dict)  # stages/publish/quota.py: project usage and file margins
    # True: the index accepted them (an upload did, or adapters/pypi_auth.check); None: not checked (why)
    credentials_checked: bool | None = None
    credentials_note: str = ""

    @property
    def ok(self) -> bool:
        return not self.failed and all(row.get("ok") for row in self.smoke)

    def to_json(self) -> dict[str, Any]:
        return {**serde.to_json(self), "ok": self.ok}


@fsutil.locked("publish")  # two publishes of one project never interleave
def run(
    cfg: Config,
    paths: list[Path],
    *,
    target: str,
    repository_url: str | None = None,
    simple_url: str | None = None,
    dry_run: bool = False,
    yes: bool = False,
    smoke_test: bool = False,
    token_env: str | None = None,
    credentials: tuple[str, str] | None = None,
    pypi_rules: bool = False,
    confirm: bool = False,
    builtin: Any = None,
) -> PublishResult:
    """Verify, compare with the index, confirm, upload what is missing; raise PublishError on failure.

    `pypi_rules`: the index is PyPI's (its 14-day rule; verify by its name); `confirm`: ask before the
    first upload unless `yes`; `builtin`: the index's built-in URLs (targets/pypi/ decides all three)."""
    from kestrel_release.stages.publish import snapshot

    index = pypi_config.resolve_index(target, cfg.targets, repository_url, simple_url, builtin=builtin)
    creds = None if dry_run else pypi_config.resolve_credentials(index, token_env=token_env, given=credentials)
    with snapshot.session() as snaps:  # what verify reads below is what every upload and retry sends
        report = snapshot.verified(cfg, snaps, paths, integrity=target, rules=target if pypi_rules else None)
        return _publish(cfg, index, creds, report, snaps, target, dry_run, yes, smoke_test, pypi_rules, confirm)


def _publish(
    cfg: Config,
    index: pypi.Index,
    creds: Creds,
    report: VerifyReport,
    snaps: Snapshots,
    target: str,
    dry_run: bool,
    yes: bool,
    smoke_test: bool,
    pypi_rules: bool,
    confirm: bool,
) -> PublishResult:
    policy = _policy(cfg)
    result = PublishResult(
        target,
        index.upload_url,
        index.simple_url,
        dry_run,
        version=(report.wheels[0].version or "") if report.wheels else "",
        url_source=index.source,
    )
    pages: dict[str, dict[str, dict[str, str]]] = {}  # project -> its simple page, read once per run
    todo = _plan(index, report.wheels, policy, creds, result, pages)
    if pypi_rules:
        _release_age(todo, index, target, policy.timeout)
    _show_plan(result, todo)
    if todo:  # before the first byte: a release over the project limit is refused here (exit 6)
        result.quota = _forecast(cfg, index, report.wheels, todo, policy, creds, pages)
    if not todo and not dry_run:  # nothing to send: still prove the credentials work (exit 6 if refused)
        assert creds is not None  # read for every run but a dry one
        _check_credentials(index, creds, policy, result)
    if dry_run or not todo:
        return _finish(cfg, index, result, policy, creds, smoke_test and not dry_run)
    count = len(todo)
    console.confirm(
        f"Upload {count} file(s) to pypi? Files can never be replaced",
        yes=yes or not confirm,
        refused=(
            f"publishing {count} file(s) to pypi needs confirmation and there is no terminal to ask on",
            "pass --yes to confirm non-interactively",
        ),
        cancelled=("publish to pypi cancelled; nothing was uploaded", None),
    )
    snaps.check_sources()  # the user's folder still holds what was verified, or nothing is sent
    assert creds is not None  # read for every run but a dry one
    _upload_all(cfg, index, creds, policy, todo, result)
    return _finish(cfg, index, result, policy, creds, smoke_test)


def _check_credentials(index: pypi.Index, creds: tuple[str, str], policy: RetryPolicy, result: PublishResult) -> None:
    from kestrel_release.adapters.pypi import auth as pypi_auth

    result.credentials_checked, result.credentials_note = pypi_auth.check(index, creds, min(policy.timeout, 30.0))
    if result.credentials_checked:
        console.ok(f"credentials for {index.name}: {result.credentials_note}")
    else:
        console.warn(f"credentials for {index.name} not checked: nothing to upload and {result.credentials_note}")


def _release_age(todo: list, index: pypi.Index, target: str, timeout: float) -> None:
    """PyPI refuses new files for a release created over 14 days ago, after the whole upload: ask first."""
    from kestrel_release.stages.verify import pypi as verify_pypi

    if not todo:
        return
    refused = [f for f in verify_pypi.release_age_check(todo, index.simple_url, timeout) if f.severity == "error"]
    if refused:
        raise NeedsNewVersion(
            f"{refused[0].member}: {refused[0].message.removeprefix('PyPI refuses it: ')}; nothing was uploaded",
            "bump the version (kestrel-release version bump ...) and rebuild",
            target,
        )


def _policy(cfg: Config) -> RetryPolicy:
    p = cfg.publish
    return RetryPolicy.from_config(p)


def _plan(
    index: pypi.Index,
    wheels: list[WheelReport],
    policy: RetryPolicy,
    creds: Creds,
    result: PublishResult,
    present: dict[str, dict],
) -> list[WheelReport]:
    """Split into skip (identical on the index) and upload; any conflict stops everything. `present`
    gets each project's simple page: one read per project and run, whatever the number of files."""
    todo = []
    for wheel in wheels:
        name = cast(str, wheel.name)  # verified: a wheel whose filename names no project fails verify
        if name not in present:
            present[name] = pypi.existing_files(index, name, policy, creds)
        there = present[name].get(wheel.filename)
        row = {"filename": wheel.filename, "sha256": wheel.sha256, "size": wheel.size}
        if there is None or (there["sha256"] != wheel.sha256 and _repaired(index, wheel, there, policy, creds)):
            todo.append(wheel)
            result.planned.append(row)
        elif there["sha256"] == wheel.sha256:
            result.skipped.append({**row, "url": there["url"], "reason": "identical file already on the index"})
        else:
            theirs = there["sha256"] or "(the index gives no sha256)"
            raise NeedsNewVersion(
                f"{wheel.filename} is already on {index.name} with other bytes: index sha256 "
                f"{theirs}, local {wheel.sha256}; nothing was uploaded",
                "a filename can never be reused: bump the version and rebuild",
                index.name,
            )
    return todo


def _repaired(index: pypi.Index, wheel: WheelReport, there: dict, policy: RetryPolicy, creds: Creds) -> bool:
    """A truncated copy of our own file (a cut upload on a local index): removed where the index allows."""
    from kestrel_release.adapters.pypi import damaged as pypi_damaged

    return pypi_damaged.repair(wheel.filename, wheel.path, there, index.upload_url, index.name, creds, policy.timeout)


def _show_plan(result: PublishResult, todo: list) -> None:
    if console.json_mode():
        return
    from rich.table import Table

    console.info(
        f"index {result.target}: upload URL {result.upload_url} (from {result.url_source or 'the target'}), "
        f"simple URL {result.simple_url}"
    )

    table = Table(title=f"publish plan: {result.target} ({result.upload_url})", title_justify="left")
    for column in ("action", "file", "size"):
        table.add_column(column)
    for w in todo:
        table.add_row("upload", w.filename, console.size(w.size))
    for row in result.skipped:
        table.add_row("skip (identical on index)", row["filename"], console.size(row["size"]))
    console.console.print(table)
    if result.dry_run:
        console.info("dry run: nothing uploaded")


def _forecast(
    cfg: Config,
    index: pypi.Index,
    wheels: list[WheelReport],
    todo: list[WheelReport],
    policy: RetryPolicy,
    creds: Creds,
    pages: dict[str, dict],
) -> dict[str, Any]:
    from kestrel_release.stages.publish import quota

    name = wheels[0].name or cfg.name

    def present_on_index() -> bool:  # the plan's read of the page answers it: no second request
        if name not in pages:
            pages[name] = pypi.existing_files(index, name, policy, creds)
        return bool(pages[name])

    return quota.forecast(
        name,
        index,
        wheels,
        todo,
        cfg.verify.project_size_budget,
        cfg.verify.max_file_size,
        present_on_index,
        min(policy.timeout, 10.0),
    )


def _upload_all(
    cfg: Config,
    index: pypi.Index,
    creds: tuple[str, str],
    policy: RetryPolicy,
    todo: list[WheelReport],
    result: PublishResult,
) -> None:
    from kestrel_release.stages.publish import uploads as publish_uploads

    publish_uploads.upload_all(cfg.publish.parallel, index, creds, policy, todo, result)


def _finish(
    cfg: Config, index: pypi.Index, result: PublishResult, policy: RetryPolicy, creds: Creds, smoke: bool
) -> PublishResult:
    if result.uploaded:
        from kestrel_release.stages.publish.confirm import confirm

        result.credentials_checked, result.credentials_note = True, "the index accepted an upload"
        confirm(index, result, policy, creds)  # "uploaded" only for what the index was read back holding
    if not result.failed and smoke:  # from the index just uploaded to, its credentials only on their origin
        read_creds = pypi.auth_for(index, index.simple_url, creds)
        result.smoke = smoke_test(cfg, index.simple_url, result.version, list(cfg.python), read_creds)
        forget_rejected(result.smoke, {row["filename"]: row["sha256"] for row in (*result.uploaded, *result.skipped)})
    if not result.ok:  # the result stays visible: rendered, or as --json's document beside the error
        console.emit_json(result.to_json()) if console.json_mode() else render(result)
        raise _failure(result)
    return result


def _failure(result: PublishResult) -> PublishError:
    if result.failed:
        first = result.failed[0]
        return PublishError(
            f"{len(result.failed)} of {len(result.failed) + len(result.uploaded)} upload(s) to "
            f"{result.target} failed; {first['filename']}: {first['error']}",
            "re-run the same command: files already on the index are skipped",
        )
    from kestrel_release.stages.publish import smoke

    bad = [r for r in result.smoke if not r.get("ok")]
    return SmokeTestError(
        f"smoke test failed on Python {', '.join(r['python'] for r in bad)}: {bad[0]['detail']}",
        smoke.publish_hint(result.smoke, result.version, result.target, result.simple_url),
        result.target,
        str(bad[0].get("failure") or ""),
    )


def render(result: PublishResult) -> None:
    """The summary table: uploaded / skipped / failed with URLs, then the smoke test per Python."""
    from rich.table import Table

    table = Table(
        title=f"{result.target}: {len(result.uploaded)} uploaded, {len(result.skipped)} skipped, "
        f"{len(result.failed)} failed",
        title_justify="left",
    )
    for column in ("status", "file", "size", "url / error"):
        table.add_column(column, overflow="fold")
    for row in result.uploaded:
        table.add_row("uploaded", row["filename"], console.size(row["size"]), row.get("url", ""))
    for row in result.skipped:
        table.add_row("skipped", row["filename"], console.size(row["size"]), row.get("url", ""))
    for row in result.failed:
        table.add_row("FAILED", row["filename"], "", row["error"])
    for row in result.planned:
        table.add_row("would upload" if result.dry_run else "not sent", row["filename"], console.size(row["size"]), "")
    console.console.print(table)
    for row in result.smoke:  # failures are not `error:` lines: the one error line comes from the exit
        line = f"smoke test Python {row['python']}: {row.get('detail', '')}"
        console.ok(line) if row.get("ok") else console.info("✗ " + line)
