"""publish --target <static-index> says "added" only once the index is read back holding the verified bytes:
a file changed between the write and the read-back, or a host serving another copy, is exit 6 naming it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kestrel_release.adapters import static_index as writer
from kestrel_release.adapters import static_index_readback
from kestrel_release.config_loader import load as config
from kestrel_release.errors import PublishError
from kestrel_release.sandbox.static_host import StaticHost
from kestrel_release.targets.static_index import publish as static_index
from tests.factories import NAME, make_project, make_variant_dist
from tests.helpers import python_version

TARGET = '\n[tool.kestrel-release.targets.wheels]\nkind = "static-index"\ndir = "site/whl"\n'


def project_with_variants(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "kernels", pythons=(python_version(),))
    with open(project / "pyproject.toml", "a") as fh:
        fh.write(TARGET)
    make_variant_dist(project / "dist-all")
    return project


def test_a_wheel_truncated_between_write_and_read_back_is_exit_6_naming_it(tmp_path, monkeypatch):
    project = project_with_variants(tmp_path)
    real = writer.publish
    hit: list[Path] = []

    def publish_then_truncate(root: Path, groups, **kwargs):  # a sync job, a full disk, another writer
        pages = real(root, groups, **kwargs)
        hit.append(next(iter(sorted(root.rglob("*.whl")))))
        hit[0].write_bytes(hit[0].read_bytes()[:100])
        return pages

    monkeypatch.setattr(writer, "publish", publish_then_truncate)
    with pytest.raises(PublishError) as exc:
        static_index.run(config.load(project, env={}), [], target="wheels")
    assert exc.value.exit_code == 6
    assert f"{hit[0]} holds 100 bytes, not the" in exc.value.message
    assert exc.value.message.startswith(f"the static index in {project / 'site/whl'} does not hold what was published")


def test_a_page_rewritten_between_write_and_read_back_is_exit_6(tmp_path, monkeypatch):
    project = project_with_variants(tmp_path)
    real = writer.publish

    def publish_then_drop_the_project(root: Path, groups, **kwargs):
        pages = real(root, groups, **kwargs)
        (root / "cu130/index.html").write_text((root / "cu130/index.html").read_text().replace(NAME, "other"))
        return pages

    monkeypatch.setattr(writer, "publish", publish_then_drop_the_project)
    with pytest.raises(PublishError, match=r"cu130/index.html does not list the project kestrel-kernels"):
        static_index.run(config.load(project, env={}), [], target="wheels")


def test_a_host_serving_other_bytes_than_were_written_fails_the_served_read_back(tmp_path):
    project = project_with_variants(tmp_path)
    result = static_index.run(config.load(project, env={}), [], target="wheels")
    with StaticHost(Path(result.root)) as host:  # the folder as written: every page and wheel as verified
        static_index_readback.check_served(host.url, result.pages, result.expected)
    other = tmp_path / "served-copy"  # a host serving a stale or tampered copy of the folder
    shutil.copytree(result.root, other)
    wheel = sorted(other.rglob("*.whl"))[0]
    wheel.write_bytes(wheel.read_bytes() + b"tampered")
    with StaticHost(other) as host, pytest.raises(PublishError) as exc:
        static_index_readback.check_served(host.url, result.pages, result.expected)
    assert exc.value.exit_code == 6
    assert f"serves {wheel.name} as" in exc.value.message and "verified" in exc.value.message
