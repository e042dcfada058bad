"""adapters/static_index: a static index written into a directory, idempotent, adding, never clobbering."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kestrel_release.adapters import static_index
from kestrel_release.errors import PublishError
from tests.factories import write_wheel

NAME = "torch-cuda-ext"
TAG = "cp39-abi3-manylinux_2_28_x86_64"


def wheel(tmp_path: Path, version: str, payload: bytes = b"") -> Path:
    files = {"torch_cuda_ext/__init__.py": b"x = 1\n" + payload}
    return write_wheel(
        tmp_path / "dist" / version,
        NAME,
        version,
        TAG,
        files=files,
        metadata_extra="Requires-Python: >=3.10\n",
        date_time=(2020, 1, 1, 0, 0, 0),
    )


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_writes_pytorchs_layout_with_wheels_metadata_and_both_page_forms(tmp_path):
    root = tmp_path / "index"
    variant, default = wheel(tmp_path, "0.1.0+cu130"), wheel(tmp_path, "0.1.0")
    results = static_index.publish(root, {"cu130": [variant, default]})
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == sorted(
        [
            ".kestrel-release.lock",  # the publishers' lock, empty; a static host may serve it
            "cu130/index.html",
            "cu130/index.json",
            "cu130/torch-cuda-ext/index.html",
            "cu130/torch-cuda-ext/index.json",
            f"cu130/torch-cuda-ext/{default.name}",
            f"cu130/torch-cuda-ext/{default.name}.metadata",
            f"cu130/torch-cuda-ext/{variant.name}",
            f"cu130/torch-cuda-ext/{variant.name}.metadata",
        ]
    )
    assert variant.name == "torch_cuda_ext-0.1.0+cu130-cp39-abi3-manylinux_2_28_x86_64.whl"
    page = (root / "cu130/torch-cuda-ext/index.html").read_text()
    assert 'href="torch_cuda_ext-0.1.0%2Bcu130-cp39-abi3-manylinux_2_28_x86_64.whl#sha256=' in page
    assert 'data-requires-python="&gt;=3.10"' in page
    doc = json.loads((root / "cu130/torch-cuda-ext/index.json").read_text())
    assert doc["versions"] == ["0.1.0", "0.1.0+cu130"]
    meta = (root / f"cu130/torch-cuda-ext/{variant.name}.metadata").read_bytes()
    assert b"Version: 0.1.0+cu130" in meta
    assert [r.added for r in results] == [sorted([default.name, variant.name])]


def test_a_second_run_with_the_same_wheels_changes_nothing(tmp_path):
    root = tmp_path / "index"
    wheels = [wheel(tmp_path, "0.1.0+cu130")]
    static_index.publish(root, {"cu130": wheels})
    before = snapshot(root)
    results = static_index.publish(root, {"cu130": wheels})
    assert snapshot(root) == before  # bytes and mtimes
    assert results[0].written == [] and results[0].kept == [wheels[0].name] and results[0].added == []


def test_a_new_version_adds_and_keeps_the_old_one(tmp_path):
    root = tmp_path / "index"
    old, new = wheel(tmp_path, "0.1.0+cu130"), wheel(tmp_path, "0.2.0+cu130")
    static_index.publish(root, {"cu130": [old]})
    old.unlink()  # the old build output is gone: the index still has it
    static_index.publish(root, {"cu130": [new]})
    doc = json.loads((root / "cu130/torch-cuda-ext/index.json").read_text())
    assert doc["versions"] == ["0.1.0+cu130", "0.2.0+cu130"]
    assert (root / "cu130/torch-cuda-ext" / old.name).is_file()


def test_other_bytes_under_a_listed_name_are_refused_before_any_write(tmp_path):
    root = tmp_path / "index"
    first = wheel(tmp_path, "0.1.0+cu130")
    static_index.publish(root, {"cu130": [first]})
    before = snapshot(root)
    rebuilt = wheel(tmp_path / "again", "0.1.0+cu130", payload=b"# other bytes\n")
    other = wheel(tmp_path, "0.3.0+cu130")
    with pytest.raises(PublishError) as exc:
        static_index.publish(root, {"cu130": [other, rebuilt]})
    assert f"already lists {first.name} with sha256" in exc.value.message
    assert "bump the version" in exc.value.hint
    assert snapshot(root) == before  # nothing written, not even the other wheel


def test_files_and_projects_it_did_not_write_stay(tmp_path):
    root = tmp_path / "index"
    (root / "cu130/someone-else").mkdir(parents=True)
    (root / "cu130/someone-else/index.html").write_text("<a href='x.whl'>x.whl</a>")
    (root / "cu130/README.txt").write_text("mine")
    static_index.publish(root, {"cu130": [wheel(tmp_path, "0.1.0+cu130")]})
    assert (root / "cu130/README.txt").read_text() == "mine"
    assert (root / "cu130/someone-else/index.html").read_text() == "<a href='x.whl'>x.whl</a>"
    listed = json.loads((root / "cu130/index.json").read_text())["projects"]
    assert listed == [{"name": "someone-else"}, {"name": "torch-cuda-ext"}]


@pytest.mark.parametrize("where", ["cu130/torch-cuda-ext/index.html", "cu130/index.html"])
def test_an_index_page_another_tool_wrote_is_refused(tmp_path, where):
    root = tmp_path / "index"
    (root / where).parent.mkdir(parents=True)
    (root / where).write_text("<html>theirs</html>")
    with pytest.raises(PublishError) as exc:
        static_index.publish(root, {"cu130": [wheel(tmp_path, "0.1.0+cu130")]})
    assert "did not write" in exc.value.message
    assert (root / where).read_text() == "<html>theirs</html>"


def test_a_foreign_file_under_a_wheels_name_is_never_replaced(tmp_path):
    root = tmp_path / "index"
    w = wheel(tmp_path, "0.1.0+cu130")
    (root / "cu130/torch-cuda-ext").mkdir(parents=True)
    (root / "cu130/torch-cuda-ext" / w.name).write_bytes(b"not ours")
    with pytest.raises(PublishError, match="no page of ours lists it"):
        static_index.publish(root, {"cu130": [w]})
    assert (root / "cu130/torch-cuda-ext" / w.name).read_bytes() == b"not ours"


def test_linked_wheels_are_not_copied_and_the_page_links_their_url(tmp_path):
    root = tmp_path / "index"
    w = wheel(tmp_path, "0.1.0+cu130")
    url = f"https://github.com/o/r/releases/download/v0.1.0/{w.name}"
    static_index.publish(root, {"cu130": [w]}, base_urls={w.name: url})
    assert not (root / "cu130/torch-cuda-ext" / w.name).exists()
    # PEP 658's file would be looked for at <url>.metadata, beside the asset: not announced, not written
    assert not (root / "cu130/torch-cuda-ext" / f"{w.name}.metadata").exists()
    page = (root / "cu130/torch-cuda-ext/index.html").read_text()
    assert 'href="https://github.com/o/r/releases/download/v0.1.0/torch_cuda_ext-0.1.0%2Bcu130-' in page
    assert "data-core-metadata" not in page and 'data-requires-python="&gt;=3.10"' in page


def test_dry_run_writes_nothing(tmp_path):
    root = tmp_path / "index"
    results = static_index.publish(root, {"cu130": [wheel(tmp_path, "0.1.0+cu130")]}, dry_run=True)
    assert not root.exists() and results[0].added


def test_no_temp_files_are_left(tmp_path):
    root = tmp_path / "index"
    static_index.publish(root, {"cu126": [wheel(tmp_path, "0.1.0+cu126")], "cu130": [wheel(tmp_path, "0.1.0")]})
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]
    assert sorted(os.listdir(root)) == [".kestrel-release.lock", "cu126", "cu130"]


def test_foreign_pages_are_the_ones_a_publish_of_the_project_would_refuse(tmp_path):
    root = tmp_path / "index"
    static_index.publish(root, {"cu130": [wheel(tmp_path, "0.1.0+cu130")]})
    assert static_index.foreign_pages(root, NAME) == []
    for page in (
        "cu126/index.html",
        "cu126/torch-cuda-ext-cu12/index.html",
        "cu130/other/index.html",
        "other/index.html",
    ):
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        (root / page).write_text("<html></html>")
    assert static_index.foreign_pages(root, NAME) == [
        root / "cu126/index.html",
        root / "cu126/torch-cuda-ext-cu12/index.html",
    ]


def publish_at_once(root: Path, wheels: list[Path]) -> list[Exception]:
    """Each wheel published to `root` by a thread of its own, all released together; the errors raised."""
    import threading

    start, failures = threading.Barrier(len(wheels)), []

    def publish(w: Path) -> None:
        start.wait()
        try:
            static_index.publish(root, {"cu130": [w]})
        except Exception as exc:  # collected, asserted by the caller
            failures.append(exc)

    threads = [threading.Thread(target=publish, args=(w,)) for w in wheels]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def test_concurrent_publishers_of_one_index_keep_every_project(tmp_path):
    """Projects publishing to one dir at once (threads running the writer): each round's root pages list
    every project, whoever wrote them last (without the lock: 5 of 20 rounds lost one)."""
    projects, rounds = 4, 6
    names = [f"proj-{i}" for i in range(projects)]
    for n in range(rounds):
        root = tmp_path / f"round{n}" / "index"
        wheels = [write_wheel(tmp_path / f"round{n}" / name, name, "0.1.0", TAG) for name in names]
        assert publish_at_once(root, wheels) == []
        listed = [p["name"] for p in json.loads((root / "cu130/index.json").read_text())["projects"]]
        assert listed == names, f"round {n}"
        page = (root / "cu130/index.html").read_text()
        assert all(f'href="{name}/"' in page for name in names), f"round {n}"
