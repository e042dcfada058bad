"""smoke_test.command runs in the smoke venv after the install and is reported; smoke_test.reuse lets the
venv see the host interpreter's copies of named distributions (torch on an offline GPU host) and nothing
else of the host's; a dependency that cannot be fetched is told apart from a wheel that does not install."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from kestrel_release.adapters import pythons, uv
from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_project, write_wheel
from tests.helpers import assert_one_line_error, run_cli

FAST = {"KESTREL_RELEASE_PUBLISH_RETRIES": "1", "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05"}
# An offline host: the default index (where dependencies come from) refuses connections at once.
OFFLINE = {"UV_DEFAULT_INDEX": "http://127.0.0.1:9/simple", "UV_HTTP_RETRIES": "0"}


def _publish(project, box, wheel, env=None, *extra):
    env = {
        "TWINE_USERNAME": box.username,
        "TWINE_PASSWORD": box.password,
        "KESTREL_RELEASE_PYTHON": "3.12",
        **FAST,
        **(env or {}),
    }
    return run_cli(
        [
            "publish",
            str(wheel),
            "--project",
            str(project),
            "--target",
            "sandbox",
            "--repository-url",
            box.upload_url,
            "--yes",
            "--smoke-test",
            *extra,
        ],
        env=env,
        timeout=300,
    )


def _release_wheel(tmp_path, requires=""):
    return write_wheel(
        tmp_path / "w",
        "kestrel-kernels",
        "0.1.0",
        "py3-none-any",
        files={"kk_impl/__init__.py": b"X = 1\n"},
        metadata_extra="".join(f"Requires-Dist: {r}\n" for r in requires.split()),
    )


def test_the_command_runs_in_the_smoke_venv_after_the_install(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    wheel = _release_wheel(tmp_path)
    # `python` on PATH is the smoke venv's; the cwd is not the project (its sources cannot shadow the wheel).
    command = (
        'python -c "import kk_impl, os, sys; assert sys.prefix != sys.base_prefix; '
        "print('gpu tests ok', os.getcwd())\" && test -f {project}/pyproject.toml"
    )
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, {"KESTREL_RELEASE_SMOKE_TEST_COMMAND": command}, "--json")
    assert result.code == 0, result.output
    (row,) = json.loads(result.stdout)["smoke"]
    assert row["ok"] and row["command"]["ok"], row
    assert "smoke_test.command passed" in row["detail"]
    last = Path(row["command"]["log"]).read_text().splitlines()[-1]
    assert last.startswith("gpu tests ok ") and str(project) not in last, last


def test_a_failing_command_is_one_line_with_its_exit_status_its_last_error_and_log(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    (project / "pyproject.toml").write_text(
        (project / "pyproject.toml").read_text()
        + (
            '[tool.kestrel-release.smoke_test]\ncommand = "{python} -c '
            '\\"import sys; print(42); sys.stdout.flush(); assert sys.argv == [0], \'gpu result off\'\\""\n'
        )
    )
    wheel = _release_wheel(tmp_path)
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel)
    assert_one_line_error(
        result,
        6,
        "smoke test failed on Python 3.12: smoke_test.command on Python 3.12 failed with exit code 1 (log: ",
        "): AssertionError: gpu result off",  # the command's own last word, without opening the log
        "smoke_test.command failed: read its log",
    )
    log = result.stderr.split("(log: ", 1)[1].split(")", 1)[0]
    assert "42" in Path(log).read_text()


def test_an_unfetchable_dependency_is_not_a_broken_wheel(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    wheel = _release_wheel(tmp_path, "kk-host-only-dep")
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, OFFLINE)
    assert_one_line_error(
        result,
        6,
        "kestrel-kernels installed, but a dependency could not be fetched on Python "
        "3.12: http://127.0.0.1:9/simple/kk-host-only-dep/ could not be reached",
        'smoke_test.reuse (e.g. ["torch"])',
        "installed; a dependency of them could not be fetched",
    )
    assert "do not install" not in result.stderr


def _host_python(tmp_path: Path) -> Path:
    """A Python 3.12 'host' holding kk-host-only-dep (which needs kk-host-sub) and an unrelated kk-other-host."""
    wheels = tmp_path / "host-wheels"
    for name, requires in (
        ("kk-host-only-dep", "Requires-Dist: kk-host-sub\n"),
        ("kk-host-sub", ""),
        ("kk-other-host", ""),
    ):
        write_wheel(
            wheels,
            name,
            "1.0",
            "py3-none-any",
            metadata_extra=requires,
            files={f"{name.replace('-', '_')}/__init__.py": b"OK = True\n"},
        )
    host = tmp_path / "host"
    uv_bin = uv.find_uv()
    subprocess.run([uv_bin, "venv", "-q", "--python", pythons.find_interpreter("3.12"), host], check=True)
    subprocess.run(
        [
            uv_bin,
            "pip",
            "install",
            "-q",
            "--no-index",
            "--python",
            host / "bin" / "python",
            *sorted(wheels.glob("*.whl")),
        ],
        check=True,
    )
    return host / "bin"


def test_reuse_exposes_only_the_named_host_packages_and_needs_no_index(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    wheel = _release_wheel(tmp_path, "kk-host-only-dep")
    host_bin = _host_python(tmp_path)
    command = (
        'python -c "import kk_host_only_dep, kk_host_sub, importlib.util as u, sys; '
        "sys.exit(u.find_spec('kk_other_host') is not None)\""
    )
    env = {
        **OFFLINE,
        "PATH": f"{host_bin}{os.pathsep}{os.environ['PATH']}",
        "KESTREL_RELEASE_SMOKE_TEST_REUSE": "kk-host-only-dep",
        "KESTREL_RELEASE_SMOKE_TEST_COMMAND": command,
    }
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, env, "--json")
    assert result.code == 0, result.output
    (row,) = json.loads(result.stdout)["smoke"]
    assert row["ok"] and sorted(row["reused"]) == ["kk-host-only-dep 1.0", "kk-host-sub 1.0"], row
    assert row["interpreter"].startswith(str(host_bin))
    # the host's files are untouched (the venv's stubs and links went with the venv)
    assert (host_bin.parent / "lib" / "python3.12" / "site-packages" / "kk_host_only_dep" / "__init__.py").is_file()


def test_reuse_of_a_package_the_host_lacks_says_so(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    wheel = _release_wheel(tmp_path)
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, {"KESTREL_RELEASE_SMOKE_TEST_REUSE": "kk-not-on-host"})
    assert_one_line_error(result, 6, "smoke_test.reuse names kk-not-on-host, which", "does not have")


def _dist_info(site: Path, name: str, version: str, requires: list[str], record: bool, tops: dict[str, str]) -> None:
    """A distribution as an installer left it: its modules and a dist-info, with a RECORD or (other tools:
    conda, a distribution's own packages) without one and without pip's INSTALLER."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
    )
    for path, text in tops.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    if record:
        files = [*tops, f"{info.name}/METADATA", f"{info.name}/RECORD"]
        (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))
        (info / "INSTALLER").write_text("uv\n")


