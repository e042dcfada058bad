"""What the `kernels` library reads in a kernel-builder build variant, pure (no I/O but hashing a
directory): kernel names, arch words, the files digest, metadata.json (kernels-data's Metadata), and the
build variant a manifest's wheel row belongs to. hub_layout writes the directories.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

from kestrel_release import __version__
from kestrel_release.errors import UsageError
from kestrel_release.files import fsutil
from kestrel_release.records.manifest import GitState, Manifest, Wheel

_KERNEL_NAME = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")  # kernels-data's KernelName
_OID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")  # kernels-data's Oid: a full git object id
WRITER = "kestrel-release"  # our mark in metadata.json: a variant directory we may replace
# The oldest kernels whose Metadata reads `digest` (kernels-data, v0.16.0): `kernels verify` re-hashes the
# variant against it. An older kernels would load the variant unchecked; with `kernels-minver` the newer
# ones refuse to (MinverValidator), and say which version to install.
KERNELS_MINVER = "0.16.0"
# Project-URL labels that name the source repository (PEP 753's well-known labels, normalized).
_REPO_LABELS = ("source", "sourcecode", "repository", "code", "homepage")
_GIT_URL = re.compile(r"^https://[A-Za-z0-9.-]+(?::\d+)?/[A-Za-z0-9._~/-]+$")  # what kernels' GitUrl accepts


def kernel_name(package: str) -> str:
    """The kernels name of an import package: `my_ops` -> `my-ops` (kernels imports `python_name`)."""
    name = package.replace("_", "-")
    if not _KERNEL_NAME.match(name):
        raise UsageError(
            f"package {package!r} cannot be a kernels kernel: kernels needs a lowercase name of letters, digits "
            "and '_' that starts with a letter (^[a-z][-a-z0-9]*[a-z0-9]$ with '-' for '_')",
            "rename the import package, or build without --layout kernels-hub",
        )
    return name


def arch_names(sass: list[str], ptx: list[str]) -> list[str]:
    """kernel-builder's arch words: sm_90a -> 9.0a, sm_100f -> 10.0f, compute_90 -> 9.0+PTX."""

    def cc(text: str) -> str | None:
        m = re.fullmatch(r"(?:sm|compute)_(\d+?)(\d)([af]?)", text)
        return f"{m.group(1)}.{m.group(2)}{m.group(3)}" if m else None

    out = {a for a in map(cc, sass) if a} | {f"{a}+PTX" for a in map(cc, ptx) if a}
    return sorted(out, key=lambda a: (float(re.match(r"[\d.]+", a).group(0)), a))  # type: ignore[union-attr]


def digest(variant_dir: Path) -> dict[str, Any]:
    """kernels-data's Digest.hash_variant(SHA256, variant_dir)."""
    files: dict[str, str] = {}
    for path in sorted(variant_dir.rglob("*")):
        rel = path.relative_to(variant_dir)
        if not path.is_file() or "__pycache__" in rel.parts or path.suffix == ".pyc":
            continue
        if len(rel.parts) == 1 and rel.name in ("metadata.json", "metadata.json.sigstore"):
            continue
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(fsutil.CHUNK):
                h.update(chunk)
        files[rel.as_posix()] = base64.b64encode(h.digest()).decode("ascii")
    return {"algorithm": "sha256", "files": files}


def upstream(project_urls: list[str]) -> str | None:
    """The source repository among METADATA's `Project-URL: label, url` lines (kernels' `upstream`), or None."""
    found: dict[str, str] = {}
    for line in project_urls:
        label, _, url = line.partition(",")
        key = re.sub(r"[^a-z]", "", label.lower())
        if key in _REPO_LABELS and _GIT_URL.match(url.strip()):
            found.setdefault(key, url.strip())
    return next((found[k] for k in _REPO_LABELS if k in found), None)


