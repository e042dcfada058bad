"""A failed smoke test says what really failed (before: "do not install/import"), and a wheel it rejects is
dropped from the wheel cache (before: the next build and rehearsal served it again)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kestrel_release.sandbox.pypi.server import PypiSandbox
from kestrel_release.stages.build_wheels import wheelcache
from tests.factories import make_project, write_wheel
from tests.helpers import assert_one_line_error, run_cli

FAST = {"KESTREL_RELEASE_PUBLISH_RETRIES": "1", "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05"}


def _publish(project: Path, box: PypiSandbox, wheel: Path, env: dict[str, str], *extra: str):
    env = {
        "TWINE_USERNAME": box.username,
        "TWINE_PASSWORD": box.password,
        "KESTREL_RELEASE_PYTHON": "3.12",
        **FAST,
        **env,
    }
    return run_cli(
        [
            "publish",
            str(wheel),
            "--project",
            str(project),
            "--repository-url",
            box.upload_url,
            "--yes",
            "--smoke-test",
            *extra,
        ],
        env=env,
        timeout=300,
    )


def test_an_import_error_names_the_module_the_exception_and_where_and_leaves_the_cache(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    wheel = write_wheel(
        tmp_path / "w",
        "kestrel-kernels",
        "0.1.0",
        "py3-none-any",
        files={"kk_impl/__init__.py": b"X = 1\nimport kk_undeclared_dependency\n"},
    )
    cache = {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")}
    # The wheel a build stored (as build does: one entry per key); another entry holds other bytes.
    (tmp_path / "other").mkdir()
    other = tmp_path / "other" / wheel.name
    other.write_bytes(b"not the published wheel")
    import os

    os.environ.update(cache)
    try:
        wheelcache.put("k-published", wheel)
        wheelcache.put("k-other", other)
    finally:
        del os.environ["KESTREL_RELEASE_CACHE_DIR"]
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, cache)
    assert_one_line_error(
        result,
        6,
        "smoke test failed on Python 3.12: kestrel-kernels installed on Python 3.12, "
        "but `import kk_impl` fails: ModuleNotFoundError: No module named "
        "'kk_undeclared_dependency' at kk_impl/__init__.py:2",
        "0.1.0's files on custom-index can never be replaced",
        "version bump patch",
    )
    assert "dropped 1 rejected wheel(s) from the wheel cache" in result.stderr
    assert sorted(p.name for p in (tmp_path / "cache" / "wheels").iterdir()) == ["k-other"]
    assert hashlib.sha256(other.read_bytes()).hexdigest()  # untouched


def test_no_wheel_that_installs_here_is_said_so(tmp_path):
    # A wheel for a glibc newer than any machine has: verify accepts the tag, uv finds nothing to install.
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    wheel = write_wheel(
        tmp_path / "w",
        "kestrel-kernels",
        "0.1.0",
        "cp312-cp312-manylinux_2_99_x86_64",
        files={"kk_impl/__init__.py": b""},
        purelib=False,
    )
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, {}, "--json")
    assert result.code == 6, result.output
    (row,) = json.loads(result.stdout)["smoke"]
    assert row["failure"] == "no-wheel", row
    assert (
        row["detail"].startswith(f"no wheel of kestrel-kernels 0.1.0 on {box.simple_url} installs on Python 3.12 here")
        and "manylinux_2_99_x86_64" in row["detail"]
    ), row


def test_a_dependency_the_default_index_lacks_is_named_and_is_not_the_wheels_fault(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    wheel = write_wheel(
        tmp_path / "w",
        "kestrel-kernels",
        "0.1.0",
        "py3-none-any",
        files={"kk_impl/__init__.py": b""},
        metadata_extra="Requires-Dist: kk-no-such-dependency\n",
    )
    with PypiSandbox(directory=tmp_path / "index") as box, PypiSandbox(directory=tmp_path / "empty") as default:
        # The user's own default index (here an empty one, so the answer does not depend on the network).
        result = _publish(project, box, wheel, {"UV_DEFAULT_INDEX": default.simple_url})
    assert_one_line_error(
        result,
        6,
        "a dependency could not be fetched on Python 3.12: no matching distribution: kk-no-such-dependency",
        "then run the same publish --smoke-test again",
    )
    assert "can never be replaced" not in result.stderr and "dropped" not in result.stderr
