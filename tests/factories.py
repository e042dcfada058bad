"""Every fake wheel, build output and project the tests use: one module (issue 13).

Wheels are zipped by hand with `zipfile` (not a build backend), so the tests need no backend and no network, and a
test can lie in exactly one place: a RECORD row, a member name, a header. The RECORD is correct unless a test
plants a lie (`record_overrides`, `record_edit`, `record=False`).

- wheels: `wheel_bytes` (the one builder), `write_wheel` (into a directory under its filename), `make_wheel`
  (verify tests' defaults: module-style name, Metadata 2.4), `importable_wheel_bytes` (a package that prints its
  `__version__` on import, for install smoke tests);
- build outputs like `build` writes them (wheels + release-manifest.json + SHA256SUMS): `make_dist`, and
  `build_output` for the GitHub publisher tests;
- projects: `make_project` (publish tests: fast retries), `make_github_project` (a GitHub target),
  `make_verify_project` (a verify table), `make_c_ext_project` (a real C extension `build` can build in seconds);
- zip-level hostile variants: `raw_zip`, `valid_members`, `patch_declared_size`, `corrupt_member_data`
  (PyPI's upload-rule fixtures stay in tests/pypi_rule_wheels.py);
- hostile CUDA binaries: `fatbin_bytes` of `fatbin_entry`s whose headers may lie, `zstd_zeros` (a tiny frame of
  any number of zeros).
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import struct
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kestrel_release.output_dir import manifest
from kestrel_release.records import serde
from kestrel_release.records.manifest import SCHEMA_VERSION, Manifest

NAME = "kestrel-kernels"
TAG = "cp312-cp312-manylinux_2_34_x86_64"
PLAT = "manylinux_2_34_x86_64"
INIT = b"__version__ = '0.1.0'\n"  # the default package module (of version 0.1.0: init_py(version) for others)
CANARY_PREFIX = "pypi-AgEIcHlwaS5vcmc"  # how a PyPI token starts: tests plant it and check it never shows
GITHUB_REPO = "m87-labs/kestrel"
GITHUB_PYTHONS = ("3.12", "3.13")
_FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # byte-identical wheels across calls (re-runs compare hashes)


def init_py(version: str) -> bytes:
    """The default package module of a wheel: its `__version__` is the wheel's (verify compares them)."""
    return f"__version__ = '{version}'\n".encode()


def record_hash(data: bytes) -> str:
    """A RECORD row's hash field: sha256=<urlsafe base64, unpadded>."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


# --- wheels -------------------------------------------------------------------------------------------------------


def dist_files(
    name: str,
    version: str,
    tag: str = TAG,
    metadata_extra: str = "",
    *,
    metadata_version: str = "2.1",
    meta_name: str | None = None,
    meta_version: str | None = None,
    wheel_tags: list[str] | None = None,
    generator: str = "kestrel-tests",
    purelib: bool | None = None,
    dist: str | None = None,
) -> dict[str, bytes]:
    """The .dist-info members (without RECORD) of a wheel for `name` `version`."""
    dist = dist or f"{name.replace('-', '_')}-{version}.dist-info"
    pure = tag.endswith("-none-any") if purelib is None else purelib
    metadata = (
        f"Metadata-Version: {metadata_version}\nName: {meta_name or name}\nVersion: {meta_version or version}\n"
        f"{metadata_extra}"
    )
    tags = "".join(f"Tag: {t}\n" for t in (wheel_tags or [tag]))
    wheel = f"Wheel-Version: 1.0\nGenerator: {generator}\nRoot-Is-Purelib: {'true' if pure else 'false'}\n{tags}"
    return {f"{dist}/METADATA": metadata.encode(), f"{dist}/WHEEL": wheel.encode()}


def wheel_bytes(
    name: str = NAME,
    version: str = "0.1.0",
    *,
    tag: str = TAG,
    files: dict[str, bytes] | None = None,
    record: bool = True,
    record_overrides: dict[str, str] | None = None,
    record_edit: Callable[[list[list[str]]], list[list[str]]] | None = None,
    metadata_extra: str = "",
    compression: int = zipfile.ZIP_DEFLATED,
    date_time: tuple[int, ...] | None = None,
    extra_members: dict[str, bytes] | None = None,
    **dist_info: object,
) -> bytes:
    """A wheel as bytes: `files` (default: the package's __init__.py), then METADATA, WHEEL, `extra_members`, RECORD.

    `record_overrides` {member: 'member,sha256=...,size'} or `record_edit(rows)` plant RECORD lies; `date_time`
    fixes every member's timestamp (stored, not deflated: zipfile's rule for ZipInfo entries); `dist_info` goes to
    `dist_files` (metadata_version, meta_name, meta_version, wheel_tags, generator, purelib, dist).
    """
    pkg = name.replace("-", "_")
    members = dict(files if files is not None else {f"{pkg}/__init__.py": init_py(version)})
    info = dist_files(name, version, tag, metadata_extra, **dist_info)  # type: ignore[arg-type]
    members.update(info)
    members.update(extra_members or {})
    dist = next(iter(info)).split("/")[0]
    rows = [[member, record_hash(data), str(len(data))] for member, data in members.items()]
    if record_edit:
        rows = record_edit(rows)
    lines = [(record_overrides or {}).get(row[0], ",".join(row)) for row in rows] + [f"{dist}/RECORD,,"]
    if record:
        members[f"{dist}/RECORD"] = ("\n".join(lines) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for member, data in members.items():
            zf.writestr(zipfile.ZipInfo(member, date_time) if date_time else member, data)
    return buf.getvalue()


def wheel_name(name: str = NAME, version: str = "0.1.0", tag: str = TAG) -> str:
    return f"{name.replace('-', '_')}-{version}-{tag}.whl"


def write_wheel(
    directory: Path, name: str = NAME, version: str = "0.1.0", tag: str = TAG, *, filename: str | None = None, **kwargs
) -> Path:
    """Write a wheel into `directory` (created) under its proper filename (or `filename`); returns the path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (filename or wheel_name(name, version, tag))
    path.write_bytes(wheel_bytes(name, version, tag=tag, **kwargs))
    return path


