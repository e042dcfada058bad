"""PyPI's torch CUDA: read from the wheels' metadata (recorded), cached with the day read, stale answers
refreshed when PyPI answers and used with a warning when it does not."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from kestrel_release.adapters.pypi import torch_cuda

DATA = Path(__file__).resolve().parents[3] / "data" / "pypi" / "torch"
NOW = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    ("name", "cuda"),
    [
        ("torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl.metadata", "12.8"),  # nvidia-cuda-runtime-cu12==12.8.90
        ("torch-2.13.0-cp314-cp314-manylinux_2_28_x86_64.whl.metadata", "13.0"),  # cuda-toolkit[...]==13.0.3
    ],
)
def test_cuda_of_recorded_torch_metadata(name: str, cuda: str) -> None:
    assert torch_cuda.cuda_of_metadata((DATA / name).read_text()) == cuda


def test_a_wheel_without_a_cuda_pin_has_none() -> None:
    assert torch_cuda.cuda_of_metadata("Metadata-Version: 2.4\nName: torch\nRequires-Dist: sympy>=1.13.3\n") is None


def _cache(tmp_path: Path, entries: dict) -> None:
    (tmp_path / torch_cuda.CACHE_FILE).write_text(json.dumps({torch_cuda.PYPI: entries}))


def test_a_fresh_cache_is_used_without_asking_pypi(tmp_path, monkeypatch) -> None:
    _cache(tmp_path, {"2.14": {"cuda": "13.0", "read": "2026-11-27T00:00:00+00:00"}})
    monkeypatch.setattr(torch_cuda, "read_from_index", lambda *a: pytest.fail("asked PyPI"))
    assert torch_cuda.pypi_cuda(["2.14"], tmp_path, now=NOW) == {"2.14": "13.0"}


def test_a_stale_answer_is_read_again_and_the_day_recorded(tmp_path, monkeypatch) -> None:
    _cache(tmp_path, {"2.14": {"cuda": "13.0", "read": "2026-11-01T00:00:00+00:00"}})
    monkeypatch.setattr(torch_cuda, "read_from_index", lambda minors, root: {"2.14": "13.2"})
    assert torch_cuda.pypi_cuda(["2.14"], tmp_path, now=NOW) == {"2.14": "13.2"}
    saved = json.loads((tmp_path / torch_cuda.CACHE_FILE).read_text())[torch_cuda.PYPI]["2.14"]
    assert saved == {"cuda": "13.2", "read": "2026-11-29T00:00:00+00:00"}


def test_a_stale_answer_is_used_with_a_warning_when_pypi_is_unreachable(tmp_path, monkeypatch, capsys) -> None:
    _cache(tmp_path, {"2.14": {"cuda": "13.0", "read": "2026-11-01T00:00:00+00:00"}})

    def unreachable(minors, root):
        raise torch_cuda.Unreadable("https://pypi.org/pypi/torch/json could not be read (URLError)")

    monkeypatch.setattr(torch_cuda, "read_from_index", unreachable)
    assert torch_cuda.pypi_cuda(["2.14", "2.15"], tmp_path, now=NOW) == {"2.14": "13.0"}
    err = " ".join(capsys.readouterr().err.split())
    assert (
        "PyPI's torch CUDA could not be refreshed (https://pypi.org/pypi/torch/json could not be read (URLError)); "
        "using the cached answers: torch 2.14 (read 2026-11-01)"
    ) in err
