"""build on a torch extension with [tool.kestrel-release.variants] (examples/torch-cpp-ext): one wheel per
torch x CUDA variant, each pinning the torch minor it was built against, installed next to that torch and run.

PyPI's Linux torch 2.13 and 2.14 are both the CUDA 13.0 build, so the two cu130 variants build here from
PyPI (through uv's cache: .ci/run fills it, ~3 GB per minor); the cu126 variants' torch lives only on a
per-CUDA index, which the tests point at a closed local port: they are listed for another machine, not failed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_cli, torch_venvs, uv_bin
from tests.integration.hostile_http import HostileServer
from tests.schemas import fits

EXAMPLE = ROOT / "examples" / "torch-cpp-ext"
TORCH = ("2.13", "2.14")
CU130 = {t: f"torch{t.replace('.', '')}-cxx11-cu130-x86_64-linux" for t in TORCH}
CU126 = {t: f"torch{t.replace('.', '')}-cxx11-cu126-x86_64-linux" for t in TORCH}
UNREACHABLE = {"KESTREL_RELEASE_VARIANTS_INDEX": '{"12.6" = "http://127.0.0.1:9/whl/cu126"}'}


def _uv() -> str:
    return uv_bin()


@pytest.fixture(scope="module")
def torch_envs(tmp_path_factory) -> dict[str, Path]:
    """A venv per torch minor, installed offline from uv's cache (a skip naming .ci/torch-cache otherwise)."""
    return torch_venvs(tmp_path_factory.mktemp("torch-envs"), TORCH)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "torch-cpp-ext"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "dist-all"))
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=project, check=True, timeout=60)
    return project


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        return z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()


