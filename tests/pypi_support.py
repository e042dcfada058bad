"""Test support for the publish/sandbox-PyPI tests: tiny real wheels in a build-like output dir.

Wheels are zipped by hand (correct RECORD) so the tests need no build backend and no
network; `make_dist` also writes the release manifest and SHA256SUMS the way build does.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

from kestrel_release import manifest

NAME = "kestrel-kernels"
CANARY_PREFIX = "pypi-AgEIcHlwaS5vcmc"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_bytes(version: str, tag: str, name: str = NAME, payload: bytes = b"", module_version: str = "") -> bytes:
    """A valid wheel whose package prints `__version__` on import (no GPU needed)."""
    pkg = name.replace("-", "_")
    dist = f"{pkg}-{version}.dist-info"
    members = {
        f"{pkg}/__init__.py": f"__version__ = {module_version or version!r}\n".encode(),
        f"{pkg}/blob.bin": payload,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: kestrel-tests\nRoot-Is-Purelib: "
                          f"{'true' if tag.endswith('any') else 'false'}\nTag: {tag}\n").encode(),
    }
    record = "".join(f"{m},{_record_hash(d)},{len(d)}\n" for m, d in members.items()) + f"{dist}/RECORD,,\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in {**members, f"{dist}/RECORD": record.encode()}.items():
            zf.writestr(zipfile.ZipInfo(member, (2020, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


def make_project(root: Path, version: str = "0.1.0", pythons: tuple[str, ...] = ("3.12", "3.13")) -> Path:
    """A kernel-package directory with the [tool.kestrel-release] table the tests need."""
    root.mkdir(parents=True, exist_ok=True)
    py = ", ".join(f'"{p}"' for p in pythons)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{NAME}"\nversion = "{version}"\n\n[tool.kestrel-release]\npython = [{py}]\n'
        '[tool.kestrel-release.verify]\nrequired_sass = []\n[tool.kestrel-release.publish]\n'
        'retries = 2\nbackoff = 0.05\nmax_backoff = 0.2\nparallel = 2\n')
    return root


def make_dist(out: Path, version: str = "0.1.0", pythons: tuple[str, ...] = ("3.12", "3.13"),
              plat: str = "manylinux_2_34_x86_64", payload_size: int = 0, module_version: str = "") -> list[Path]:
    """One wheel per Python in `out`, plus release-manifest.json and SHA256SUMS like build writes."""
    out.mkdir(parents=True, exist_ok=True)
    rows, paths = [], []
    for py in pythons:
        tag = f"cp{py.replace('.', '')}-cp{py.replace('.', '')}-{plat}"
        data = wheel_bytes(version, tag, payload=bytes(range(256)) * (payload_size // 256),
                           module_version=module_version)
        path = out / f"{NAME.replace('-', '_')}-{version}-{tag}.whl"
        path.write_bytes(data)
        paths.append(path)
        rows.append({"filename": path.name, "python": py, "python_tag": tag.split("-")[0], "platform_tag": plat,
                     "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    manifest.save(out, {"package": NAME, "version": version, "git": {"commit": "0" * 40, "dirty": False},
                        "source_date_epoch": 0, "toolchain": {}, "wheels": rows, "kernels": []})
    manifest.write_sums(out, rows)
    return paths