def make_wheel(
    directory: Path,
    files: dict[str, bytes] | None = None,
    *,
    name: str = "kestrel_kernels",
    version: str = "0.1.0",
    tag: str = "cp311-cp311-manylinux_2_34_x86_64",
    metadata_version: str = "2.4",
    meta_name: str | None = None,
    meta_version: str | None = None,
    wheel_tags: list[str] | None = None,
    record_edit=None,
    compression=zipfile.ZIP_DEFLATED,
    filename: str | None = None,
    extra_metadata: str = "",
) -> Path:
    """The verify tests' wheel: `name` is the module name, Metadata 2.4, a platform wheel (Root-Is-Purelib false)."""
    files = dict(files if files is not None else {f"{name}/__init__.py": init_py(version)})
    return write_wheel(
        directory,
        name,
        version,
        tag,
        filename=filename or f"{name}-{version}-{tag}.whl",
        files=files,
        record_edit=record_edit,
        metadata_extra=extra_metadata,
        compression=compression,
        metadata_version=metadata_version,
        meta_name=meta_name or name.replace("_", "-"),
        meta_version=meta_version,
        wheel_tags=wheel_tags,
        generator="test",
        purelib=False,
        dist=f"{name}-{version}.dist-info",
    )


def importable_wheel_bytes(
    version: str, tag: str, name: str = NAME, payload: bytes = b"", module_version: str = "", init: bytes | None = None
) -> bytes:
    """A valid wheel whose package prints `__version__` on import (no GPU needed), plus a `blob.bin` payload."""
    pkg = name.replace("-", "_")
    # A module_version is computed on import (str(...)): verify's version rule reads literals, so such a
    # wheel gets through to the smoke test, which imports it.
    text = f"__version__ = str({module_version!r})\n" if module_version else f"__version__ = {version!r}\n"
    files = {f"{pkg}/__init__.py": text.encode() if init is None else init, f"{pkg}/blob.bin": payload}
    purelib = tag.endswith("any")
    return wheel_bytes(name, version, tag=tag, files=files, date_time=_FIXED_TIME, purelib=purelib)


# --- build outputs ------------------------------------------------------------------------------------------------


