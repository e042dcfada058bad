"""`publish`: a flag of another target kind is a usage error before anything is sent, never dropped silently."""

from __future__ import annotations

import json

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_dist, make_project
from tests.helpers import assert_one_line_error, run_cli


def test_a_github_flag_with_an_index_target_is_a_usage_error_and_nothing_is_sent(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(project / "dist-all", pythons=("3.12",))
    with PypiSandbox(directory=tmp_path / "index") as box:
        args = ["publish", "--project", str(project), "--target", "sandbox", "--repository-url", box.upload_url]
        env = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password}
        result = run_cli([*args, "--yes", "--repo", "acme/widgets"], env=env, timeout=120)
        assert_one_line_error(
            result, 2, "--repo does not apply to target 'sandbox' (kind index)", "--repo applies to github"
        )
        result = run_cli([*args, "--yes", "--tag", "v1.0.0", "--json"], env=env, timeout=120)
        assert result.code == 2
        error = json.loads(result.stdout)["error"]
        assert (error["kind"], error["message"]) == ("usage", "--tag does not apply to target 'sandbox' (kind index)")
        assert box.files() == []
