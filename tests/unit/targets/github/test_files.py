"""Release notes and the asset plan of publish --target github (pure functions)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from kestrel_release.adapters.github.client import Asset
from kestrel_release.config_loader import load as config
from kestrel_release.errors import PublishError, UsageError
from kestrel_release.targets.github import release as stage
from kestrel_release.targets.github.files import LocalFile, python_of, render_notes

WHL = "kestrel_kernels-0.2.0-cp312-cp312-manylinux_2_34_x86_64.whl"


@pytest.fixture()
def cfg(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "kestrel-kernels"\nversion = "0.2.0"\n[tool.kestrel-release.targets.github]\nrepo = "o/r"\n'
    )
    return config.load(tmp_path, env={})


def local(name: str, sha: str = "a" * 64, size: int = 10) -> LocalFile:
    return LocalFile(Path(name), name, size, sha, name.endswith(".whl"))


def remote(name: str, sha: str = "a" * 64, size: int = 10, state: str = "uploaded", digest: bool = True) -> Asset:
    return Asset(1, name, "", state, size, f"sha256:{sha}" if digest else None, "")


def test_python_of_wheel_tags() -> None:
    assert python_of(WHL) == "3.12"
    assert python_of("k-1-cp310-abi3-linux_x86_64.whl") == "3.10+"


def test_notes_have_version_commit_date_table_and_pip_lines(cfg) -> None:
    notes = render_notes(
        cfg,
        template="release-notes.md.j2",
        version="0.2.0",
        commit="c" * 40,
        tag="t",
        rolling=True,
        download_base="https://github.com/o/r/releases/download/t",
        files=[local(WHL, "b" * 64), local("SHA256SUMS")],
        now=dt.datetime(2025, 1, 2, 3, 4),
    )
    assert "0.2.0" in notes and "c" * 40 in notes and "2025-01-02 03:04 UTC" in notes
    assert f"| 3.12 | 10 B | `{'b' * 64}` |" in notes
    assert f"pip install https://github.com/o/r/releases/download/t/{WHL}" in notes
    assert "SHA256SUMS" in notes and notes.count("pip install") == 1


def test_missing_template_is_a_usage_error(cfg) -> None:
    with pytest.raises(UsageError, match=r"nope.j2"):
        render_notes(
            cfg, template="nope.j2", version="1", commit="c", tag="t", rolling=False, download_base="x", files=[]
        )


def test_plan_skips_identical_replaces_changed_cleans_leftovers_prunes_old(cfg) -> None:
    target = stage._target(cfg, None, None, "http://x/api/v3", None)
    assert target.rolling and target.prune and target.tag == "kestrel-kernels-nightly"
    files = [local(WHL), local("SHA256SUMS", "c" * 64)]
    existing = [
        remote(WHL),
        remote("SHA256SUMS"),
        remote("kestrel-tmp-1234-SHA256SUMS"),
        remote("x.whl", state="starter"),
        remote(WHL.replace("0.2.0", "0.1.0")),
        remote("notes.txt"),
    ]
    plan = stage._plan(cfg, target, files, existing)
    assert plan.skip == {WHL}
    assert set(plan.existing) - plan.skip >= {"SHA256SUMS"}
    assert [a.name for a in plan.cleanup] == ["kestrel-tmp-1234-SHA256SUMS", "x.whl"]
    assert [a.name for a in plan.prune] == [WHL.replace("0.2.0", "0.1.0")]


def test_an_asset_without_digest_is_replaced_not_trusted(cfg) -> None:
    target = stage._target(cfg, None, None, "u", None)
    plan = stage._plan(cfg, target, [local(WHL)], [remote(WHL, digest=False)])
    assert plan.skip == set()


def test_versioned_tag_does_not_prune_and_cap_is_enforced(cfg) -> None:
    target = stage._target(cfg, None, "v0.2.0", "u", None)
    assert (target.rolling, target.prune) == (False, False)
    existing = [remote(f"kestrel_kernels-0.0.{i}-cp312-cp312-linux_x86_64.whl") for i in range(999)]
    with pytest.raises(PublishError, match="1000-asset cap"):
        stage._plan(cfg, target, [local(WHL)], existing)
    rolling = stage._target(cfg, None, None, "u", None)
    assert stage._plan(cfg, rolling, [local(WHL)], existing).prune_first


def test_python_of_free_threaded_and_abi3t_wheels() -> None:
    assert python_of("k-1-cp314-cp314t-manylinux_2_28_x86_64.whl") == "3.14t"
    assert python_of("k-1-cp315-abi3t-manylinux_2_28_x86_64.whl") == "3.15t+"
    assert python_of("k-1-cp315-abi3.abi3t-manylinux_2_28_x86_64.whl") == "3.15+, 3.15t+"
    assert python_of("k-1-py3-none-any.whl") == "py3"
