"""`--layout kernels-hub`: HF kernel-builder's build layout, derived from the built wheels.

kernel-builder writes `build/<variant>/` (`torch213-cxx11-cu130-x86_64-linux`) with a `metadata.json`,
and the `kernels` library loads such a directory (`kernels.get_local_kernel(path)`, `LOCAL_KERNELS`):
it picks the variant directory whose name matches the running torch minor, C++ ABI, CUDA major (and a
minor <= torch's), CPU and OS, reads `metadata.json` (kernels-data's `Metadata`: name, id, version,
license, python-depends, backend {type, archs}, digest, provenance) and imports
`<variant>/<python_name>/__init__.py` (or `<variant>/__init__.py`) under the name `id`.

Nothing is rebuilt: each variant's directory is the union of the import packages of that variant's
wheels (one per Python: extension modules of different Pythons have different file names, so they
sit side by side, as in an installed site-packages; any other file must be identical in every wheel),
plus the `<name>.libs/` a repair tool grafted (the binaries' RPATH `$ORIGIN/../<name>.libs` still
resolves). The digest is kernels-data's: sha256, standard base64, per path relative to the variant
directory, `metadata.json` and bytecode excluded (what `kernels verify` and Digest.hash_variant check).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from kestrel_release.errors import UsageError
from kestrel_release.files import fsutil
from kestrel_release.output_dir import manifest
from kestrel_release.records import documents
from kestrel_release.records.build_documents import HubDocument, HubVariantDocument
from kestrel_release.records.manifest import Manifest, Wheel
from kestrel_release.ui import console
from kestrel_release.variants import hub_metadata

LAYOUTS = ("kernels-hub",)
BUILD_DIR = "build"


@dataclass
class HubVariant:
    name: str  # build/<name>
    kernel: str  # metadata.json "name"
    package: str  # the import package directory
    wheels: list[str]
    archs: list[str]
    files: int
    derived: bool = False  # from the build's torch (a project without variants)
    warnings: list[str] = field(default_factory=list)

    def document(self) -> HubVariantDocument:
        path = f"{BUILD_DIR}/{self.name}"
        return HubVariantDocument(
            self.name, path, self.kernel, self.package, self.wheels, self.archs, self.files, self.derived, self.warnings
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


@dataclass
class HubLayout:
    out_dir: Path
    variants: list[HubVariant] = field(default_factory=list)

    def document(self) -> HubDocument:
        return HubDocument("kernels-hub", str(self.out_dir / BUILD_DIR), [v.document() for v in self.variants])

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


def check_layout(layout: str | None) -> str | None:
    if layout is None or layout == "":
        return None
    if layout not in LAYOUTS:
        raise UsageError(f"--layout {layout!r} is not a layout", f"use --layout {' or '.join(LAYOUTS)}")
    return layout


def wheel_path(out_dir: Path, filename: str) -> Path:
    """A manifest row's wheel: in the output, or under variants/<name>/ (where variant wheels go)."""
    for candidate in (out_dir / filename, *sorted(out_dir.glob(f"variants/*/{PurePosixPath(filename).name}"))):
        if candidate.is_file():
            return candidate
    raise UsageError(
        f"{filename} is named by the manifest in {out_dir} but is not there", "rebuild with kestrel-release build"
    )