@pytest.mark.slow
def test_each_variant_pins_its_torch_and_runs_next_to_it(tmp_path, torch_envs):
    project = _project(tmp_path)
    result = run_cli(["build", "--project", str(project), "--json"], env=UNREACHABLE, timeout=3000)
    assert result.code == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["built"] == [CU130["2.13"], CU130["2.14"]]
    assert report["left_for_others"] == [CU126["2.13"], CU126["2.14"]]
    for entry in (e for e in report["variants"] if e["status"] == "left"):
        assert "http://127.0.0.1:9/whl/cu126, which this machine cannot reach" in entry["why"]
        assert f"kestrel-release build --variant {entry['variant']['name']}" in entry["command"]

    out = project / "dist-all"
    old = out / "variants" / CU130["2.13"]
    new = out / "variants" / CU130["2.14"]  # the default: plain version, also in dist-all/
    (old_wheel,) = old.glob("*.whl")
    (new_wheel,) = new.glob("*.whl")
    assert old_wheel.name.startswith("torch_cpp_ext-0.1.0+cu130-cp39-abi3-")
    assert new_wheel.name.startswith("torch_cpp_ext-0.1.0-cp39-abi3-")
    assert (out / new_wheel.name).read_bytes() == new_wheel.read_bytes()
    assert not list(out.glob("*+cu130*.whl"))  # PyPI's folder holds the default variant only
    for minor, wheel in (("2.13", old_wheel), ("2.14", new_wheel)):
        assert f"Requires-Dist: torch=={minor}.*" in _metadata(wheel).splitlines()
    data = json.loads((old / "release-manifest.json").read_text())
    (entry,) = data["wheels"]
    assert entry["variant"] == {
        "name": CU130["2.13"], "torch": "2.13", "cuda": "13.0", "cu": "cu130", "cxx11_abi": True,
        "os": "linux", "arch": "x86_64", "default": False,
    }  # fmt: skip
    assert entry["torch"]["version"].startswith("2.13.") and entry["torch"]["cuda"] == "13.0"
    assert entry["torch"]["cxx11_abi"] is True
    assert json.loads((out / "release-manifest.json").read_text())["wheels"][0]["variant"]["default"] is True

    for minor, wheel in (("2.13", old_wheel), ("2.14", new_wheel)):
        python = torch_envs[minor]
        subprocess.run([_uv(), "pip", "install", "-q", "--offline", "--python", str(python), str(wheel)],
                       check=True, timeout=600)  # fmt: skip
        run = subprocess.run(
            [str(python), "-c", "import torch, torch_cpp_ext as t; "
             "print(torch.__version__, t.mul_add(torch.ones(2), torch.full((2,), 3.0), 0.5).tolist())"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        version, values = run.stdout.strip().split(" ", 1)
        assert version.startswith(f"{minor}.") and values == "[3.5, 3.5]"


def test_variant_selection_and_unreachable_index(tmp_path):
    project = _project(tmp_path)
    bad = run_cli(["build", "--project", str(project), "--variant", "cu118"])
    assert bad.code == 2
    assert f"error: --variant 'cu118' names no variant of the matrix ({CU126['2.13']}" in bad.stderr
    result = run_cli(["build", "--project", str(project), "--variant", "cu126", "--json"], env=UNREACHABLE)
    assert result.code == 0, result.stderr[-3000:]
    report = fits("build-variants", result.stdout)
    assert (report["built"], report["left_for_others"]) == ([], [CU126["2.13"], CU126["2.14"]])
    assert not (project / "dist-all" / "variants").exists() or not list((project / "dist-all").rglob("*.whl"))


def test_variant_flag_without_a_variants_table(tmp_path):
    from tests.factories import make_project

    project = make_project(tmp_path / "p")
    result = run_cli(["build", "--project", str(project), "--variant", "cu130"])
    assert result.code == 2
    assert "error: --variant needs a [tool.kestrel-release.variants] table" in result.stderr


@pytest.mark.slow
def test_a_variant_reuses_the_interpreters_own_torch_offline(tmp_path, torch_envs):
    """A GPU host without network (torch installed, nothing to fetch): the variant whose torch minor and CUDA
    are the interpreter's builds against that torch, with uv offline."""
    import os

    project = _project(tmp_path)
    python = torch_envs["2.14"]
    # The GPU host's Python holds the build requirements too; nothing is cached and nothing can be fetched.
    subprocess.run([_uv(), "pip", "install", "-q", "--offline", "--python", str(python), "setuptools>=64", "wheel"],
                   check=True, timeout=300)  # fmt: skip
    env = {
        **UNREACHABLE,
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
        "UV_OFFLINE": "1",
        "UV_CACHE_DIR": str(tmp_path / "empty-uv-cache"),
        "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"),
    }
    result = run_cli(["build", "--project", str(project), "--variant", "torch2.14-cu130", "--json"], env=env,
                     timeout=3000)  # fmt: skip
    assert result.code == 0, result.stderr[-3000:]
    (entry,) = json.loads(result.stdout)["variants"]
    assert entry["status"] == "built" and entry["torch_from"].startswith(f"interpreter {python.parent}/python")
    assert entry["torch"]["version"].startswith("2.14.")
    (wheel,) = (project / "dist-all").glob("*.whl")
    assert "Requires-Dist: torch==2.14.*" in _metadata(wheel).splitlines()


def test_a_variant_whose_torch_cannot_be_fetched_offline_is_left_for_another_machine(tmp_path):
    """An offline host (uv --offline) with no torch 2.11 anywhere: that variant is listed with the command to
    run where PyPI is reachable, exit 0, nothing written."""
    project = _project(tmp_path)
    env = {
        "UV_OFFLINE": "1",
        "KESTREL_RELEASE_VARIANTS_TORCH": "2.11",
        "KESTREL_RELEASE_VARIANTS_CUDA": "13.0",
        "KESTREL_RELEASE_VARIANTS_DEFAULT": '{torch = "2.11", cuda = "13.0"}',
    }
    result = run_cli(["build", "--project", str(project), "--json"], env=env)
    assert result.code == 0, result.stderr[-3000:]
    (entry,) = fits("build-variants", result.stdout)["variants"]
    name = "torch211-cxx11-cu130-x86_64-linux"
    assert (entry["status"], entry["why"]) == (
        "left",
        "torch 2.11 for CUDA 13.0 comes from PyPI, which this machine cannot reach",
    )
    assert (
        entry["command"]
        == f"on a machine that reaches PyPI: kestrel-release build --variant {name} (then `kestrel-release assemble`)"
    )
    assert not list((project / "dist-all").rglob("*.whl")) if (project / "dist-all").exists() else True


def _torch_pypi(srv: HostileServer) -> HostileServer:
    """A PyPI serving torch 2.13 and 2.14 as PyPI does (JSON API, PEP 658 files recorded from PyPI: both CUDA 13.0)."""
    data = ROOT / "tests" / "data" / "pypi" / "torch"
    wheels = {
        "2.13.0": "torch-2.13.0-cp314-cp314-manylinux_2_28_x86_64.whl",
        "2.14.1": "torch-2.14.1-cp312-cp312-manylinux_2_28_x86_64.whl",
    }
    releases = {v: [{"filename": w, "url": f"../../packages/{w}"}] for v, w in wheels.items()}
    srv.route("GET", "/pypi/torch/json", body=json.dumps({"releases": releases}).encode())
    for name in wheels.values():
        srv.route("GET", f"/packages/{name}.metadata", body=(data / f"{name}.metadata").read_bytes())
    return srv


@pytest.mark.slow
def test_torch_minors_alone_build_each_against_its_pypi_cuda(tmp_path, torch_envs):
    """`torch = ["2.13", "2.14"]` and no `cuda`: each minor is planned against the CUDA its PyPI wheels pin (read
    from the index's metadata) and built with PyPI's torch; nothing is left for another machine."""
    project = _project(tmp_path)
    text = (project / "pyproject.toml").read_text()
    table = text.index("[tool.kestrel-release.variants]")
    (project / "pyproject.toml").write_text(
        text[:table] + '[tool.kestrel-release.variants]\ntorch = ["2.13", "2.14"]\n'
    )
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "torch only"], cwd=project,
                   check=True, timeout=60)  # fmt: skip
    with _torch_pypi(HostileServer()) as srv:  # 2.14 alone built: each build is minutes of CI
        argv = ["build", "--project", str(project), "--variant", "torch2.14", "--json"]
        result = run_cli(argv, env={"KESTREL_RELEASE_TORCH_PYPI": srv.url}, timeout=3000)
    assert result.code == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["built"] == [CU130["2.14"]] and report["left_for_others"] == []
    (row,) = report["variants"]  # the one picked (2.13's CUDA from the index: test_torch_cuda_from_index.py)
    assert (row["variant"]["torch"], row["variant"]["cuda"], row["status"]) == ("2.14", "13.0", "built"), row
    (entry,) = json.loads((project / "dist-all" / "variants" / CU130["2.14"] / "release-manifest.json").read_text())[
        "wheels"
    ]
    assert entry["torch"]["version"].startswith("2.14.") and entry["torch"]["cuda"] == "13.0"  # PyPI's CUDA 13.0 torch
