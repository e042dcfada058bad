"""Precompiled kernels with build.container: the step runs on the host (default) or in the image
(build.precompile_in = "container", with the image's CUDA toolkit), and the wheels built in the image
carry its outputs.

Before: build.precompile_in did not exist (the variable was ignored): the step always ran on the host,
`build --json` did not say where, and an image without nvcc was never checked. The image with a CUDA
toolkit is the bullseye test image plus a stand-in nvcc (answers --version like nvcc 13.0.88); the
real-nvcc case uses the host's nvcc (13.0 here) in host mode.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
import zipfile
from pathlib import Path

import pytest

from tests.helpers import assert_one_line_error, run_cli
from tests.integration.build_wheels.test_build_container import IMAGE, _project, bullseye, podman_image  # noqa: F401

pytestmark = pytest.mark.slow
FAKE_NVCC_IMAGE = "localhost/kestrel-release-ci/bullseye-fake-nvcc:test"
# The "precompile": records the glibc it ran on and the nvcc it was given (CUDACXX, else PATH).
GEN = """# {nonce}
import os, pathlib, shutil, subprocess
out = pathlib.Path("src/mini_ext/kernels"); out.mkdir(parents=True, exist_ok=True)
nvcc = os.environ.get("CUDACXX") or shutil.which("nvcc")
ver = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.split()[-1] if nvcc else "none"
(out / "k.txt").write_text(os.confstr("CS_GNU_LIBC_VERSION") + " | " + ver + " | " + str(nvcc))
"""
KERNEL = '// {nonce}\nextern "C" __global__ void scale(float *x, float a) {{ x[threadIdx.x] *= a; }}\n'


@pytest.fixture(scope="module")
def fake_nvcc_image(podman_image: str, tmp_path_factory) -> str:  # noqa: F811
    """The test image plus /usr/local/cuda-13.0/bin/nvcc (a stand-in; a layer on top, no RUN)."""
    ctx = tmp_path_factory.mktemp("image")
    (ctx / "cuda" / "bin").mkdir(parents=True)
    nvcc = ctx / "cuda" / "bin" / "nvcc"
    nvcc.write_text('#!/bin/sh\necho "Cuda compilation tools, release 13.0, V13.0.88"\n')
    nvcc.chmod(0o755)
    (ctx / "Containerfile").write_text(f"FROM {podman_image}\nCOPY cuda /usr/local/cuda-13.0\n")
    subprocess.run(["podman", "build", "-q", "-t", FAKE_NVCC_IMAGE, str(ctx)], check=True, capture_output=True)
    yield FAKE_NVCC_IMAGE
    subprocess.run(["podman", "rmi", "-f", FAKE_NVCC_IMAGE], capture_output=True)


def _with_precompile(tmp_path: Path, argv: list[str], files: dict[str, str], required_sass: str = "[]") -> Path:
    project = _project(tmp_path)
    for name, text in files.items():
        (project / name).write_text(text.format(nonce=uuid.uuid4().hex))  # a fresh cache key per run
    conf = (project / "pyproject.toml").read_text()
    conf = conf.replace(
        'out_dir = "dist-all"',
        f'out_dir = "dist-all"\nprecompile = {json.dumps(argv)}\nprecompile_outputs = "src/mini_ext/kernels"\n'
        f"precompile_inputs = {json.dumps(sorted(files))}",
    ).replace("required_sass = []", f"required_sass = {required_sass}")
    (project / "pyproject.toml").write_text(conf)
    setup = (project / "setup.py").read_text()
    (project / "setup.py").write_text(
        setup.replace("packages=[", 'package_data={"mini_ext": ["kernels/*"]}, packages=[')
    )
    (project / ".gitignore").write_text("src/mini_ext/kernels/\n")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "pre"], cwd=project, check=True
    )
    return project


def _member(project: Path, doc: dict, suffix: str) -> bytes:
    (row,) = doc["wheels"]
    with zipfile.ZipFile(project / "dist-all" / row["filename"]) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(suffix)]
        return zf.read(name)


def test_host_precompile_outputs_go_into_the_wheel_built_in_the_image(tmp_path: Path, podman_image: str):  # noqa: F811
    project = _with_precompile(tmp_path, ["{python}", "gen.py"], {"gen.py": GEN})
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman", "KESTREL_RELEASE_BUILD_PRECOMPILE_IN": "host"}
    result = run_cli(["build", "--json", "--container", podman_image, "--no-gpu-check"], cwd=project, env=env)
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["precompile"]["status"] == "compiled" and doc["precompile"]["ran_in"] == "host"
    host_glibc = subprocess.run(["getconf", "GNU_LIBC_VERSION"], capture_output=True, text=True).stdout.strip()
    made = _member(project, doc, "kernels/k.txt").decode()
    assert made.startswith(host_glibc + " |"), made  # made on this host, shipped by the image's build
    assert tuple(int(x) for x in doc["wheels"][0]["glibc_floor"].split(".")) <= (2, 31)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on this host")
def test_host_nvcc_cubin_ends_in_the_wheel_built_in_the_image(tmp_path: Path, podman_image: str):  # noqa: F811
    argv = ["nvcc", "-cubin", "-arch=sm_90a", "-o", "src/mini_ext/kernels/scale.cubin", "k.cu"]
    project = _with_precompile(tmp_path, argv, {"k.cu": KERNEL}, required_sass='["sm_90a"]')
    (project / "src" / "mini_ext" / "kernels").mkdir(parents=True)  # nvcc -o does not make directories
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman", "KESTREL_RELEASE_BUILD_PRECOMPILE_IN": "host"}
    result = run_cli(["build", "--json", "--container", podman_image, "--no-gpu-check"], cwd=project, env=env)
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["precompile"]["ran_in"] == "host"
    assert _member(project, doc, "kernels/scale.cubin") == (project / "src/mini_ext/kernels/scale.cubin").read_bytes()
    verified = run_cli(["verify", "--json"], cwd=project)  # the cubin carries the required sm_90a SASS
    assert verified.code == 0, verified.output


def test_precompile_in_the_image_uses_its_toolkit_and_its_cache(tmp_path: Path, fake_nvcc_image: str):
    project = _with_precompile(tmp_path, ["{python}", "gen.py"], {"gen.py": GEN})
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman", "KESTREL_RELEASE_BUILD_PRECOMPILE_IN": "container"}
    args = ["build", "--json", "--container", fake_nvcc_image, "--no-gpu-check"]
    result = run_cli(args, cwd=project, env=env)
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["precompile"]["status"] == "compiled" and doc["precompile"]["ran_in"] == fake_nvcc_image
    # Ran in the image (bullseye's glibc), with the image's nvcc made visible as a host's would be.
    expected = "glibc 2.31 | V13.0.88 | /usr/local/cuda-13.0/bin/nvcc"
    assert _member(project, doc, "kernels/k.txt").decode() == expected
    assert (project / "src/mini_ext/kernels/k.txt").read_text() == expected  # outputs back in the project
    shutil.rmtree(project / "src/mini_ext/kernels")
    again = json.loads(run_cli(args, cwd=project, env=env).stdout)
    assert again["precompile"]["status"] == "restored" and again["precompile"]["key"] == doc["precompile"]["key"]
    host = run_cli(args, cwd=project, env={**env, "KESTREL_RELEASE_BUILD_PRECOMPILE_IN": "host"})
    assert host.code == 0, host.output
    assert json.loads(host.stdout)["precompile"]["key"] != doc["precompile"]["key"]  # another toolkit, another key


def test_precompile_in_an_image_without_nvcc_is_one_preflight_line(tmp_path: Path, podman_image: str):  # noqa: F811
    project = _with_precompile(tmp_path, ["{python}", "gen.py"], {"gen.py": GEN})
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman", "KESTREL_RELEASE_BUILD_PRECOMPILE_IN": "container"}
    result = run_cli(["build", "--container", podman_image, "--no-gpu-check"], cwd=project, env=env)
    assert_one_line_error(result, 3, f"the image {podman_image} has no nvcc", 'build.precompile_in = "host"')
    assert not (project / "dist-all").exists() and not (project / "src/mini_ext/kernels").exists()
