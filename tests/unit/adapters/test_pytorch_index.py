"""Reading PyTorch's index page of torch: each final release's +cuXYZ builds, per minor."""

from __future__ import annotations

from pathlib import Path

from kestrel_release.adapters import pytorch_index

PAGE = Path(__file__).resolve().parents[2] / "data" / "pytorch" / "torch-simple.html"


def test_the_page_gives_each_minor_its_cudas_oldest_first():
    assert pytorch_index.cudas_of_page(PAGE.read_text()) == {
        "2.13": ["12.6", "13.0", "13.2"],
        "2.14": ["12.6", "13.0", "13.2"],
        "2.15": ["13.0", "13.2"],
    }


def test_odd_anchors_are_skipped():
    page = (
        '<a href="../cu118/torch-2.7.1%2Bcu118-cp39-cp39-linux_x86_64.whl">x</a>'
        '<a href="/whl/cu1210/torch-2.7.1%2Bcu1210-cp39-cp39-linux_x86_64.whl">x</a>'
        '<a href="/whl/torch-2.7.1-cp39-cp39-manylinux_2_28_aarch64.whl">no local version</a>'
        '<a href="/whl/cu128/torch-2.8.0rc1%2Bcu128-cp39-cp39-linux_x86_64.whl">an rc</a>'
        '<a href="not-a-wheel.tar.gz">sdist</a><a>no href</a>'
    )
    assert pytorch_index.cudas_of_page(page) == {"2.7": ["11.8", "12.10"]}
