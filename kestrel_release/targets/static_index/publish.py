"""Publish to a `static-index` target: every variant's wheels into a PEP 503/691 index in PyTorch's layout.

The wheels come from the build output: `<out>/` and each `<out>/variants/<variant>/` (their manifests'
`variant` records say which CUDA flavour each wheel is: `<dir>/cu130/<project>/`); a project without
variants gets a plain index at `<dir>/<project>/`. The writing is adapters/static_index.py (idempotent,
adds, never drops, never replaces a file it did not write); this module picks the wheels, checks them
against the build's manifest and verify, and reports. What a static host must serve: README
"Static index".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kestrel_release.adapters import static_index as writer
from kestrel_release.adapters.static_index_readback import Expected
from kestrel_release.errors import UsageError
from kestrel_release.files import fsutil, safepaths
from kestrel_release.output_dir import manifest
from kestrel_release.records import documents
from kestrel_release.targets.static_index.settings import StaticIndexTarget
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

VARIANTS_DIR = "variants"  # <out>/variants/<variant.name>/: the variants contract (kestrel_release/config/variants.py)


@dataclass
class StaticIndexResult:
    target: str
    root: str
    dry_run: bool
    base_url: str = ""
    pages: list[writer.PageResult] = field(default_factory=list)
    left_out: list[dict[str, str]] = field(default_factory=list)
    release: dict[str, Any] = field(default_factory=dict)  # repo, tag, url, uploaded: wheels as release assets
    expected: Expected = field(default_factory=dict)  # what verify read, which the read-back compares with

    @property
    def uploaded(self) -> list[str]:  # the names release's step line counts, as for the other publishers
        return sorted({name for p in self.pages for name in p.added})

    @property
    def skipped(self) -> list[str]:
        return sorted({name for p in self.pages for name in p.kept} - set(self.uploaded))

    @property
    def summary(self) -> str:
        flavours = sorted({p.flavour or "(root)" for p in self.pages})
        return f"{len(self.uploaded)} added, {len(self.skipped)} already there, in {', '.join(flavours)} of {self.root}"

    def index_urls(self) -> dict[str, str]:
        """flavour -> the --index-url a user passes (the served base URL, else the directory as a file: URL)."""
        base = self.base_url or Path(self.root).as_uri()
        return {p.flavour: f"{base}/{p.flavour}".rstrip("/") for p in self.pages}

    def document(self) -> documents.StaticIndexDocument:
        return documents.StaticIndexDocument(
            target=self.target,
            kind="static-index",
            root=self.root,
            dry_run=self.dry_run,
            uploaded=self.uploaded,
            skipped=self.skipped,
            pages=[documents.PageDocument(p.flavour, p.project, p.added, p.kept, p.written) for p in self.pages],
            index_urls=self.index_urls(),
            left_out=self.left_out,
            release=self.release or None,
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


def target_of(cfg: Config, name: str) -> StaticIndexTarget:
    found = cfg.targets.get(name)
    if not isinstance(found, StaticIndexTarget):
        raise UsageError(f"target '{name}' is not a static index", 'set kind = "static-index" in its table')
    return found


def root_of(cfg: Config, target: StaticIndexTarget) -> Path:
    return safepaths.check_target(cfg.project_dir / target.dir, cfg.project_dir, "static index directory", "dir")


@fsutil.locked("publish")  # two publishes of one project never interleave
def run(
    cfg: Config,
    paths: list[Path],
    *,
    target: str,
    dry_run: bool = False,
    root: Path | None = None,
    github: dict[str, Any] | None = None,
) -> StaticIndexResult:
    """Add the wheels at `paths` (default: every variant of the build output) to the index; exit 6 on refusal.

    `root`: write there instead of the configured dir (a rehearsal's stand-in); `github`: api_url, token,
    token_env, commit for a target whose wheels are release assets (static_index_github.py)."""
    t = target_of(cfg, target)
    root = root or root_of(cfg, t)
    groups, left_out = wheels_by_flavour(cfg, list(paths))
    every = [w for ws in groups.values() for w in ws]
    if not every:
        raise UsageError(f"no wheels of {cfg.name} to publish", "run kestrel-release build, or pass wheel files")
    from kestrel_release.stages.publish import snapshot

    with snapshot.session() as snaps:  # the index gets the tool's copies of what verify read, nothing else
        copy_of = dict(zip(every, snaps.take(every), strict=True))
        groups = {flavour: [copy_of[w] for w in ws] for flavour, ws in groups.items()}
        every = [copy_of[w] for w in every]
        manifest.check_unchanged(every, None)
        _verify(cfg, every, target)
        snaps.check_sources()
        result = StaticIndexResult(target, str(root), dry_run, t.base_url, left_out=left_out)
        result.expected = {
            flavour: {c.name: (snaps.copies[c].sha256, snaps.copies[c].size) for c in copies}
            for flavour, copies in groups.items()
        }
        _write(cfg, t, result, groups, every, github)
        if not dry_run:  # "published" only once the index is read back holding the verified bytes
            from kestrel_release.adapters import static_index_readback

            static_index_readback.confirm_on_disk(root, result.pages, result.expected)
        return result


def _write(
    cfg: Config,
    t: Any,
    result: StaticIndexResult,
    groups: dict[str, list[Path]],
    every: list[Path],
    github: dict[str, Any] | None,
) -> None:
    dry_run = result.dry_run
    urls: dict[str, str] = {}
    if t.github_repo:  # the wheels become release assets first: the pages link to them
        from kestrel_release.targets.static_index import assets as static_index_github

        assets = static_index_github.publish(cfg, t, sorted(set(every)), dry_run=dry_run, **(github or {}))
        urls = assets.urls
        result.release = {
            "repo": assets.repo,
            "tag": assets.tag,
            "url": assets.release_url,
            "uploaded": assets.uploaded,
        }
    result.pages = writer.publish(Path(result.root), groups, base_urls=urls, dry_run=dry_run)


def wheels_by_flavour(cfg: Config, paths: list[Path]) -> tuple[dict[str, list[Path]], list[dict[str, str]]]:
    """CUDA flavour ("cu130"; "" without variants) -> wheels, and the wheels left out with why."""
    from kestrel_release.stages import verify

    if paths:
        wheels = verify.resolve_wheels(cfg, paths)
    else:
        wheels = manifest.wheel_paths(cfg.out_path, cfg.name) if manifest.locate(cfg.out_path, cfg.name) else []
        # A variant's folder is its build's own (under naming = "package-suffix" its manifest names `<name>-cu13`).
        for folder in sorted(p for p in (cfg.out_path / VARIANTS_DIR).glob("*") if p.is_dir()):
            wheels += manifest.wheel_paths(folder) if manifest.locate(folder) else []
        if not wheels:
            wheels = verify.resolve_wheels(cfg, [])  # its message for an output without wheels
    flavoured = [(w, flavour_of(w)) for w in wheels]
    any_variant = any(f for _, f in flavoured)
    groups: dict[str, dict[str, Path]] = {}
    left: list[dict[str, str]] = []
    for wheel, flavour in flavoured:
        if any_variant and not flavour:
            left.append({"filename": wheel.name, "reason": "built without a variant record"})
            continue
        groups.setdefault(flavour, {}).setdefault(wheel.name, wheel)  # the default variant sits in two folders
    return {f: sorted(ws.values()) for f, ws in groups.items()}, left


def flavour_of(wheel: Path) -> str:
    """ "cu130" for a wheel its manifest records as a CUDA 13.0 variant; "" for a wheel without a variant."""
    found = manifest.for_wheel(wheel)
    row = found[1].wheel(wheel.name) if found else None
    variant = row.variant if row else None
    if variant is None:
        return ""
    from kestrel_release.config.variants import Variant, VariantError

    try:
        return Variant.from_json(variant).cu
    except VariantError as exc:
        raise UsageError(f"{wheel.name}: its manifest's variant record is damaged ({exc})", "rebuild it") from None


def _verify(cfg: Config, wheels: list[Path], target: str) -> None:
    """verify's checks for each build folder (a variant's folder is a build of its own), with the target's own
    rules: PyPI's do not apply to an index of our own (local versions are its point), a release asset's
    size limit does (targets/static_index/, `verify_rules`)."""
    from kestrel_release.stages import verify

    by_dir: dict[Path, list[Path]] = {}
    for wheel in wheels:
        by_dir.setdefault(wheel.parent, []).append(wheel)
    for folder_wheels in by_dir.values():
        report = verify.run(cfg, folder_wheels, target=target, record=False, partial=True)
        verify.raise_for(report, show=True)


def render(result: StaticIndexResult) -> None:
    from rich.table import Table

    table = Table(title=f"static index {result.root}{' (dry run)' if result.dry_run else ''}")
    for column in ("index", "project", "added", "already there", "files written"):
        table.add_column(column)
    for p in result.pages:
        table.add_row(p.flavour or "(root)", p.project, str(len(p.added)), str(len(p.kept)), str(len(p.written)))
    console.console.print(table)
    for entry in result.left_out:
        console.warn(f"left out {entry['filename']}: {entry['reason']}")
    console.ok(result.summary)
    if result.release:
        r = result.release
        console.info(f"  wheels are assets of {r['tag']} on {r['repo']} ({len(r['uploaded'])} uploaded) {r['url']}")
    for flavour, url in sorted(result.index_urls().items()):
        project = next(p.project for p in result.pages if p.flavour == flavour)
        console.info(f"  pip install --index-url {url} {project}")
    if not result.base_url:
        console.info("  serve the directory with any static host (README: Static index); base_url sets the URLs shown")
