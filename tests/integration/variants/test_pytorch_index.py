"""Which CUDAs PyTorch's own index serves a torch minor for, read over HTTP from a local server serving a page
in the index's format (tests/data/pytorch/torch-simple.html; never the real index), cached with the day read,
and a variant whose torch PyTorch does not serve for its CUDA left with why, before any build env is made."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from kestrel_release.adapters import pytorch_index
from kestrel_release.config.variants import Variant, VariantsConfig
from kestrel_release.project.build_env import TorchPin
from kestrel_release.stages.build_wheels import variant_env
from tests.integration.hostile_http import HostileServer

PAGE = Path(__file__).resolve().parents[2] / "data" / "pytorch" / "torch-simple.html"


def _server() -> HostileServer:
    srv = HostileServer()
    srv.route("GET", "/whl/torch/", body=PAGE.read_bytes())
    return srv


def test_the_cudas_of_each_minor_are_read_from_the_page_and_cached_with_the_day(tmp_path):
    with _server() as srv:
        root = f"{srv.url}/whl"
        got = pytorch_index.index_cudas(["2.13", "2.15", "2.16", "2.99"], tmp_path, root)
        again = pytorch_index.index_cudas(["2.14"], tmp_path, root)  # one page holds every minor: read once
        asked = [r[1] for r in srv.requests]
    assert got == {"2.13": ["12.6", "13.0", "13.2"], "2.15": ["13.0", "13.2"]}  # no nightly, no cpu/rocm/xpu
    assert again == {"2.14": ["12.6", "13.0", "13.2"]}
    assert asked == ["/whl/torch/"]
    cached = json.loads((tmp_path / pytorch_index.CACHE_FILE).read_text())[root]
    assert cached["2.15"]["cuda"] == ["13.0", "13.2"] and cached["2.15"]["read"][:4].isdigit()


def test_a_stale_answer_is_used_with_a_warning_when_the_index_is_gone(tmp_path, capsys):
    with _server() as srv:
        root = f"{srv.url}/whl"
        pytorch_index.index_cudas(["2.15"], tmp_path, root)
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=8)
    assert pytorch_index.index_cudas(["2.15"], tmp_path, root, now=later) == {"2.15": ["13.0", "13.2"]}
    err = capsys.readouterr().err
    assert "PyTorch's index could not be read again" in err and "using the cached answers: torch 2.15 (read " in err


def test_a_variant_pytorch_does_not_serve_is_left_with_why(tmp_path, monkeypatch):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    cfg = VariantsConfig(torch=("2.15",), cuda=("12.6", "13.0"))
    with _server() as srv:
        monkeypatch.setenv(pytorch_index.ROOT_ENV, f"{srv.url}/whl")
        old = Variant("2.15", "12.6")
        why = variant_env.unserved(cfg, old, {"3.12": TorchPin(old.requirement, index=cfg.index_url("12.6"))})
        new = Variant("2.15", "13.0")
        fine = variant_env.unserved(cfg, new, {"3.12": TorchPin(new.requirement, index=cfg.index_url("13.0"))})
        from_pypi = variant_env.unserved(cfg, old, {"3.12": TorchPin(old.requirement)})  # not PyTorch's index
    assert why == f"PyTorch's index serves torch 2.15 for CUDA 13.0, 13.2, not 12.6 (read from {srv.url}/whl/torch/)"
    assert fine == "" and from_pypi == ""
