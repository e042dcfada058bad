"""assemble's inputs: each build output loaded and checked against its own manifest and SHA256SUMS.

An input is refused (exit 5, nothing written) when its manifest, its SHA256SUMS and the wheels on disk
do not tell the same story; stages/assemble.py then checks the inputs against each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kestrel_release.errors import IncompatibleRecordError, UsageError, VerifyError
from kestrel_release.files import fsutil
from kestrel_release.output_dir import manifest
from kestrel_release.records.manifest import Manifest, Wheel


@dataclass
class Input:
    path: Path
    data: Manifest
    wheels: dict[str, Wheel] = field(default_factory=dict)  # filename -> manifest row
    sums: Path | None = None  # the SHA256SUMS that goes with its manifest

    @property
    def commit(self) -> str | None:
        return self.data.commit


def check_paths(dirs: list[Path], out: Path) -> None:
    for d in dirs:
        if not d.is_dir():
            raise UsageError(f"{d} is not a directory", "pass build output directories (with release-manifest.json)")
        if out == d or d in out.parents or out in d.parents:
            raise UsageError(f"--out {out} overlaps the input {d}", "write the release to a separate directory")


def load_input(path: Path, package: str | None = None) -> Input:
    """One build output (`package`'s, in a folder several projects share), checked against its own
    manifest and SHA256SUMS."""
    located = manifest.locate(path, package)
    try:
        data = manifest.read(located) if located is not None else None
    except IncompatibleRecordError:
        raise  # its own line: which tool wrote it, which to use
    except UsageError as exc:
        raise VerifyError(f"refused {path}: {exc.message}", "nothing was written") from None
    if data is None:
        of = f" of {package}" if package and manifest.manifest_files(path) else ""
        raise VerifyError(
            f"refused {path}: no {manifest.MANIFEST}{of} (not a kestrel-release build output)",
            "pass the directories that kestrel-release build wrote; nothing was written",
        )
    if not data.wheels:
        raise VerifyError(f"refused {path}: its manifest lists no wheels", "rebuild it; nothing was written")
    sums = manifest.sums_for(located) if located is not None else None
    item = Input(path, data, {r.filename: r for r in data.wheels}, sums)
    _check_files(item)
    return item


def _check_files(item: Input) -> None:
    """The manifest, SHA256SUMS and the wheels on disk must tell the same story."""
    on_disk = {p.name for p in item.path.glob("*.whl")}
    listed = set(item.wheels)
    # A shared wheelhouse keeps other versions' wheels beside a build (outputs.install): those are
    # not part of this release and are left out; an unlisted wheel of this release is a mismatch.
    extra = sorted(n for n in on_disk - listed if _of_release(n, item.data))
    missing = sorted(listed - on_disk)
    if extra or missing:
        what = "; ".join(
            x
            for x in (
                f"not in the manifest: {', '.join(extra)}" if extra else "",
                f"missing: {', '.join(missing)}" if missing else "",
            )
            if x
        )
        raise VerifyError(
            f"refused {item.path}: its manifest does not match its files ({what})",
            "rebuild that output; nothing was written",
        )
    sums = _read_sums(item.sums)
    for name, row in sorted(item.wheels.items()):
        path = item.path / name
        if path.is_symlink() or not path.is_file():
            raise VerifyError(f"refused {item.path}: {name} is not a regular file", "nothing was written")
        actual = fsutil.sha256_file(path)
        if actual != row.sha256 or (sums is not None and sums.get(name) != actual):
            raise VerifyError(
                f"refused {item.path}: {name} does not match its manifest/SHA256SUMS "
                f"(sha256 {actual} != recorded {row.sha256})",
                "the file changed after the build: rebuild that output; nothing was written",
            )
    if sums is not None and {n for n in sums if n.endswith(".whl")} != listed:
        raise VerifyError(
            f"refused {item.path}: {item.sums.name if item.sums else manifest.SUMS} and the manifest list different wheels",
            "rebuild that output; nothing was written",
        )


def _of_release(filename: str, data: Manifest) -> bool:
    """Is `filename` a wheel of the manifest's package and version (or not a valid wheel name at all)?"""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
    from packaging.version import InvalidVersion, Version

    try:
        name, version, _, _ = parse_wheel_filename(filename)
        return name == canonicalize_name(data.package) and version == Version(data.version)
    except (InvalidWheelFilename, InvalidVersion):
        return True


def _read_sums(sums: Path | None) -> dict[str, str] | None:
    if sums is None or not sums.is_file():
        return None
    out = {}
    for line in sums.read_text(encoding="utf-8", errors="replace").splitlines():
        digest, _, name = line.partition("  ")
        if name:
            out[name.lstrip("*")] = digest
    return out
