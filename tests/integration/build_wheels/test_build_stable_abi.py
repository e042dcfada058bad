"""build on a real third-party stable-ABI extension (pytorch/extension-cpp's extension_cpp_stable, vendored
unchanged in tests/data/third_party/extension-cpp) with `variants.stable_abi`: ONE wheel for the CUDA major,
requiring torch>=2.10, that verify passes, explain --torch places, and that installs and runs next to two
torch minors (PyPI's 2.13 and 2.14, from uv's cache: .ci/torch-cache fills it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT, need, run_cli, torch_venvs, uv_bin

UPSTREAM = ROOT / "tests" / "data" / "third_party" / "extension-cpp"
TORCH = ("2.13", "2.14")
NAME = "torch-stable-abi210-cu130-x86_64-linux"
CONFIG = """
[tool.kestrel-release]
python = ["3.12"]
abi = "abi3"

[tool.kestrel-release.verify]
required_sass = []

[tool.kestrel-release.variants]
stable_abi = "2.10"
torch = ["2.13"]
cuda = ["13.0"]
"""


def _uv() -> str:
    return uv_bin()


@pytest.fixture(scope="module")
def torch_envs(tmp_path_factory) -> dict[str, Path]:
    """A venv per torch minor, installed offline from uv's cache (a skip naming .ci/torch-cache otherwise)."""
    return torch_venvs(tmp_path_factory.mktemp("torch-envs"), TORCH)


def _project(tmp_path: Path) -> Path:
    """The upstream repository as it is (setup.py reads ../README.md), our table added to the project's
    pyproject.toml, committed."""
    repo = tmp_path / "extension-cpp"
    shutil.copytree(UPSTREAM, repo)
    project = repo / "extension_cpp_stable"
    with open(project / "pyproject.toml", "a", encoding="utf-8") as fh:
        fh.write(CONFIG)
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, timeout=60)
    return project


