"""A built wheel made into a variant wheel: METADATA, dist-info, RECORD and filename change together."""

from __future__ import annotations

import base64
import hashlib
import zipfile

from kestrel_release.stages.build_wheels.variant_wheel import retag, rewrite_metadata
from tests.factories import write_wheel

TAG = "cp39-abi3-manylinux_2_28_x86_64"


def _record_ok(wheel) -> bool:
    with zipfile.ZipFile(wheel) as z:
        record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        rows = [r.split(",") for r in z.read(record).decode().splitlines()]
        for name, digest, size in rows:
            if name == record:
                continue
            data = z.read(name)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if (digest, size) != (want, str(len(data))):
                return False
        return {r[0] for r in rows} == set(z.namelist())


def test_local_version_pins_torch_and_keeps_record_true(tmp_path):
    wheel = write_wheel(tmp_path, "torch-ext", "1.0", TAG, metadata_extra="Requires-Dist: torch>=2.6\n")
    out = retag(wheel, name="torch-ext", version="1.0+cu126", torch_pin="torch==2.13.*", source_date_epoch=0)
    assert out.name == f"torch_ext-1.0+cu126-{TAG}.whl" and not wheel.exists()
    with zipfile.ZipFile(out) as z:
        meta = z.read("torch_ext-1.0+cu126.dist-info/METADATA").decode()
        assert not any(n.startswith("torch_ext-1.0.dist-info/") for n in z.namelist())
    assert "Version: 1.0+cu126" in meta
    assert [ln for ln in meta.splitlines() if ln.startswith("Requires-Dist")] == ["Requires-Dist: torch==2.13.*"]
    assert _record_ok(out)


def test_package_suffix_renames_the_project(tmp_path):
    wheel = write_wheel(tmp_path, "torch-ext", "1.0", TAG)
    out = retag(wheel, name="torch-ext-cu12", version="1.0", torch_pin="torch==2.13.*", source_date_epoch=0)
    assert out.name == f"torch_ext_cu12-1.0-{TAG}.whl"
    with zipfile.ZipFile(out) as z:
        meta = z.read("torch_ext_cu12-1.0.dist-info/METADATA").decode()
    assert "Name: torch-ext-cu12" in meta and "Requires-Dist: torch==2.13.*" in meta
    assert _record_ok(out)


def test_metadata_rewrite_keeps_conditional_torch_and_the_body():
    text = (
        "Metadata-Version: 2.4\nName: x\nVersion: 1\nRequires-Dist: numpy\nRequires-Dist: torch>=2; extra == 'cpu'\n"
        "Requires-Dist: Torch >=2.6\n\nlong description\nVersion: not a header\n"
    )
    out = rewrite_metadata(text, name="x", version="1+cu130", torch_pin="torch==2.14.*")
    assert out.endswith("\n\nlong description\nVersion: not a header\n")
    head = out.split("\n\n")[0].splitlines()
    assert head == [
        "Metadata-Version: 2.4",
        "Name: x",
        "Version: 1+cu130",
        "Requires-Dist: numpy",
        "Requires-Dist: torch>=2; extra == 'cpu'",
        "Requires-Dist: torch==2.14.*",
    ]


def test_headers_only_metadata_gets_the_pin_among_the_headers():
    out = rewrite_metadata(
        "Metadata-Version: 2.4\nName: x\nVersion: 1\n", name="x", version="1", torch_pin="torch==2.14.*"
    )
    assert out == "Metadata-Version: 2.4\nName: x\nVersion: 1\nRequires-Dist: torch==2.14.*\n"
