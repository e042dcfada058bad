"""adapters/static_index_readback: the index read back from disk against the verified sha256 and size."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from kestrel_release.adapters import static_index, static_index_readback
from kestrel_release.errors import PublishError
from tests.factories import write_wheel

TAG = "cp39-abi3-manylinux_2_28_x86_64"


def published(tmp_path: Path) -> tuple[Path, list, static_index_readback.Expected, Path]:
    w = write_wheel(tmp_path / "dist", "torch-cuda-ext", "0.1.0+cu130", TAG)
    root = tmp_path / "index"
    pages = static_index.publish(root, {"cu130": [w]})
    expected = {"cu130": {w.name: (hashlib.sha256(w.read_bytes()).hexdigest(), w.stat().st_size)}}
    return root, pages, expected, root / "cu130/torch-cuda-ext" / w.name


def test_an_index_as_written_is_confirmed(tmp_path):
    root, pages, expected, _ = published(tmp_path)
    static_index_readback.confirm_on_disk(root, pages, expected)


def test_a_wheel_with_other_bytes_of_the_same_size_is_named(tmp_path):
    root, pages, expected, wheel = published(tmp_path)
    data = bytearray(wheel.read_bytes())
    data[-1] ^= 1
    wheel.write_bytes(bytes(data))
    with pytest.raises(
        PublishError, match=f"{re.escape(str(wheel))} holds other bytes: sha256 [0-9a-f]{{64}}, verified"
    ) as exc:
        static_index_readback.confirm_on_disk(root, pages, expected)
    assert exc.value.exit_code == 6


def test_a_missing_wheel_and_metadata_are_named_with_how_many_more(tmp_path):
    root, pages, expected, wheel = published(tmp_path)
    wheel.unlink()
    Path(f"{wheel}.metadata").write_bytes(b"Name: other\n")
    with pytest.raises(PublishError, match=r"cannot be read back .* \(and 1 more\)"):
        static_index_readback.confirm_on_disk(root, pages, expected)


def test_a_page_listing_another_sha256_than_verified_is_named(tmp_path):
    root, pages, expected, wheel = published(tmp_path)
    expected["cu130"][wheel.name] = ("0" * 64, expected["cu130"][wheel.name][1])
    with pytest.raises(
        PublishError, match=f"index.json lists {re.escape(wheel.name)} as sha256 [0-9a-f]{{64}}, not 0000"
    ):
        static_index_readback.confirm_on_disk(root, pages, expected)


def test_a_project_list_without_the_project_is_named(tmp_path):
    root, pages, expected, _ = published(tmp_path)
    (root / "cu130/index.json").write_text((root / "cu130/index.json").read_text().replace("torch-cuda-ext", "x"))
    with pytest.raises(PublishError, match=r"cu130/index.json does not list the project torch-cuda-ext"):
        static_index_readback.confirm_on_disk(root, pages, expected)