def _metadata(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode().splitlines()


UNSTABLE_CPP = """
namespace c10 { namespace detail { [[noreturn]] void torchCheckFail(const char*, const char*, unsigned, const char*); } }
namespace at { class TensorBase { public: long dim() const; }; }
extern "C" void check(const at::TensorBase& t) { if (t.dim() < 0) c10::detail::torchCheckFail("f", "x.cpp", 1, "m"); }
"""


def _tampered_binary_fails_verify(project: Path, tmp_path: Path, wheel: Path) -> None:
    """A copy of the output whose _C imports torch C++ symbols (compiled here, as a build of the full API would):
    verify's torch-stable-abi rule names them demangled, with their headers."""
    from kestrel_release.stages.build_wheels import variant_wheel

    (tmp_path / "bad.cpp").write_text(UNSTABLE_CPP)
    subprocess.run(["g++", "-shared", "-fPIC", "-o", "bad.so", "bad.cpp"], cwd=tmp_path, check=True, timeout=120)
    copy = tmp_path / "tampered"
    shutil.copytree(project.parent, copy, ignore=shutil.ignore_patterns("build"))
    out = copy / project.name / "dist-all"
    staged = tmp_path / "staged"
    staged.mkdir()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(staged / wheel.name, "w") as dst:
        for info in src.infolist():
            bad = info.filename.endswith("_C.abi3.so")
            dst.writestr(info.filename, (tmp_path / "bad.so").read_bytes() if bad else src.read(info))
    fixed = variant_wheel.retag(staged / wheel.name, name="extension_cpp_stable", version="0.0.1",
                                torch_pin="torch>=2.10", source_date_epoch=1700000000)  # fmt: skip
    for where in (out / "variants" / NAME / wheel.name, out / wheel.name):
        shutil.copy2(fixed, where)
    result = run_cli(["verify", "--project", str(copy / project.name), "--json"])
    assert result.code == 5, result.stdout[-2000:]
    found = {(f["rule"], f["member"], f["message"]) for w in json.loads(result.stdout)["wheels"] for f in w["findings"]}
    ((_, member, message),) = {f for f in found if f[0] == "torch-stable-abi"}
    assert member == "extension_cpp_stable/_C.abi3.so"
    assert message.startswith(
        f"built for the torch 2.10 stable ABI ({NAME}) but imports 2 torch C++ symbols outside it: "
    )
    assert (
        "c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*) [c10/util/Exception.h"
        in message
    )
    assert "at::TensorBase::dim() const [ATen/core/TensorBase.h]" in message


@pytest.mark.slow
def test_one_stable_abi_wheel_runs_next_to_two_torch_minors(tmp_path, torch_envs):
    project = _project(tmp_path)
    result = run_cli(["build", "--project", str(project), "--layout", "kernels-hub", "--json"], timeout=3000)
    assert result.code == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["built"] == [NAME] and report["left_for_others"] == []
    out = project / "dist-all"
    (wheel,) = (out / "variants" / NAME).glob("*.whl")
    assert wheel.name.startswith("extension_cpp_stable-0.0.1-cp39-abi3-manylinux_")  # the default: plain version
    assert (out / wheel.name).read_bytes() == wheel.read_bytes()
    requires = [line for line in _metadata(wheel) if line.startswith("Requires-Dist:")]
    assert requires == ["Requires-Dist: torch>=2.10"]  # not torch==2.13.*: it loads on every torch from 2.10
    (entry,) = json.loads((out / "release-manifest.json").read_text())["wheels"]
    assert entry["variant"]["name"] == NAME and entry["variant"]["stable_abi"] == "2.10"
    assert entry["torch"]["version"].startswith("2.13.")  # what it compiled against
    hub = out / "build" / NAME
    assert json.loads((hub / "metadata.json").read_text())["kestrel-release"]["variant"] == NAME
    assert (hub / "extension_cpp_stable" / "_C.abi3.so").is_file()

    verify = run_cli(["verify", "--project", str(project), "--json"])
    assert verify.code == 0, verify.stdout[-3000:] + verify.stderr[-2000:]
    assert not [
        f for w in json.loads(verify.stdout)["wheels"] for f in w["findings"] if f["rule"] == "torch-stable-abi"
    ]

    explain = run_cli(["explain", "--project", str(project), "--torch", "2.14", "--json"])
    assert explain.code == 0, explain.stderr
    answer = json.loads(explain.stdout)
    assert answer["variant"]["name"] == NAME and answer["loads_on"] == "torch>=2.10" and answer["index"] == "pypi"
    old = run_cli(["explain", "--project", str(project), "--torch", "2.9"])
    assert old.code == 5
    assert "torch 2.9 is older than extension_cpp_stable's stable-ABI target 2.10" in old.stderr

    _tampered_binary_fails_verify(project, tmp_path, wheel)

    for minor in TORCH:  # the one wheel, next to each torch
        python = torch_envs[minor]
        subprocess.run([_uv(), "pip", "install", "-q", "--offline", "--no-deps", "--python", str(python), str(wheel)],
                       check=True, timeout=600)  # fmt: skip
        run = subprocess.run(
            [str(python), "-c", "import torch, extension_cpp_stable as e; "
             "print(torch.__version__, e.ops.mymuladd(torch.ones(2), torch.full((2,), 3.0), 0.5).tolist())"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        version, values = run.stdout.strip().split(" ", 1)
        assert version.startswith(f"{minor}.") and values == "[3.5, 3.5]"


@pytest.mark.slow
def test_an_extension_on_torchs_full_api_fails_its_stable_abi_build_saying_why(tmp_path):
    """examples/torch-cpp-ext includes ATen/ATen.h and torch/library.h: with TORCH_TARGET_VERSION set torch refuses them."""
    project = tmp_path / "torch-cpp-ext"
    shutil.copytree(
        ROOT / "examples" / "torch-cpp-ext", project, ignore=shutil.ignore_patterns("build", "*.egg-info", "dist-all")
    )
    text = (project / "pyproject.toml").read_text()
    table = text.index("[tool.kestrel-release.variants]")
    stable = '[tool.kestrel-release.variants]\nstable_abi = "2.10"\ntorch = ["2.13"]\ncuda = ["13.0"]\n'
    (project / "pyproject.toml").write_text(text[:table] + stable)
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=project, check=True, timeout=60)
    result = run_cli(["build", "--project", str(project)], timeout=3000)
    assert result.code == 4, result.stderr[-3000:]
    error = next(line for line in result.stderr.splitlines() if line.startswith("error: "))
    assert "TORCH_TARGET_VERSION is defined" in error
    assert f"(variant {NAME}: the sources include torch headers outside the stable ABI" in error
    assert "remove [tool.kestrel-release.variants] stable_abi" in error


@pytest.mark.slow
def test_release_rehearse_of_the_stable_abi_extension_passes_its_smoke_test(tmp_path, torch_envs):
    """The whole rehearsal: build, verify, publish to the local stand-ins, and the smoke test, which imports torch
    before extension_cpp_stable (its __init__.py imports `_C` first; `_C` needs the libc10.so torch loads). Before,
    the smoke test stopped it: "`import extension_cpp_stable` fails: ImportError: libc10.so: cannot open shared
    object file". The smoke venv's torch (the wheel requires torch>=2.10) is held at 2.14, in uv's cache."""
    project = _project(tmp_path)
    # torch derives CUDA_HOME from nvcc on PATH (/usr/local/bin here, a toolkit without headers): name the toolkit,
    # as release's preflight says to
    toolkits = sorted(Path("/usr/local").glob("cuda-13.0*/include/cuda_runtime_api.h"))
    if not toolkits:
        need("a CUDA 13.0 toolkit under /usr/local/cuda-13.0", "install it")
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(f"torch=={TORCH[-1]}.*\n")
    env = {"CUDA_HOME": str(toolkits[0].parent.parent), "UV_CONSTRAINT": str(constraints)}
    argv = ["release", "--project", str(project), "--rehearse", "--targets", "testpypi,pypi", "--yes", "--json"]
    result = run_cli([*argv, "--no-gpu-check"], env=env, timeout=3000)
    assert result.code == 0, result.stderr[-3000:]
    steps = {s["name"]: s for s in json.loads(result.stdout)["steps"]}
    assert steps["smoke-test"]["detail"] == "installed and imported from testpypi on Python 3.12", steps["smoke-test"]
