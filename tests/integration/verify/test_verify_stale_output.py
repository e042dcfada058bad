"""An output built under another configuration is refused by verify and publish, naming what changed."""

from __future__ import annotations

import json

from kestrel_release.output_dir import built_with
from tests.factories import make_dist, make_project
from tests.helpers import assert_one_line_error, run_cli
from tests.integration.lying_index import LyingIndex

VARIANTS = '[tool.kestrel-release.variants]\ntorch = ["2.13"]\ncuda = ["13.0"]\n'


def record_in_manifest(out) -> None:
    """As build writes it: the configuration of the moment, in the manifest."""
    path = out / "release-manifest.json"
    data = json.loads(path.read_text())
    data[built_with.KEY] = built_with.record(out.parent)
    path.write_text(json.dumps(data))


def test_a_variants_table_added_after_the_build_is_refused_by_verify_and_publish(tmp_path) -> None:
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(project / "dist-all", pythons=("3.12",))
    assert run_cli(["verify", "--project", str(project)]).code == 0
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text() + VARIANTS)
    result = run_cli(["verify", "--project", str(project)])
    assert_one_line_error(result, 5, "built under another configuration", "variants table", "kestrel-release build")
    with LyingIndex() as index:
        env = {"TWINE_USERNAME": "__token__", "TWINE_PASSWORD": "pypi-x" * 5}
        published = run_cli(
            ["publish", "--project", str(project), "--repository-url", index.url + "/legacy/", "--yes"], env=env
        )
        assert_one_line_error(published, 5, "built under another configuration")
        assert index.received == []  # refused before the first byte


def test_a_recorded_configuration_names_the_setting_that_changed(tmp_path) -> None:
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(project / "dist-all", pythons=("3.12",))
    record_in_manifest(project / "dist-all")
    assert run_cli(["verify", "--project", str(project)]).code == 0  # the same configuration: clean
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace("[tool.kestrel-release]\n", '[tool.kestrel-release]\ncuda_arch = ["100a"]\n', 1)
    )
    result = run_cli(["verify", "--project", str(project), "--json"])
    assert result.code == 5
    doc = json.loads(result.stdout)
    stale = [f for f in doc["findings"] if f["rule"] == "stale-output"]
    assert stale and "cuda_arch was none, is 100a now" in stale[0]["message"]
