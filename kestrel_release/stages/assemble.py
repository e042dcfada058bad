"""assemble: the build outputs of several machines (or CI jobs) become one release.

Each input is a build output (wheels + release-manifest.json + SHA256SUMS). Every
input is checked against its own manifest and against the others before anything
is written: one package, one version, one commit, and one content per filename.
The result is written in a staging directory next to OUT and renamed into place,
so OUT is either untouched or complete. The assembled manifest records, per wheel,
which machine or CI job built it, with which toolchain, from which commit; verify,
publish and `release --from` read it like a local build's.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kestrel_release import __version__
from kestrel_release.errors import IncompatibleRecordError, UsageError, VerifyError
from kestrel_release.files import fsutil, safepaths, statedir
from kestrel_release.output_dir import manifest, outputs
from kestrel_release.records import documents, serde
from kestrel_release.records.manifest import GitState, Manifest, Wheel
from kestrel_release.stages.assemble_inputs import Input, check_paths, load_input
from kestrel_release.ui import console
from kestrel_release.variants import hub_layout

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

# Files an output of ours may hold besides its wheels (replaced without asking).
_OURS = {manifest.MANIFEST, manifest.SUMS, ".release-state.json"}
_TOOLS = ("nvcc", "auditwheel", "torch", "uv", "kestrel-release")


@dataclass(frozen=True)
class Row:
    """One wheel of the assembled release and the input folder it is copied from."""

    wheel: Wheel
    source: Path

    def to_json(self) -> dict[str, Any]:
        return {**serde.to_json(self.wheel), "source": str(self.source)}


@dataclass
class AssembleResult:
    out_dir: Path
    package: str
    version: str
    commit: str | None
    wheels: list[dict[str, Any]]
    inputs: list[str]
    hub: hub_layout.HubLayout | None = None  # --layout kernels-hub

    def document(self) -> documents.AssembleDocument:
        return documents.AssembleDocument(
            ok=True,
            out_dir=str(self.out_dir),
            package=self.package,
            version=self.version,
            commit=self.commit,
            inputs=self.inputs,
            wheels=self.wheels,
            hub=self.hub.document() if self.hub else None,
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


def run(cfg: Config, inputs: list[Path], out: Path, layout: str | None = None) -> AssembleResult:
    """Check every input, then write OUT atomically; VerifyError (exit 5) when inputs disagree."""
    from kestrel_release.project import meta as project_meta

    cfg = project_meta.resolve(cfg, inputs)  # no [project]: named by the inputs' manifest, else the backend
    if not inputs:
        raise UsageError("assemble needs at least one build output directory", "pass DIR... --out OUT")
    out = safepaths.check_target(out, cfg.project_dir, "release directory")  # never the project or home
    dirs = list(dict.fromkeys(Path(p).resolve() for p in inputs))
    check_paths(dirs, out)
    loaded = [load_input(d, cfg.name) for d in dirs]
    package, version, commit = _agree(cfg, loaded)
    rows = _merge(loaded)
    with fsutil.project_lock(cfg.project_dir, "assemble"):
        _check_out(out)
        # A killed run's debris beside OUT (its staging copy of every wheel, the swapped-out old
        # OUT); staging_dir collects the tool's marked temp dirs there too.
        safepaths.collect_leftovers(out.parent, swapped=out.name)
        with fsutil.staging_dir(out) as stage:
            staged = stage / "out"
            staged.mkdir()
            for row in rows:
                _copy_checked(row, staged)
            manifest.save(staged, _manifest(package, version, loaded, [r.wheel for r in rows]))
            manifest.sign_sums(manifest.write_sums(staged, [r.wheel for r in rows]), cfg.sign_key, cfg.project_dir)
            fsutil.atomic_write_text(staged / statedir.GITIGNORE, statedir.GITIGNORE_TEXT)  # as build's output
            hub = (
                hub_layout.write(staged, package, cfg.variants is not None) if layout else None
            )  # part of OUT's one atomic swap
            fsutil.replace_dir(staged, out)
    result = AssembleResult(out, package, version, commit, [r.to_json() for r in rows], [str(i.path) for i in loaded])
    if hub is not None:
        hub.out_dir = out
        result.hub = hub
    return result


def _agree(cfg: Config, inputs: list[Input]) -> tuple[str, str, str | None]:
    """One package (the project's), one version, one commit across every input and wheel."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    want = canonicalize_name(cfg.name)
    first = inputs[0]
    for item in inputs:
        for name in item.wheels:
            try:
                wname, wversion, _, _ = parse_wheel_filename(name)
            except (InvalidWheelFilename, ValueError):
                raise VerifyError(
                    f"refused {item.path}: {name} is not a valid wheel filename", "nothing was written"
                ) from None
            if wname != want:
                raise VerifyError(
                    f"refused {item.path}: {name} is package '{wname}', not this project's '{want}'",
                    "assemble one package's outputs; nothing was written",
                )
            if str(wversion) != item.data.version:
                raise VerifyError(
                    f"refused {item.path}: {name} is version {wversion}, its manifest says {item.data.version}",
                    "rebuild that output; nothing was written",
                )
        for key in ("version", "package"):
            if _norm(key, getattr(item.data, key)) != _norm(key, getattr(first.data, key)):
                raise VerifyError(
                    f"inputs disagree: {first.path} is {key} {getattr(first.data, key)}, {item.path} is "
                    f"{getattr(item.data, key)}",
                    "assemble outputs of one release; nothing was written",
                )
        mine, theirs = item.data.built_with, first.data.built_with
        if mine is not None and theirs is not None and mine != theirs:
            raise VerifyError(
                f"inputs disagree: {first.path} and {item.path} were built under other configurations",
                "build every platform from one configuration; nothing was written",
            )
        if item.commit != first.commit:
            raise VerifyError(
                f"inputs disagree: {first.path} was built from commit {first.commit or 'unknown'}, "
                f"{item.path} from {item.commit or 'unknown'}",
                "build every platform from one commit; nothing was written",
            )
    dirty = [str(i.path) for i in inputs if i.data.git and i.data.git.dirty]
    if dirty:
        console.warn(f"built from a dirty tree (not reproducible from the commit): {', '.join(dirty)}")
    return first.data.package or cfg.name, first.data.version, first.commit


def _norm(key: str, value: Any) -> str:
    if key == "package":
        from packaging.utils import canonicalize_name

        return canonicalize_name(str(value or ""))
    return str(value)


# What an assembled manifest keeps of each input's row (no glibc facts: verify reads them from the tags).
_KEPT = ("python", "python_tag", "platform_tag", "platform", "variant")


def _merge(inputs: list[Input]) -> list[Row]:
    """One row per filename; the same filename with other bytes in two inputs is refused."""
    rows: dict[str, Row] = {}
    for item in inputs:
        for name, row in item.wheels.items():
            seen = rows.get(name)
            if seen is not None:
                if seen.wheel.sha256 != row.sha256:
                    raise VerifyError(
                        f"inputs disagree: {name} has other contents in {seen.source} and "
                        f"{item.path} (sha256 {seen.wheel.sha256[:12]}... != {row.sha256[:12]}...)",
                        "one filename must have one content: rebuild one of them; nothing was written",
                    )
                also = [*(seen.wheel.also_built_by or []), row.built_by or _built_by(item)]
                rows[name] = Row(dataclasses.replace(seen.wheel, also_built_by=also), seen.source)
                continue
            # An input that is itself assembled keeps each wheel's own builder and toolchain.
            kept = Wheel(row.filename, row.size, row.sha256, **{k: getattr(row, k) for k in _KEPT})
            merged = dataclasses.replace(
                kept,
                commit=item.commit,
                built_by=row.built_by or _built_by(item),
                toolchain=row.toolchain or _toolchain(item, row),
            )
            rows[name] = Row(merged, item.path)
    return [rows[name] for name in sorted(rows)]


def _built_by(item: Input) -> dict[str, Any]:
    builder = item.data.builder
    return {
        "input": item.path.name,
        "host": builder.host if builder else None,
        "label": builder.label if builder else None,
        "platform": builder.platform if builder else None,
        "ci": builder.ci if builder else None,
    }


def _toolchain(item: Input, row: Wheel) -> dict[str, Any]:
    tools = item.data.toolchain or {}
    out: dict[str, Any] = {"python": row.python}
    out.update({t: tools[t] for t in _TOOLS if tools.get(t)})
    return out


def _manifest(package: str, version: str, inputs: list[Input], rows: list[Wheel]) -> Manifest:
    kernels: list[Any] = []
    for item in inputs:
        kernels += [k for k in item.data.kernels or [] if k not in kernels]
    first = inputs[0].data
    return Manifest(
        package=package,
        version=version,
        git=GitState(inputs[0].commit, any(bool(i.data.git and i.data.git.dirty) for i in inputs)),
        source_date_epoch=first.source_date_epoch,
        toolchain={"kestrel-release": __version__},
        built_with=first.built_with,
        assembled={
            "inputs": [
                {
                    "input": i.path.name,
                    "builder": serde.to_json(i.data.builder),
                    "toolchain": i.data.toolchain,
                    "wheels": sorted(i.wheels),
                }
                for i in inputs
            ]
        },
        wheels=tuple(rows),
        kernels=kernels,
    )


def _check_out(out: Path) -> None:
    """OUT is absent, empty, or an earlier output of ours holding nothing but our files."""
    if not out.exists():
        return
    if not out.is_dir() or out.is_symlink():
        raise UsageError(f"--out {out} exists and is not a directory", "pass a new directory")
    entries = list(out.iterdir())
    if not entries:
        return
    try:
        found = manifest.load(out) is not None
    except IncompatibleRecordError:
        found = True  # another kestrel-release's output: still the tool's to replace
    except UsageError:
        found = False
    if not found:
        raise UsageError(
            f"--out {out} is not empty and holds no release manifest of ours",
            "pass a new or empty directory; nothing was written",
        )
    ours = _OURS | outputs.owned(out)  # the manifest's wheels, our `*` .gitignore (never a user's own)
    foreign = sorted(e.name for e in entries if e.name not in ours or not e.is_file())
    if foreign:
        raise UsageError(
            f"--out {out} holds files the tool did not write ({', '.join(foreign[:5])})",
            "move them away or pass a new directory; nothing was written",
        )


def _copy_checked(row: Row, dest: Path) -> None:
    """Copy one wheel and prove the copy has the recorded bytes (the input may change under us)."""
    src = row.source / row.wheel.filename
    target = dest / row.wheel.filename
    shutil.copyfile(src, target)
    os.chmod(target, 0o644)
    actual = fsutil.sha256_file(target)
    if actual != row.wheel.sha256:
        raise VerifyError(
            f"refused {src.parent}: {row.wheel.filename} changed while it was copied", "nothing was written"
        )


def render(result: AssembleResult) -> None:
    from rich.table import Table

    table = Table(title=f"assembled {result.package} {result.version} (commit {(result.commit or 'unknown')[:12]})")
    for col in ("wheel", "built by", "python", "nvcc", "auditwheel"):
        table.add_column(col)
    for row in result.wheels:
        by = row["built_by"]
        ci = by.get("ci") or {}
        who = by.get("label") or (f"{ci.get('job')} run {ci.get('run_id')}" if ci else by.get("host")) or by["input"]
        tools = row["toolchain"]
        table.add_row(
            row["filename"],
            str(who),
            str(tools.get("python") or "-"),
            str(tools.get("nvcc") or "-"),
            str(tools.get("auditwheel") or "-"),
        )
    console.console.print(table)
    console.ok(f"{len(result.wheels)} wheels from {len(result.inputs)} build outputs in {result.out_dir}")
    if result.hub is not None:
        hub_layout.render(result.hub)


def check_output(cfg: Config, out: Path) -> Manifest:
    """An existing output (a local build or an assembled one) that `release --from` may publish.

    Its manifest must match its files and name this project; returns the manifest.
    """
    out = Path(out).resolve()
    if not out.is_dir():
        raise UsageError(f"{out} is not a directory", "pass the output of kestrel-release build or assemble")
    item = load_input(out, cfg.name)
    _agree(cfg, [item])
    return item.data
