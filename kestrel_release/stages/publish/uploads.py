"""publish's upload phase: several files at once, with per-file progress.

Why parallel: a long-haul upload is limited per TCP connection (about 1-1.5 MB/s
to PyPI from far away), not by the uplink, so N connections move N times the
bytes until the link's aggregate is reached. `publish.parallel` connections run
at once; the largest files start first so the last one to finish is not a big
file started late (longest-processing-time-first keeps the tail short).

Progress: on a terminal a Rich bar per file; anywhere else (CI logs, pipes,
--json) one plain line per event (started, finished, failed), so logs never
carry redrawn bar fragments. Retries print their own one-line warnings.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from kestrel_release.adapters.pypi import client as pypi
from kestrel_release.adapters.pypi import upload as pypi_upload
from kestrel_release.errors import PublishError
from kestrel_release.process import pools
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.adapters.retry import RetryPolicy
    from kestrel_release.stages.verify import WheelReport


class UploadLog(Protocol):
    """Where the uploads are recorded: targets/pypi/publish.PublishResult (a layer above: not imported)."""

    uploaded: list[dict[str, Any]]
    failed: list[dict[str, Any]]
    planned: list[dict[str, Any]]


def workers_for(parallel: int, files: int) -> int:
    """Connections to open: the configured number, never more than there are files, at least one."""
    return max(1, min(parallel or 1, files))


class Progress:
    """Per-file progress: a Rich bar per file on a terminal, else one line per event."""

    def __init__(self) -> None:
        self.quiet = console.json_mode()
        self.live = console.get_console().is_terminal and not self.quiet
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._started: dict[str, float] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> Progress:
        if self.live:
            from rich.progress import BarColumn, DownloadColumn, TextColumn, TransferSpeedColumn
            from rich.progress import Progress as Bar

            columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
            self._bar = Bar(*columns, console=console.get_console(), transient=False)
            self._bar.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)

    def start(self, filename: str, size: int) -> None:
        with self._lock:
            self._started[filename] = time.monotonic()
            if self._bar is not None:
                self._tasks[filename] = self._bar.add_task(filename, total=size)
        if not self.live and not self.quiet:
            console.info(f"uploading {filename} ({console.size(size)})")

    def advance(self, filename: str, done: int, total: int) -> None:
        if self._bar is not None:  # the plain mode prints no intermediate state: logs stay one line per event
            self._bar.update(self._tasks[filename], completed=done, total=total)

    def finish(self, filename: str, size: int, error: str = "") -> None:
        seconds = time.monotonic() - self._started.get(filename, time.monotonic())
        if self.live or self.quiet:
            return
        if error:  # not console.error: the one `error:` line is the final one entry.main prints
            console.info(f"✗ {filename}: {error}")
        else:
            rate = size / seconds / 1e6 if seconds > 0 else 0.0
            console.ok(f"sent {filename} ({console.size(size)} in {seconds:.1f} s, {rate:.1f} MB/s)")


def upload_all(
    parallel: int,
    index: pypi.Index,
    creds: tuple[str, str],
    policy: RetryPolicy,
    todo: list[WheelReport],
    result: UploadLog,
) -> None:
    """Upload `todo` (verify's wheel reports) on `parallel` connections; fill result.uploaded/failed."""
    workers = workers_for(parallel, len(todo))
    uploader = pypi_upload.Uploader(index, creds, policy, connections=workers)
    order = sorted(todo, key=lambda w: -w.size)  # largest first: the shortest finish for the whole set
    with Progress() as progress:

        def one(wheel: WheelReport) -> None:
            progress.start(wheel.filename, wheel.size)
            try:
                attempts = uploader.upload(
                    wheel.path, lambda done, total: progress.advance(wheel.filename, done, total), wheel.sha256
                )
                result.uploaded.append(
                    {"filename": wheel.filename, "sha256": wheel.sha256, "size": wheel.size, "attempts": attempts}
                )
                progress.finish(wheel.filename, wheel.size)
            except pypi.FileExists:
                progress.finish(wheel.filename, wheel.size, resolve_exists(index, wheel, policy, creds, result))
            except PublishError as exc:
                result.failed.append({"filename": wheel.filename, "error": str(exc)})
                progress.finish(wheel.filename, wheel.size, str(exc))

        try:
            # Ctrl-C / SIGTERM: files not yet started are never sent, and the process ends now (pools.py):
            # an upload cut mid-body is no file to an index (the request never completes), and one that
            # landed is found by the re-run, which compares the index's sha256 (resolve_exists).
            with pools.threads(workers, "upload") as pool:
                for future in [pool.submit(one, wheel) for wheel in order]:
                    future.result()
        finally:
            uploader.close()
    result.planned.clear()


def resolve_exists(
    index: pypi.Index, wheel: WheelReport, policy: RetryPolicy, creds: tuple[str, str], result: UploadLog
) -> str:
    """'already exists' after a retry can be our own earlier attempt: the index's hash decides.
    Returns the failure ("" when the file on the index is ours)."""
    assert wheel.name is not None  # verify refuses a wheel whose filename names no project: none is uploaded
    there = pypi.existing_files(index, wheel.name, policy, creds).get(wheel.filename)
    row = {"filename": wheel.filename, "sha256": wheel.sha256, "size": wheel.size}
    if there and there["sha256"] == wheel.sha256:
        result.uploaded.append({**row, "attempts": 1, "note": "already on the index (an earlier attempt landed)"})
        return ""
    theirs = (there or {}).get("sha256") or "(unknown)"
    error = f"already on {index.name} with other bytes: index sha256 {theirs}, local {wheel.sha256}"
    result.failed.append({"filename": wheel.filename, "error": error})
    return error
