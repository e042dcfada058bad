"""`variants.format = "pep825"`: PEP 825 (Draft) variant wheels written from a build's variant wheels.

Each variant wheel becomes `<name>-<version>-<py>-<abi>-<plat>-<label>.whl` with `variant.json` in its
.dist-info, all variants at one version (the label tells them apart, so PyTorch's `+cu130` local
segment is dropped: from the filename, the .dist-info/.data names and METADATA's Version, RECORD
rewritten), plus the index's `<name>-<version>-variants.json`, under `<out>/pep825/`. Every
document is checked against the PEP's rules (pep825.problems) before anything is renamed into place.
Nothing else reads this folder: publish never sends a labelled wheel to a PyPI-like index.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.errors import UsageError, VerifyError
from kestrel_release.files import fsutil
from kestrel_release.output_dir import manifest
from kestrel_release.records import documents
from kestrel_release.records.build_documents import Pep825Document
from kestrel_release.ui import console
from kestrel_release.variants import pep825

DIR = "pep825"


@dataclass
class Pep825Result:
    out_dir: Path
    wheels: list[str] = field(default_factory=list)
    index_file: str = ""
    labels: list[str] = field(default_factory=list)

    def document(self) -> Pep825Document:
        return Pep825Document(pep825.DRAFT, str(self.out_dir / DIR), self.wheels, self.index_file, self.labels)

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def label_wheel(src: Path, v_json: dict[str, Any], lab: str, dest: Path) -> Path:
    """Write `src` as the labelled wheel in `dest` (see the module doc); returns its path."""
    base, _ = pep825.split_filename(src.name)
    parts = base[: -len(".whl")].split("-")
    old_version = parts[1]
    plain = old_version.split("+")[0]
    parts[1] = plain
    target = dest / pep825.labelled_filename("-".join(parts) + ".whl", lab)
    with zipfile.ZipFile(src) as zf:
        members = [(i, zf.read(i)) for i in zf.infolist() if not i.is_dir()]
    old_dist = next((i.filename.split("/")[0] for i, _ in members if i.filename.endswith(".dist-info/METADATA")), None)
    if old_dist is None:
        raise UsageError(f"{pep825.DRAFT}: {src.name} has no .dist-info/METADATA", "rebuild with kestrel-release build")
    stem = old_dist[: -len(".dist-info")]
    new_stem = stem.replace(old_version, plain) if old_version in stem else stem
    out: list[tuple[zipfile.ZipInfo, bytes]] = []
    for info, data in members:
        top, _, rest = info.filename.partition("/")
        if top in (f"{stem}.dist-info", f"{stem}.data"):
            top = top.replace(stem, new_stem, 1)
        name = f"{top}/{rest}" if rest else top
        if name == f"{new_stem}.dist-info/RECORD":
            continue
        if name == f"{new_stem}.dist-info/METADATA":
            data = re.sub(rb"(?m)^Version: .*$", b"Version: " + plain.encode(), data, count=1)
        copy = zipfile.ZipInfo(name, info.date_time)
        copy.external_attr, copy.compress_type = info.external_attr, zipfile.ZIP_DEFLATED
        out.append((copy, data))
    vj = (json.dumps(v_json, indent=2, sort_keys=True) + "\n").encode()
    info = zipfile.ZipInfo(f"{new_stem}.dist-info/variant.json", out[-1][0].date_time)
    info.external_attr, info.compress_type = 0o644 << 16, zipfile.ZIP_DEFLATED
    out.append((info, vj))
    record = "".join(f"{i.filename},{_record_hash(d)},{len(d)}\n" for i, d in out) + f"{new_stem}.dist-info/RECORD,,\n"
    rinfo = zipfile.ZipInfo(f"{new_stem}.dist-info/RECORD", out[-1][0].date_time)
    rinfo.external_attr, rinfo.compress_type = 0o644 << 16, zipfile.ZIP_DEFLATED
    out.append((rinfo, record.encode()))
    with zipfile.ZipFile(target, "w") as zw:
        for i, d in out:
            zw.writestr(i, d)
    return target


def write(out_dir: Path, package: str | None) -> Pep825Result:
    """<out>/pep825/: a labelled wheel per variant wheel of the manifest, and the index's variants.json."""
    from kestrel_release.config.variants import Variant, VariantError
    from kestrel_release.variants.hub_layout import built_wheels

    out_dir = Path(out_dir)
    data = manifest.load(out_dir, package)
    found = built_wheels(out_dir, package) if data or (out_dir / "variants").is_dir() else []
    rows = [(row.variant, row.filename, path) for row, path, _ in found if row.variant is not None]
    result = Pep825Result(out_dir)
    if not rows:
        return result
    with fsutil.staging_dir(out_dir, "pep825") as stage:
        docs = []
        for record, filename, path in rows:
            try:
                v = Variant.from_json(record)
            except VariantError as exc:
                raise UsageError(f"{pep825.DRAFT}: {filename}: {exc}", "rebuild with kestrel-release build") from None
            lab, doc = pep825.label(v), pep825.variant_json(v)
            _check(doc, lab, filename)
            result.wheels.append(label_wheel(path, doc, lab, stage).name)
            docs.append(doc)
        try:
            merged = pep825.merge(docs)
        except ValueError as exc:
            raise VerifyError(f"{pep825.DRAFT}: {exc}", "report it: the variants of one build disagree") from None
        _check(merged, None, "the index file")
        first = found[0][2]
        version = ((data.version if data else None) or first.version or "0").split("+")[0]
        result.index_file = pep825.index_filename((data.package if data else None) or package or first.package, version)
        (stage / result.index_file).write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        result.labels = sorted(merged["variants"])
        _check_ours(out_dir / DIR)
        fsutil.replace_dir(stage, out_dir / DIR)
    return result


def _check(doc: dict[str, Any], lab: str | None, what: str) -> None:
    found = pep825.problems(doc, lab)
    if found:
        raise VerifyError(f"{pep825.DRAFT}: {what}: {found[0]}", "report it: the tool wrote a document the PEP refuses")


def _check_ours(folder: Path) -> None:
    """Replace only a pep825/ folder this tool wrote (labelled wheels and variants.json files only)."""
    if folder.exists() and any(
        not (p.name.endswith("-variants.json") or pep825.split_filename(p.name)[1]) for p in folder.iterdir()
    ):
        raise UsageError(
            f"{pep825.DRAFT}: {folder} holds files kestrel-release did not write",
            "move it away or choose another --out; nothing was changed",
        )


def render(result: Pep825Result) -> None:
    if not result.wheels:
        console.info(f"{pep825.DRAFT}: no variant wheels in this build, nothing labelled")
        return
    console.warn(
        f"{pep825.DRAFT} is experimental: uv reads it behind a preview flag, pip not at all; never sent to PyPI"
    )
    console.ok(
        f"{pep825.DRAFT}: {len(result.wheels)} variant wheels ({', '.join(result.labels)}) and "
        f"{result.index_file} in {result.out_dir / DIR}"
    )
