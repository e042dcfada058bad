"""The variants of a real torch extension (examples/torch-cpp-ext) released to a static index and installed from it.

`release --rehearse --targets wheels` builds every variant this machine can (PyPI's torch 2.13 and 2.14 are
both the CUDA 13.0 build; the cu126 variants' index is a closed local port here: left for another machine),
verifies them and publishes them to the rehearsal's static index; then each is installed with
`pip install --index-url http://127.0.0.1:PORT/cu130 torch-cpp-ext==V` into a venv holding its torch, imported
and run. Needs uv's cache of both torch minors (.ci/torch-cache).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kestrel_release.sandbox.static_host import StaticHost
from tests.helpers import ROOT, need, need_pythons, run_cli

EXAMPLE = ROOT / "examples" / "torch-cpp-ext"
TORCH = ("2.13", "2.14")
UNREACHABLE = {"KESTREL_RELEASE_VARIANTS_INDEX": '{"12.6" = "http://127.0.0.1:9/whl/cu126"}'}
TARGET = '\n[tool.kestrel-release.targets.wheels]\nkind = "static-index"\ndir = "site/whl"\n'


def _uv() -> str:
    from uv import find_uv_bin

    return find_uv_bin()


def _torch_env(root: Path, minor: str) -> Path:
    python = need_pythons("3.12")["3.12"]
    venv = root / f"torch{minor}"
    subprocess.run([_uv(), "venv", "-q", "--seed", "--python", str(python), str(venv)], check=True, timeout=120)
    got = subprocess.run(
        [_uv(), "pip", "install", "-q", "--offline", "--python", str(venv / "bin/python"), f"torch=={minor}.*"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if got.returncode != 0:
        need(f"torch {minor} from PyPI in uv's cache", "run .ci/torch-cache once (about 3 GB per torch minor)")
    return venv / "bin/python"


@pytest.mark.slow
def test_every_built_variant_installs_from_the_static_index_next_to_its_torch(tmp_path):
    envs = {minor: _torch_env(tmp_path / "envs", minor) for minor in TORCH}
    project = tmp_path / "torch-cpp-ext"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "dist-all"))
    with open(project / "pyproject.toml", "a") as fh:
        fh.write(TARGET)
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=project, check=True, timeout=60)
    result = run_cli(
        ["release", "--project", str(project), "--rehearse", "--yes", "--json", "--targets", "wheels"],
        env=UNREACHABLE,
        timeout=3000,
    )
    assert result.code == 0, result.stderr[-3000:]
    steps = {s["name"]: s for s in json.loads(result.stdout)["steps"]}
    assert "2 added" in steps["publish-wheels"]["detail"], steps
    root = project / "dist-all.rehearsal" / "static-index" / "wheels"
    versions = json.loads((root / "cu130" / "torch-cpp-ext" / "index.json").read_text())["versions"]
    assert versions == ["0.1.0", "0.1.0+cu130"]  # the default (torch 2.14) is the plain version
    with StaticHost(root) as host:
        for minor, version in (("2.13", "0.1.0+cu130"), ("2.14", "0.1.0")):
            python = envs[minor]
            done = subprocess.run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "install",
                    "--isolated",
                    "--no-cache-dir",
                    "--disable-pip-version-check",
                    "--index-url",
                    f"{host.url}/cu130",
                    f"torch-cpp-ext=={version}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
                env={"PIP_CONFIG_FILE": "/dev/null", "PATH": "/usr/bin:/bin"},
            )
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            run = subprocess.run(
                [
                    str(python),
                    "-c",
                    "import torch, torch_cpp_ext as t; "
                    "print(torch.__version__, t.mul_add(torch.ones(2), torch.full((2,), 3.0), 0.5).tolist())",
                ],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=tmp_path,
            )
            assert run.returncode == 0, run.stderr[-2000:]
            torch_version, values = run.stdout.strip().split(" ", 1)
            assert torch_version.startswith(f"{minor}.") and values == "[3.5, 3.5]"
