"""PyPI's torch CUDA read over HTTP from a local index serving recorded torch metadata (never the real
PyPI): the JSON API's newest release of each minor, then its wheel's PEP 658 metadata."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kestrel_release.adapters.pypi import torch_cuda
from kestrel_release.config_loader import load as config
from kestrel_release.errors import ConfigError
from tests.integration.hostile_http import HostileServer

DATA = Path(__file__).resolve().parents[2] / "data" / "pypi" / "torch"
WHEEL_291 = "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl"
WHEEL_213 = "torch-2.13.0-cp314-cp314-manylinux_2_28_x86_64.whl"


def _file(name: str, yanked: bool = False) -> dict:
    return {"filename": name, "url": f"../../packages/{name}", "yanked": yanked}


def _index(srv: HostileServer) -> HostileServer:
    releases = {
        "2.9.0": [_file("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl")],  # older patch: not read
        "2.9.1": [_file("torch-2.9.1-cp312-cp312-macosx_14_0_arm64.whl"), _file(WHEEL_291)],
        "2.13.0": [_file("torch-2.13.0-cp313-cp313-manylinux_2_28_x86_64.whl"), _file(WHEEL_213)],  # first: 404
        "2.13.1rc1": [_file("torch-2.13.1rc1-cp312-cp312-manylinux_2_28_x86_64.whl")],  # not a final release
    }
    srv.route("GET", "/pypi/torch/json", body=json.dumps({"releases": releases}).encode())
    for name in (WHEEL_291, WHEEL_213):
        srv.route("GET", f"/packages/{name}.metadata", body=(DATA / f"{name}.metadata").read_bytes())
    return srv


def _project(tmp_path: Path, torch: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
        [project]
        name = "ext"
        version = "1.0"

        [tool.kestrel-release]
        cuda_arch = ["90a"]

        [tool.kestrel-release.variants]
        torch = {torch}
        """)
    )
    return tmp_path


def test_torch_minors_alone_get_the_cuda_their_pypi_wheels_pin(tmp_path, monkeypatch):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    with _index(HostileServer()) as srv:
        monkeypatch.setenv(torch_cuda.ROOT_ENV, srv.url)
        v = config.load(_project(tmp_path, '["2.9", "2.13"]'), env={}).variants
        asked = [r[1] for r in srv.requests]
    assert v is not None
    assert {(x.torch, x.cuda) for x in v.matrix()} == {("2.9", "12.8"), ("2.13", "13.0")}
    assert "/packages/torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl.metadata" not in asked
    assert not any("rc1" in path or "macosx" in path for path in asked)
    cached = json.loads((tmp_path / "cache" / torch_cuda.CACHE_FILE).read_text())[srv.url]
    assert {m: e["cuda"] for m, e in cached.items()} == {"2.9": "12.8", "2.13": "13.0"}


def test_a_second_load_reads_the_cache_and_a_minor_the_index_lacks_is_one_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    with _index(HostileServer()) as srv:
        monkeypatch.setenv(torch_cuda.ROOT_ENV, srv.url)
        config.load(_project(tmp_path, '["2.13"]'), env={})
        before = len(srv.requests)
        config.load(_project(tmp_path, '["2.13"]'), env={})
        assert len(srv.requests) == before  # fresh: PyPI is not asked again
        with pytest.raises(ConfigError) as err:
            config.load(_project(tmp_path, '["2.13", "2.99"]'), env={})
    assert (
        f"`cuda` is not given and the CUDA of PyPI's torch 2.99 could not be read from {srv.url}: "
        'list the CUDAs to build (e.g. cuda = ["13.0"])'
    ) in str(err.value)


WHEEL_215 = "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"


def _torch_wheel() -> bytes:
    """A zip laid out as torch's: a large first member (its ~550 MB of libraries; 1 MB here, so the end record,
    the central directory and METADATA are three reads apart), then dist-info/METADATA, the recorded one."""
    import io
    import random
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("torch/lib/libtorch_cpu.so", random.Random(0).randbytes(1024 * 1024))
        zf.writestr("torch-2.15.0.dist-info/METADATA", (DATA / f"{WHEEL_215}.metadata").read_bytes())
    return buf.getvalue()


def _mirror(srv: HostileServer, ranged: bool) -> HostileServer:
    """An index like the mirror these machines reach: no PEP 658 file (404), the wheel with byte ranges."""
    releases = {"2.15.0": [_file(WHEEL_215)]}
    srv.route("GET", "/pypi/torch/json", body=json.dumps({"releases": releases}).encode())
    srv.route("GET", f"/packages/{WHEEL_215}.metadata", status=404)
    srv.route("GET", f"/packages/{WHEEL_215}", body=_torch_wheel(), ranged=ranged)
    return srv


def test_an_index_without_metadata_files_is_read_from_the_wheel_by_byte_ranges(tmp_path, monkeypatch):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    with _mirror(HostileServer(), ranged=True) as srv:
        monkeypatch.setenv(torch_cuda.ROOT_ENV, srv.url)
        v = config.load(_project(tmp_path, '["2.15"]'), env={}).variants
        ranges = [r[2].get("Range") for r in srv.requests if r[1] == f"/packages/{WHEEL_215}"]
    assert v is not None
    assert {(x.torch, x.cuda, x.name) for x in v.matrix()} == {("2.15", "13.2", "torch215-cxx11-cu132-x86_64-linux")}
    assert len(ranges) == 3 and all(r and r.startswith("bytes=") for r in ranges), ranges  # never the whole wheel
    cached = json.loads((tmp_path / "cache" / torch_cuda.CACHE_FILE).read_text())[srv.url]
    assert cached["2.15"]["cuda"] == "13.2" and cached["2.15"]["read"].startswith("20")


def test_a_server_that_ignores_byte_ranges_is_not_downloaded_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    with _mirror(HostileServer(), ranged=False) as srv:
        monkeypatch.setenv(torch_cuda.ROOT_ENV, srv.url)
        with pytest.raises(ConfigError) as err:
            config.load(_project(tmp_path, '["2.15"]'), env={})
    assert "the CUDA of PyPI's torch 2.15 could not be read" in str(err.value)