def _torch_host(tmp_path: Path, *, cublas: bool = True) -> Path:
    """A Python 3.12 host with torch 2.11's real metadata shape: a local version, an extra-laden
    requirement on cuda-toolkit, markers for other platforms and extras, one package installed without RECORD."""
    host = tmp_path / "host"
    subprocess.run([uv.find_uv(), "venv", "-q", "--python", pythons.find_interpreter("3.12"), host], check=True)
    site = host / "lib" / "python3.12" / "site-packages"
    torch_requires = [
        'cuda-toolkit[cublas,cudart]==13.0.2; platform_system == "Linux"',
        "kk-filelock",
        'kk-win-only; sys_platform == "win32"',
        'kk-docs; extra == "docs"',
    ]
    _dist_info(site, "torch", "2.11.0+cu130", torch_requires, True, {"torch/__init__.py": "OK = True\n"})
    toolkit_requires = [
        'nvidia-cublas==13.0.2; extra == "cublas"',
        'nvidia-cuda-runtime==13.0.2; extra == "cudart"',
        'nvidia-cufft==13.0.2; extra == "cufft"',
    ]
    _dist_info(site, "cuda-toolkit", "13.0.2", toolkit_requires, True, {"cuda_toolkit/__init__.py": ""})
    if cublas:
        _dist_info(site, "nvidia-cublas", "13.0.2", [], True, {"nvidia/cublas/__init__.py": "OK = True\n"})
    _dist_info(site, "nvidia-cuda-runtime", "13.0.2", [], True, {"nvidia/cuda_runtime/__init__.py": ""})
    _dist_info(site, "kk-filelock", "3.0", [], False, {"kk_filelock/__init__.py": "OK = True\n"})
    return host / "bin"


def test_reuse_follows_extras_markers_and_packages_without_record_offline(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    wheel = _release_wheel(tmp_path, "torch==2.11.0")
    host_bin = _torch_host(tmp_path)
    env = {
        **OFFLINE,
        "PATH": f"{host_bin}{os.pathsep}{os.environ['PATH']}",
        "KESTREL_RELEASE_SMOKE_TEST_REUSE": "torch",
        "KESTREL_RELEASE_SMOKE_TEST_COMMAND": 'python -c "import torch, kk_filelock, nvidia.cublas"',
    }
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, env, "--json")
    assert result.code == 0, result.output
    (row,) = json.loads(result.stdout)["smoke"]
    assert row["ok"] and row["command"]["ok"], row
    assert sorted(row["reused"]) == [
        "cuda-toolkit 13.0.2",
        "kk-filelock 3.0",
        "nvidia-cublas 13.0.2",
        "nvidia-cuda-runtime 13.0.2",
        "torch 2.11.0+cu130",
    ], row


def test_reuse_already_set_names_what_the_host_lacks_not_the_setting(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    wheel = _release_wheel(tmp_path, "torch==2.11.0")
    host_bin = _torch_host(tmp_path, cublas=False)
    env = {
        **OFFLINE,
        "PATH": f"{host_bin}{os.pathsep}{os.environ['PATH']}",
        "KESTREL_RELEASE_SMOKE_TEST_REUSE": "torch",
    }
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = _publish(project, box, wheel, env)
    assert_one_line_error(
        result,
        6,
        "a dependency could not be fetched on Python 3.12",
        "the host lacks what its reused packages require: nvidia-cublas==13.0.2 (required by cuda-toolkit 13.0.2)",
    )
    assert "smoke_test.reuse (now" not in result.stderr