def metadata(
    *,
    kernel: str,
    variant_name: str,
    version: str,
    license: str | None,
    cuda: bool,
    archs: list[str],
    git: GitState | None,
    files_digest: dict[str, Any],
    unique: str,
    upstream: str | None = None,
) -> dict[str, Any]:
    """metadata.json as kernels-data's Metadata reads it (kebab-case keys; unknown keys are ignored)."""
    backend: dict[str, Any] = {"type": "cuda" if cuda else "cpu"}
    if cuda and archs:
        backend["archs"] = archs
    commit = str((git.commit if git else None) or "").lower()
    provenance: dict[str, Any] = {"kernel-builder": {"version": f"{WRITER} {__version__}"}}
    if _OID.match(commit):  # kernels refuses a partial id; no commit (no git) = no kernel provenance
        provenance["kernel"] = {"commit": commit, "dirty": bool(git and git.dirty)}
    major = re.match(r"\d+", version)
    return {
        "name": kernel,
        # kernel-builder's ops id shape (_<name>_<backend>_<unique>): the module's name in sys.modules.
        "id": f"_{kernel.replace('-', '_')}_{'cuda' if cuda else 'cpu'}_{unique}",
        "version": int(major.group(0)) if major else 1,  # kernels' API version: the release's major
        "kernels-minver": KERNELS_MINVER,
        **({"upstream": upstream} if upstream else {}),  # kernels shows it (`kernels info`); a git URL only
        "license": license or "unknown",
        # kernels accepts only dependencies on its own list (einops, ...); the wheel's own requirements
        # (torch==X.Y.*) are met by the environment that picked this variant.
        "python-depends": [],
        "kernel-depends": [],
        "backend": backend,
        "digest": files_digest,
        "provenance": provenance,
        "kestrel-release": {"variant": variant_name, "version": version},
    }


def variant_name(row: Wheel, data: Manifest, configured: bool = False) -> tuple[str, bool, bool]:
    """(build variant name, is CUDA, derived) of one manifest wheel row."""
    from kestrel_release.config import variants as variants

    if row.variant is not None:
        try:
            v = variants.Variant.from_json(row.variant)
        except variants.VariantError as exc:
            raise UsageError(f"{row.filename}: {exc}", "rebuild with kestrel-release build") from None
        return v.name, True, False
    if configured:  # the project has a matrix, but these wheels were built without it
        raise UsageError(
            f"{row.filename} carries no variant record, though the project configures variants",
            "rebuild with kestrel-release build (each variant's wheels then name their torch and CUDA)",
        )
    return _derived(row, data)


def _derived(row: Wheel, data: Manifest) -> tuple[str, bool, bool]:
    """A project without variants: its one variant from the torch the build recorded and the wheel's tag."""
    from kestrel_release.config import variants as variants

    torch = (row.toolchain or {}).get("torch") or (data.toolchain or {}).get("torch")
    if not isinstance(torch, dict) or not torch.get("version"):
        raise UsageError(
            "--layout kernels-hub needs the torch each wheel was built against, and this build recorded none",
            'add [tool.kestrel-release.variants] (torch = ["2.13"], cuda = ["13.0"]), '
            "or build with torch in the build environment",
        )
    from kestrel_release import platforms
    from kestrel_release.platforms import arches

    plat = platforms.parse((row.platform_tag or "").split(".")[0])
    os_name = plat.system if plat else "linux"
    arch = plat.arches[0] if plat and len(plat.arches) == 1 else arches.X86_64  # as explain --torch reads tags
    minor = ".".join(str(p) for p in variants.torch_minor(str(torch["version"])))
    cuda = torch.get("cuda")
    cxx11 = bool(torch.get("cxx11_abi", True))
    if cuda:
        return variants.Variant(minor, str(cuda), cxx11, os_name, arch).name, True, True
    # A CPU build of torch: kernel-builder's `torch213-cxx11-cpu-<cpu>-linux`.
    name = variants.Variant(minor, "0.0", cxx11, os_name, arch).name.replace("-cu00-", "-cpu-")
    return name, False, True