def _license(zf: zipfile.ZipFile) -> tuple[str | None, str | None]:
    """(license, upstream repository URL) from the wheel's METADATA."""
    from kestrel_release.artifacts import core_metadata

    meta = next((n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")), None)
    if meta is None:
        return None, None
    msg = core_metadata.headers(zf.read(meta))
    value = msg.get("License-Expression") or msg.get("License")
    lic = value.strip().splitlines()[0] if value and value.strip() else None
    return lic, hub_metadata.upstream(msg.get_all("Project-URL") or [])


def _extract(wheel: Path, dest: Path, seen: dict[str, bytes]) -> tuple[set[str], tuple[str | None, str | None]]:
    """The wheel's files outside .dist-info/.data into dest; (top-level package dirs, (license, upstream))."""
    packages: set[str] = set()
    with zipfile.ZipFile(wheel) as zf:
        lic = _license(zf)
        for info in zf.infolist():
            parts = PurePosixPath(info.filename).parts
            if info.is_dir() or not parts or parts[0].endswith((".dist-info", ".data")):
                continue
            if ".." in parts or info.filename.startswith("/"):
                raise UsageError(f"{wheel.name}: unsafe path {info.filename!r}", "rebuild with kestrel-release build")
            if len(parts) > 1 and parts[1] == "__init__.py" and not parts[0].endswith(".libs"):
                packages.add(parts[0])
            body = zf.read(info)
            if info.filename in seen and seen[info.filename] != body:
                raise UsageError(
                    f"{info.filename} differs between the wheels of one variant ({wheel.name}); the hub layout "
                    "holds one copy of each file",
                    "make every Python's build write the same file, or give each Python its own module name",
                )
            seen[info.filename] = body
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
            if (info.external_attr >> 16) & 0o111:
                target.chmod(0o755)
    return packages, lic


def _archs(variant_dir: Path) -> list[str]:
    from kestrel_release.artifacts import cuda_binary
    from kestrel_release.artifacts.errors import CudaFormatError

    sass: list[str] = []
    ptx: list[str] = []
    for path in sorted(variant_dir.rglob("*")):
        if path.is_file() and cuda_binary.is_cuda_candidate(path.name):
            try:
                info = cuda_binary.inspect_bytes(path.read_bytes(), path.name)
            except CudaFormatError:
                continue
            sass += info.sass
            ptx += info.ptx
    return hub_metadata.arch_names(sass, ptx)


Built = tuple[Wheel, Path, Manifest]  # (manifest row, the wheel, that manifest)


def built_wheels(out_dir: Path, package: str | None) -> list[Built]:
    """Every wheel of the build output: `package`'s manifest in `out_dir`, and each `variants/<name>/`
    folder's own manifest (a variant's build; under package-suffix it names `<name>-cu13`). The default
    variant's wheels sit in both: counted once."""
    out_dir = Path(out_dir)
    data = manifest.load(out_dir, package)
    sources = [(out_dir, data)] if data else []
    for folder in sorted(p for p in (out_dir / "variants").glob("*") if p.is_dir()):
        found = manifest.locate(folder)
        if found is not None:
            sources.append((folder, manifest.read(found)))
    out: list[Built] = []
    seen: set[tuple[str, Any, Any]] = set()
    for folder, d in sources:
        for row in d.wheels:
            path = wheel_path(folder, row.filename)
            record = row.variant or {}
            variant = (record.get("torch"), record.get("cuda"), record.get("cxx11_abi"), record.get("arch"))
            # The default's wheel sits in <out>/ and in its variants/ folder: counted once.
            key = (path.name, row.sha256, variant)
            if key not in seen:
                seen.add(key)
                out.append((row, path, d))
    if not out:
        raise UsageError(f"{out_dir} holds no build of {package or 'a project'}", "run kestrel-release build first")
    return out


def write(out_dir: Path, package: str | None, configured: bool = False) -> HubLayout:
    """Write build/<variant>/ for every variant of the build output in `out_dir` (see built_wheels)."""
    out_dir = Path(out_dir)
    groups: dict[str, list[Built]] = {}
    kinds: dict[str, tuple[bool, bool]] = {}
    for built in built_wheels(out_dir, package):
        name, cuda, derived = hub_metadata.variant_name(built[0], built[2], configured)
        groups.setdefault(name, []).append(built)
        kinds[name] = (cuda, derived)
    result = HubLayout(out_dir)
    root = out_dir / BUILD_DIR
    for name, rows in sorted(groups.items()):
        _check_ours(root / name)
        with fsutil.staging_dir(root, "hub") as stage:
            vdir = stage / name
            vdir.mkdir()
            seen: dict[str, bytes] = {}
            packages: set[str] = set()
            lic = upstream = None
            for _, path, _ in rows:
                found, (lic_found, upstream_found) = _extract(path, vdir, seen)
                packages |= found
                lic, upstream = lic or lic_found, upstream or upstream_found
            data = rows[0][2]
            pkg = _main_package(packages, data.package or package or "", name)
            kernel = hub_metadata.kernel_name(pkg)
            absolute = self_imports(vdir / pkg, pkg)
            archs = _archs(vdir)
            files_digest = hub_metadata.digest(vdir)
            unique = hashlib.sha256(json.dumps(files_digest, sort_keys=True).encode()).hexdigest()[:7]
            meta = hub_metadata.metadata(
                kernel=kernel,
                variant_name=name,
                version=data.version,
                license=lic,
                cuda=kinds[name][0],
                archs=archs,
                git=data.git,
                files_digest=files_digest,
                unique=unique,
                upstream=upstream,
            )
            (vdir / "metadata.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            fsutil.replace_dir(vdir, root / name)
        variant = HubVariant(
            name, kernel, pkg, [p.name for _, p, _ in rows], archs, len(files_digest["files"]), kinds[name][1]
        )
        if absolute:
            variant.warnings.append(
                f"{', '.join(absolute)} imports {pkg} by its absolute name: kernels loads the package under "
                f"another name, so that import fails unless the wheel is installed too; import relatively "
                f"(from . import ...)"
            )
        result.variants.append(variant)
    remove_stale(out_dir, set(groups))
    return result


def self_imports(package_dir: Path, package: str) -> list[str]:
    """`file:line` of each absolute import of the package by its own name: kernels imports the package
    under its metadata id, so `from pkg import _C` inside it fails (ModuleNotFoundError) unless the
    wheel is also installed; a relative import (`from . import _C`) works both ways."""
    import ast

    found = []
    for path in sorted(package_dir.rglob("*.py")):
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if any(n and (n == package or n.startswith(package + ".")) for n in names):
                found.append(f"{path.relative_to(package_dir.parent).as_posix()}:{node.lineno}")
    return found


def _main_package(packages: set[str], project: str, variant: str) -> str:
    if len(packages) == 1:
        return next(iter(packages))
    wanted = manifest.norm(project)
    if wanted in packages:
        return wanted
    if not packages:
        raise UsageError(
            f"the wheels of {variant} hold no import package (a directory with __init__.py); kernels imports "
            "<variant>/<package>/__init__.py",
            "ship the kernel as a package, or build without --layout kernels-hub",
        )
    raise UsageError(
        f"the wheels of {variant} hold several import packages ({', '.join(sorted(packages))}) and none is "
        f"named like the project ({wanted}); kernels loads one",
        "name the kernel's package like the project, or build without --layout kernels-hub",
    )


def _check_ours(vdir: Path) -> None:
    """Replace only a variant directory this tool wrote (its metadata.json says so)."""
    if not vdir.exists():
        return
    try:
        meta = json.loads((vdir / "metadata.json").read_text(encoding="utf-8"))
        ours = str((meta.get("provenance") or {}).get("kernel-builder", {}).get("version", "")).startswith(
            hub_metadata.WRITER
        )
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours:
        raise UsageError(
            f"{vdir} exists and kestrel-release did not write it",
            "move it away or choose another --out; nothing was changed",
        )


def remove_stale(out_dir: Path, keep: set[str]) -> None:
    """Variant directories of ours that this build no longer has (a variant dropped from the matrix)."""
    root = Path(out_dir) / BUILD_DIR
    if not root.is_dir():
        return
    for vdir in root.iterdir():
        if vdir.is_dir() and vdir.name not in keep and not vdir.name.startswith("."):
            try:
                _check_ours(vdir)
            except UsageError:
                continue
            shutil.rmtree(vdir, ignore_errors=True)


def render(hub: HubLayout) -> None:
    for v in hub.variants:
        for warning in v.warnings:
            console.warn(f"{BUILD_DIR}/{v.name}: {warning}")
        archs = ", ".join(v.archs) if v.archs else "no CUDA binaries"
        console.info(
            f"{BUILD_DIR}/{v.name}/{v.package}: {v.files} files, {archs}"
            + (" (from the build's torch)" if v.derived else "")
        )
    console.ok(
        f"kernels-hub layout: {len(hub.variants)} variants in {hub.out_dir / BUILD_DIR} (kernels.get_local_kernel loads it)"
    )