def save_manifest(out: Path, fields: dict[str, Any], name: str = manifest.MANIFEST) -> Manifest:
    """A manifest written from plain fields through the record's one serializer (unknown fields fail); a row
    naming only its filename gets the size and sha256 of that file in `out` (what build records)."""
    rows = []
    for row in fields.get("wheels", []):
        path = Path(out) / row["filename"]
        data = path.read_bytes() if path.is_file() else b""
        rows.append({"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), **row})
    record = serde.from_json(Manifest, {"schema_version": SCHEMA_VERSION, **fields, "wheels": rows})
    manifest.save(out, record, name)
    return record


def _save_output(out: Path, package: str, version: str, commit: str, rows: list[dict], **fields: object) -> None:
    record = save_manifest(
        out,
        {
            "package": package,
            "version": version,
            "git": {"commit": commit, "dirty": False},
            **fields,
            "wheels": rows,
            "kernels": [],
        },
    )
    manifest.write_sums(out, record.wheels)


def _row(path: Path, python: str, plat: str) -> dict:
    data = path.read_bytes()
    return {
        "filename": path.name,
        "python": python,
        "python_tag": "cp" + python.replace(".", ""),
        "platform_tag": plat,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def make_dist(
    out: Path,
    version: str = "0.1.0",
    pythons: tuple[str, ...] = ("3.12", "3.13"),
    plat: str = PLAT,
    payload_size: int = 0,
    module_version: str = "",
    init: bytes | None = None,
) -> list[Path]:
    """One wheel per Python in `out`, plus release-manifest.json and SHA256SUMS like build writes
    (`init`: the package's __init__.py as given, e.g. a stale `__version__` literal)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for py in pythons:
        tag = f"cp{py.replace('.', '')}-cp{py.replace('.', '')}-{plat}"
        data = importable_wheel_bytes(
            version, tag, payload=bytes(range(256)) * (payload_size // 256), module_version=module_version, init=init
        )
        path = out / f"{NAME.replace('-', '_')}-{version}-{tag}.whl"
        path.write_bytes(data)
        paths.append(path)
    rows = [_row(path, py, plat) for path, py in zip(paths, pythons, strict=True)]
    _save_output(out, NAME, version, "0" * 40, rows, source_date_epoch=0, toolchain={})
    return paths


def _github_wheel(out: Path, version: str, python: str, payload: str = "", extra: dict | None = None) -> Path:
    tag = "cp" + python.replace(".", "")
    files = {"kestrel_kernels/__init__.py": f'__version__ = "{version}"\n{payload}'.encode()}
    return write_wheel(
        out,
        NAME,
        version,
        f"{tag}-{tag}-{PLAT}",
        files=files,
        extra_members=extra,
        date_time=(2024, 1, 1, 0, 0, 0),
        purelib=False,
    )


def build_output(project: Path, version: str, commit: str, payload: str = "", extra: dict | None = None) -> Path:
    """dist-all/ with one wheel per Python, a manifest naming `commit`, and SHA256SUMS (GitHub publisher tests).

    Like a real bump + build, the project's pyproject then declares `version` too.
    """
    pyproject = project / "pyproject.toml"
    pyproject.write_text(re.sub(r'(?m)^version = ".*"$', f'version = "{version}"', pyproject.read_text(), count=1))
    out = project / "dist-all"
    for old in out.glob("*.whl"):
        old.unlink()
    wheels = [_github_wheel(out, version, py, payload, extra) for py in GITHUB_PYTHONS]
    _save_output(out, NAME, version, commit, [_row(w, py, PLAT) for w, py in zip(wheels, GITHUB_PYTHONS, strict=True)])
    return out


def variant_name(torch: str, cuda: str) -> str:
    """kernel-builder's build-variant name (kestrel_release/config/variants.py: Variant.name)."""
    return f"torch{torch.replace('.', '')}-cxx11-cu{cuda.replace('.', '')}-x86_64-linux"


def make_variant_dist(
    out: Path,
    version: str = "0.1.0",
    variants: tuple[tuple[str, str, bool], ...] = (("2.13", "13.0", True), ("2.13", "12.6", False)),
    tag: str = "py3-none-any",
    name: str = NAME,
    payload: bytes = b"",
) -> dict[str, Path]:
    """A variant build output as the variants contract lays it out: each (torch, cuda, default) variant's wheel in
    `out/variants/<variant name>/` with its own manifest whose rows carry a `variant` record; the default variant's
    wheel (plain version) also in `out/` (what PyPI gets); the others versioned `<version>+cuXYZ`.
    Returns variant name -> its wheel (an importable package printing its version; `payload`: other bytes)."""
    wheels: dict[str, Path] = {}
    for torch, cuda, default in variants:
        cu = "cu" + cuda.replace(".", "")
        full = version if default else f"{version}+{cu}"
        record = {"torch": torch, "cuda": cuda, "cxx11_abi": True, "os": "linux", "arch": "x86_64", "default": default}
        folders = [out / "variants" / variant_name(torch, cuda)] + ([out] if default else [])
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{name.replace('-', '_')}-{full}-{tag}.whl"
            path.write_bytes(importable_wheel_bytes(full, tag, name=name, payload=payload))
            row = {**_row(path, "3", tag.split("-")[-1]), "variant": record}
            _save_output(folder, name, version, "0" * 40, [row], source_date_epoch=0, toolchain={})
            wheels.setdefault(variant_name(torch, cuda), path)
    return wheels


# --- projects -----------------------------------------------------------------------------------------------------


def make_project(root: Path, version: str = "0.1.0", pythons: tuple[str, ...] = ("3.12", "3.13")) -> Path:
    """A kernel-package directory for the publish tests: no SASS required, fast retries, two uploads at a time."""
    root.mkdir(parents=True, exist_ok=True)
    py = ", ".join(f'"{p}"' for p in pythons)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{NAME}"\nversion = "{version}"\n\n[tool.kestrel-release]\npython = [{py}]\n'
        "[tool.kestrel-release.verify]\nrequired_sass = []\n[tool.kestrel-release.publish]\n"
        "retries = 2\nbackoff = 0.05\nmax_backoff = 0.2\nparallel = 2\n"
    )
    return root


def make_github_project(root: Path, version: str, *, retries: int = 2, extra: str = "") -> Path:
    """A kernel-package directory with a GitHub target whose config verifies the tiny wheels (no SASS required)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f"""\
[project]
name = "kestrel-kernels"
version = "{version}"

[tool.kestrel-release]
python = {list(GITHUB_PYTHONS)!r}
out_dir = "dist-all"

[tool.kestrel-release.verify]
required_sass = []

[tool.kestrel-release.publish]
retries = {retries}
backoff = 0.01
max_backoff = 0.05
timeout = 10
rate_limit_wait_cap = 5

[tool.kestrel-release.targets.github]
repo = "{GITHUB_REPO}"
{extra}""")
    return root


def make_verify_project(directory: Path, *, pythons=("3.11",), verify: str = "") -> Path:
    """A minimal kernel-package project whose config verify reads; `verify` is the body of its verify table."""
    directory.mkdir(parents=True, exist_ok=True)
    py = ", ".join(f'"{p}"' for p in pythons)
    (directory / "pyproject.toml").write_text(
        f'[project]\nname = "kestrel-kernels"\nversion = "0.1.0"\n\n'
        f"[tool.kestrel-release]\npython = [{py}]\n\n[tool.kestrel-release.verify]\n{verify}\n"
    )
    return directory


_C_EXT_PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "mini-ext"
version = "{version}"

[tool.kestrel-release]
python = {pythons}
out_dir = "dist-all"
version_files = [{{path = "src/mini_ext/__init__.py", pattern = "__version__ = \\"{{version}}\\""}}]

[tool.kestrel-release.verify]
required_sass = []
"""
_C_EXT_SETUP = """from setuptools import Extension, setup

setup(packages=["mini_ext"], package_dir={"": "src"},
      ext_modules=[Extension("mini_ext._c", ["src/c.c"])])
"""
C_EXT_SOURCE = """#include <Python.h>
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&mod); }
"""


def make_c_ext_project(root: Path, version: str = "0.1.0", pythons: tuple[str, ...] | None = None) -> Path:
    """A tiny C-extension project (mini-ext) with a [tool.kestrel-release] table: builds in seconds, no CUDA.

    It builds for the Python running the tests unless told otherwise: one every machine running them has."""
    if pythons is None:
        pythons = (f"{sys.version_info.major}.{sys.version_info.minor}",)
    (root / "src" / "mini_ext").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        _C_EXT_PYPROJECT.format(version=version, pythons=list(pythons)).replace("'", '"')
    )
    (root / "setup.py").write_text(_C_EXT_SETUP)
    (root / "src" / "c.c").write_text(C_EXT_SOURCE)
    (root / "src" / "mini_ext" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    return root


_KERNEL_EXT_BINDING = """#include <Python.h>
#include "kernel.h"
static PyObject *value(PyObject *self, PyObject *args) { return PyLong_FromLong(kernel_value()); }
static PyMethodDef methods[] = {{"value", value, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, methods};
PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&mod); }
"""
_KERNEL_EXT_KERNEL = """#include "kernel.h"
/* No Python header: the same object for every Python, as the device code of a CUDA extension. */
long kernel_value(void) {
#ifdef EXTRA
    return VALUE + EXTRA;
#else
    return VALUE;
#endif
}
"""


def make_kernel_ext_project(root: Path, pythons: tuple[str, ...] | None = None, value: int = 1) -> Path:
    """mini-ext with a Python-independent file beside its binding: src/kernel.c (`kernel_value()`, VALUE from
    src/kernel.h, plus EXTRA when a flag defines it) and src/c.c (`mini_ext._c.value()` returns it), as a
    CUDA extension's kernels beside its bindings; for the compile cache's tests."""
    make_c_ext_project(root, pythons=pythons)
    (root / "src" / "c.c").write_text(_KERNEL_EXT_BINDING)
    (root / "src" / "kernel.c").write_text(_KERNEL_EXT_KERNEL)
    (root / "src" / "kernel.h").write_text(f"#define VALUE {value}\nlong kernel_value(void);\n")
    (root / "setup.py").write_text(_C_EXT_SETUP.replace('["src/c.c"]', '["src/c.c", "src/kernel.c"]'))
    return root


DLOPEN_EXT_SOURCE = """#include <Python.h>
#include <dlfcn.h>
#include <stdlib.h>
/* dlopen moved into libc in glibc 2.34: a build linked there needs GLIBC_2.34, one linked on 2.31 does not. */
static PyObject *probe(PyObject *self, PyObject *args) {
    void *h = dlopen(getenv("MINI_EXT_LIB") ? getenv("MINI_EXT_LIB") : "libm.so.6", RTLD_NOW);
    if (h == NULL) Py_RETURN_FALSE;
    dlclose(h);
    Py_RETURN_TRUE;
}
static PyMethodDef methods[] = {{"probe", probe, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, methods};
PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&mod); }
"""


def make_dlopen_ext_project(root: Path, pythons: tuple[str, ...] = ("3.9",)) -> Path:
    """mini-ext whose module calls dlopen (`mini_ext._c.probe()` is True when it works), linked with -ldl
    so it also links where dlopen is still in libdl (glibc < 2.34)."""
    make_c_ext_project(root, pythons=pythons)
    (root / "src" / "c.c").write_text(DLOPEN_EXT_SOURCE)
    (root / "setup.py").write_text(_C_EXT_SETUP.replace('["src/c.c"]', '["src/c.c"], libraries=["dl"]'))
    return root


# --- hostile zips -------------------------------------------------------------------------------------------------


def raw_zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    """A zip with exactly these entries (duplicates and odd names allowed)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on duplicate names: that is the point
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for info, data in entries:
                zf.writestr(info, data)
    return buf.getvalue()


def valid_members(name: str = NAME, version: str = "0.1.0", tag: str = TAG) -> list[tuple[str, bytes]]:
    """The members of a valid wheel (RECORD included), for building variants with `raw_zip`."""
    with zipfile.ZipFile(io.BytesIO(wheel_bytes(name, version, tag=tag))) as zf:
        return [(n, zf.read(n)) for n in zf.namelist()]


def _central_entries(data: bytes):
    """(offset, name) of every central directory entry."""
    pos = data.find(b"PK\x01\x02")
    while pos != -1:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        yield pos, bytes(data[pos + 46 : pos + 46 + name_len])
        pos = data.find(b"PK\x01\x02", pos + 4)


def patch_declared_size(data: bytes, member: str, size: int) -> bytes:
    """Make the central directory lie about `member`'s uncompressed size."""
    out = bytearray(data)
    for pos, name in _central_entries(data):
        if name == member.encode():
            struct.pack_into("<I", out, pos + 24, size)
    return bytes(out)


def corrupt_member_data(data: bytes, member: str) -> bytes:
    """Overwrite the middle of `member`'s compressed bytes with garbage."""
    out = bytearray(data)
    for pos, name in _central_entries(data):
        if name == member.encode():
            csize = struct.unpack_from("<I", data, pos + 20)[0]
            local = struct.unpack_from("<I", data, pos + 42)[0]
            name_len, extra_len = struct.unpack_from("<HH", data, local + 26)
            start = local + 30 + name_len + extra_len
            out[start : start + csize] = bytes([0xFF]) * csize
    return bytes(out)


# --- hostile CUDA binaries (layouts: docs/cuda-binaries.md) --------------------------------------------------------

FATBIN_PTX, FATBIN_ELF = 1, 2
FATBIN_DEBUG, FATBIN_ZSTD, FATBIN_LZ4 = 0x2, 0x8000, 0x2000


def zstd_zeros(size: int) -> bytes:
    """A standard zstd frame of `size` zero bytes built from RLE blocks: 4 bytes per 128 KiB, no content size
    in the frame header (so a decoder cannot know the size before decoding it). 4 GiB of zeros is 128 KiB."""
    out = b"\x28\xb5\x2f\xfd" + bytes([0x00, 0x38])  # magic, no FCS/checksum, window 128 KiB
    while size > 0:
        block = min(1 << 17, size)
        size -= block
        out += ((block << 3) | (1 << 1) | (size == 0)).to_bytes(3, "little") + b"\0"  # RLE block of one byte 0
    return out


def fatbin_entry(
    kind: int, sm: int, payload: bytes, *, flags: int = 0x11, uncompressed_size: int = 0, identifier: bytes = b""
) -> bytes:
    """One fat-binary entry: a 64-byte header (+ the identifier), then `payload` as stored bytes. Set a
    compression flag in `flags` with `uncompressed_size` to declare what the payload inflates to."""
    ident = identifier + b"\0" if identifier else b""
    ident += bytes(-len(ident) % 8)
    header_size = 64 + len(ident)
    compressed = len(payload) if flags & (FATBIN_ZSTD | FATBIN_LZ4) else 0
    stored = payload + bytes(-len(payload) % 8)
    header = struct.pack(
        "<HHIQIIHHIIIQQQ",
        kind,
        0x0101,
        header_size,
        len(stored),
        compressed,
        0,
        0,
        8,
        sm,
        64 if ident else 0,
        len(ident),
        flags,
        0,
        uncompressed_size,
    )
    return header + ident + stored


def fatbin_bytes(entries: list[bytes]) -> bytes:
    """A fat-binary container (magic 0xBA55ED50) holding `entries` (from fatbin_entry)."""
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


# A project whose version lives in pyproject.toml and two version_files, written with comments and odd
# spacing everywhere (version tests: everything but the version must survive byte for byte).
# Comments everywhere, odd spacing, literal quotes, CRLF-free but a trailing comment
# on the version line: everything but the version must survive byte for byte.
VERSION_PYPROJECT = """\
# kestrel-kernels: prebuilt CUDA kernels   (top comment, two spaces inside)

[build-system]
requires = ["scikit-build-core>=0.10",   # the backend
            "nanobind"]                   # bindings
build-backend = "scikit_build_core.build"

[project]   # the package
name    = "demo-kernels"
# the version below is owned by kestrel-release
version =    '0.1.0'      # single quotes, kept
description = 'Kernels'   # literal string
dependencies = [
  "torch>=2.4",  # runtime
]

  [tool.kestrel-release]          # indented table header
  python = ["3.12",   "3.13"]
  version_files = [
    { path = "pkg/__init__.py", pattern = '__version__ = "{version}"' },  # module
    { path = "pkg/_meta.py",    pattern = "VERSION = '{version}'" },
  ]
# trailing comment without newline at end"""


def make_version_project(root: Path, pyproject: str = VERSION_PYPROJECT) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text(pyproject)
    (root / "pkg" / "__init__.py").write_text('"""demo."""\n__version__ = "0.1.0"\n')
    (root / "pkg" / "_meta.py").write_text("VERSION = '0.1.0'\nOTHER = '9.9.9'\n")
    return root


def version_snapshot(root: Path) -> dict[str, bytes]:
    return {p: (root / p).read_bytes() for p in ("pyproject.toml", "pkg/__init__.py", "pkg/_meta.py")}
