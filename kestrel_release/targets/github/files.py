"""What publish --target github uploads, and the release notes that describe it.

The wheels come out of verify; SHA256SUMS and release-manifest.json come from the
wheels' build directory (the manifest naming the wheels and its sums, uploaded under those plain
names even where a shared folder calls them `<name>.release-manifest.json`; SHA256SUMS is
generated when the wheels have none). The notes
are a Jinja2 template looked up in the project, the repo's templates/, or the installed
kestrel_release/_templates.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.errors import UsageError
from kestrel_release.files.fsutil import atomic_write_text, sha256_file
from kestrel_release.output_dir import manifest
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.config.model import Config


@dataclass(frozen=True)
class LocalFile:
    path: Path
    name: str
    size: int
    sha256: str
    wheel: bool

    @classmethod
    def of(cls, path: Path, wheel: bool = False, name: str | None = None) -> LocalFile:
        return cls(path, name or path.name, path.stat().st_size, sha256_file(path), wheel)


def collect(wheels: list[Path], scratch: Path) -> list[LocalFile]:
    """The wheels, then SHA256SUMS and release-manifest.json (generated/copied into `scratch`)."""
    files = [LocalFile.of(w, wheel=True) for w in sorted(wheels, key=lambda p: p.name)]
    names = [f.name for f in files]
    if len(set(names)) != len(names):
        raise UsageError("two wheels with the same file name were given", "pass one directory or distinct files")
    dirs = {w.parent for w in wheels}
    # The build's manifest that names these wheels (each project's own in a shared folder).
    found = manifest.for_wheel(wheels[0]) if len(dirs) == 1 and wheels else None
    sums = manifest.sums_for(found[0]) if found else None
    signature = None
    if sums is None or not sums.is_file() or not _sums_cover(sums, files):
        sums = scratch / manifest.SUMS
        atomic_write_text(sums, "".join(f"{f.sha256}  {f.name}\n" for f in files))
    elif Path(str(sums) + manifest.SIG).is_file():  # sign_key's signature goes with the build's own sums
        from kestrel_release.adapters import ssh_sign

        signature = Path(str(sums) + manifest.SIG)
        ssh_sign.check(sums, signature)  # a signature that does not match is never uploaded
    files.append(LocalFile.of(sums, name=manifest.SUMS))
    if signature is not None:
        files.append(LocalFile.of(signature, name=manifest.SUMS + manifest.SIG))
    if found:
        files.append(LocalFile.of(found[0], name=manifest.MANIFEST))
    return files


def _sums_cover(sums: Path, files: list[LocalFile]) -> bool:
    """True when the build's SHA256SUMS lists exactly these wheels with these hashes."""
    listed = {}
    for line in sums.read_text(encoding="utf-8", errors="replace").splitlines():
        digest, _, name = line.partition("  ")
        listed[name.strip()] = digest.strip()
    return listed == {f.name: f.sha256 for f in files}


def python_of(filename: str) -> str:
    """'3.12' for a cp312 wheel, '3.14t' for cp314t, '3.10+' for abi3, '3.15t+' for abi3t."""
    from packaging.utils import parse_wheel_filename

    from kestrel_release.facts import pyversions

    tags = parse_wheel_filename(filename)[3]
    label: list[str] = []
    for interp in sorted({t.interpreter for t in tags}):
        abis = {t.abi for t in tags if t.interpreter == interp}
        py = pyversions.parse(interp, loose=True)
        for abi in sorted(abis):
            if py is None:
                text = interp
            elif abi in ("abi3", "abi3t"):
                text = py.name + ("t" if abi == "abi3t" else "") + "+"
            else:
                text = py.name + ("t" if abi.endswith("t") and abi.startswith("cp") else "")
            if text not in label:
                label.append(text)
    return ", ".join(label)


def _built_with(files: list[LocalFile]) -> list[str]:
    """Lines on what the wheels need at run time (torch and its C++ ABI, glibc), from the build manifest."""
    from kestrel_release.adapters import torch_probe
    from kestrel_release.stages.verify.native import floor_text

    wheels = [f.path for f in files if f.wheel]
    found = manifest.for_wheel(wheels[0]) if len({w.parent for w in wheels}) == 1 else None
    data = found[1] if found else None
    if not data:
        return []
    lines = []
    torch = (data.toolchain or {}).get("torch")
    if isinstance(torch, dict):
        lines.append(f"Built against {torch_probe.describe(torch)}: install the same torch.")
    floors = {w.glibc_floor for w in data.wheels if w.glibc_floor}
    for floor in sorted(floors):
        major, minor = (int(p) for p in floor.split("."))
        lines.append(floor_text((major, minor)) + ".")
    return lines


def render_notes(
    cfg: Config,
    *,
    template: str,
    version: str,
    commit: str,
    tag: str,
    rolling: bool,
    download_base: str,
    files: list[LocalFile],
    now: _dt.datetime | None = None,
) -> str:
    """Release notes: version, commit, date, wheel table with sha256, pip lines per Python."""
    import jinja2

    from kestrel_release import templates

    env = templates.environment(search=[cfg.project_dir])
    search = [cfg.project_dir, templates.templates_dir()]  # for the not-found hint
    try:
        tmpl = env.get_template(template)
    except jinja2.TemplateNotFound:
        raise UsageError(
            f"release notes template '{template}' not found", f"looked in {', '.join(map(str, search))}"
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(f"release notes template '{template}' line {exc.lineno}: {exc.message}") from None
    wheels = [
        {
            "filename": f.name,
            "sha256": f.sha256,
            "size": f.size,
            "size_human": console.size(f.size),
            "python": python_of(f.name),
            "url": f"{download_base}/{f.name}",
        }
        for f in files
        if f.wheel
    ]
    when = (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    try:
        return tmpl.render(
            package=cfg.name,
            version=version,
            commit=commit,
            tag=tag,
            rolling=rolling,
            date=when,
            wheels=wheels,
            sums_url=f"{download_base}/{manifest.SUMS}",
            built_with=_built_with(files),
        )
    except jinja2.TemplateError as exc:
        raise UsageError(f"release notes template '{template}': {exc}") from None
