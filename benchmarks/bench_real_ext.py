"""A real third-party torch CUDA extension, several Pythons: the tool against the seed's loop.

chamferdist 1.0.3 (pinned by sha256 in tools/fetch-real-extensions; one `.cu` with its kernels, two C++
files with the bindings and a CPU path), sm_90a only (TORCH_CUDA_ARCH_LIST=9.0a). One round of, in turn:
- the seed's loop, cold: one `uv build --wheel` per Python, one after the other, each in a fresh copy (no
  repair step: the loop gets that for free);
- the tool, one Python, cold (a fresh tool cache: build env, compile cache, wheel cache all empty);
- the tool, every Python, cold (the same, fresh);
- the tool after a one-line `.py` edit (the wheel cache misses, the compile cache serves);
- the tool after a one-line `.cu` edit (a real code line, not a comment: ccache drops comments).
Compiles from the cache per Python come from `build -v`; the plan's parallelism and forecast lines and the
measured peaks (build-history.json) are kept as notes.

Two ways to get torch into the builds: `requires` (a pyproject.toml listing torch as a build requirement,
the loop and the tool both install it, from uv's cache after the first time) or `host` (build.isolation
off: the interpreters' own torch, as on an offline GPU host). Standalone:
`python benchmarks/bench_real_ext.py --pythons 3.12 --torch host --json OUT`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, BenchFailed, Comparison, Figure, NotAvailable, Section, bench_env

PYTHONS = ("3.10", "3.11", "3.12", "3.13")
# torch 2.14+ headers need C++20 and chamferdist compiles with -std=c++17: the newest torch that builds it.
TORCH = "torch==2.13.0"
NAME, VERSION, SHA256 = "chamferdist", "1.0.3", "ac9d3a723329d230bcdd5ee8a01f13632ebae31b2ae221116579637ed57a4567"
LINE = re.compile(r"compile cache, Python (\S+): (\d+) hits, (\d+) misses")
PLAN = re.compile(r"^(parallelism|forecast): .*$", re.M)


def sdist() -> Path:
    """The pinned sdist, fetched once (sha256 checked by the script)."""
    out = subprocess.run([str(ROOT / "tools" / "fetch-real-extensions")], capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        name, version, sha, path = line.split(maxsplit=3)
        if name == NAME and version == VERSION and sha == SHA256:
            return Path(path)
    raise NotAvailable(f"{NAME} {VERSION} not fetched: {out.stderr.strip()[-300:]}")


def _git(project: Path, *args: str) -> None:
    ident = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(["git", *ident, *args], cwd=project, check=True, capture_output=True)


def project(tarball: Path, dest: Path, pythons: tuple[str, ...], torch: str, env: dict[str, str]) -> Path:
    """A fresh unpacked copy, configured for the tool (the loop ignores the table), committed."""
    dest.mkdir(parents=True)
    subprocess.run(["tar", "--no-same-owner", "-xzf", str(tarball), "-C", str(dest)], check=True)
    root = dest / f"{NAME}-{VERSION}"
    requires = '"setuptools>=64", "wheel"' + (f', "{TORCH}"' if torch == "requires" else "")
    build_env = ", ".join(f'{k} = "{v}"' for k, v in env.items())
    (root / "pyproject.toml").write_text(
        f'[build-system]\nrequires = [{requires}]\nbuild-backend = "setuptools.build_meta"\n\n'
        f"[tool.kestrel-release]\npython = {json.dumps(list(pythons))}\n\n"
        f"[tool.kestrel-release.build]\nisolation = {'false' if torch == 'host' else 'true'}\n"
        f"env = {{ {build_env} }}\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "sdist")
    return root


def edit_py(root: Path, n: int) -> None:
    with open(root / NAME / "__init__.py", "a", encoding="utf-8") as fh:
        fh.write(f"# bench edit {n}\n")
    _git(root, "commit", "-qam", f"py edit {n}")


def edit_cu(root: Path, n: int) -> None:
    with open(root / NAME / "knn.cu", "a", encoding="utf-8") as fh:
        fh.write(f"static const int kestrel_bench_edit_{n} = {n};\n")
    _git(root, "commit", "-qam", f"cu edit {n}")


def _timed(argv: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=7200, check=False)
    seconds = time.perf_counter() - start
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(
            f"+ {' '.join(argv)}  ({seconds:.1f} s, exit {done.returncode})\n{done.stdout[-4000:]}\n{done.stderr}\n"
        )
    if done.returncode != 0:
        raise BenchFailed(f"{argv[:3]} exited {done.returncode} (log: {log}): {done.stderr.strip()[-300:]}")
    return seconds, done.stderr


def loop(tarball: Path, work: Path, interpreters: dict[str, Path], torch: str, env: dict, log: Path) -> float:
    """The seed's loop: `uv build --wheel` per Python, in turn, each in a fresh copy (its time: the sum)."""
    total = 0.0
    for py, interp in interpreters.items():
        root = project(tarball, work / f"loop-{py}", (py,), torch, {})
        out = str(work / f"loop-{py}-dist")
        if shutil.which("uv", path=env.get("PATH")):
            argv = ["uv", "build", "--wheel", "--python", str(interp), "--out-dir", out, str(root)]
            argv += ["--no-build-isolation"] if torch == "host" else []
        else:  # an offline host without uv: pypa/build, as the seed's README does
            argv = [str(interp), "-m", "build", "--wheel", "--outdir", out, str(root)]
            argv += ["--no-isolation"] if torch == "host" else []
        total += _timed(argv, env, log)[0]
    return total


def _cuda_headers(work: Path) -> dict[str, str]:
    """CPATH for the seed's loop: torch's ATen/cuda headers include cusparse.h and cublas_v2.h, which a
    toolkit from PyPI or a slim one lacks; the tool finds them in the build env's nvidia-* wheels, a user of
    the loop sets CPATH by hand. Taken from the tool's first build env here (the same wheels)."""
    found = sorted({str(d) for d in work.glob("cache-*/build-envs/*/lib/python*/site-packages/nvidia/*/include")})
    return {"CPATH": os.pathsep.join(found)} if found else {}


def _cuda_home(env: dict[str, str]) -> dict[str, str]:
    """CUDA_HOME for the seed's loop: torch derives it from `which nvcc` without resolving a wrapper or a link
    (/usr/local/bin/nvcc gives /usr/local: `cannot find -lcudart` at the link); the tool sets it to the toolkit
    behind nvcc, a user of the loop exports it by hand. The same toolkit for both."""
    if env.get("CUDA_HOME") or env.get("CUDA_PATH"):
        return {}
    from kestrel_release.stages.build_wheels import cuda_tools

    real = cuda_tools.headers_home(shutil.which("nvcc", path=env.get("PATH")))
    return {"CUDA_HOME": str(real)} if real else {}


def tool(root: Path, env: dict[str, str], log: Path) -> tuple[float, dict[str, tuple[int, int]], list[str]]:
    argv = [sys.executable, "-m", "kestrel_release", "build", "--project", str(root), "--no-gpu-check", "-v"]
    seconds, err = _timed(argv, env, log)
    return seconds, {m[1]: (int(m[2]), int(m[3])) for m in LINE.finditer(err)}, [m[0] for m in PLAN.finditer(err)]


def _peaks(cache: Path) -> str:
    rows = []
    for found in cache.glob("projects/*/build-history.json"):
        for py, m in json.loads(found.read_text()).get("pythons", {}).items():
            rows.append(
                f"{py}: {m['wall_s']:.0f} s, tree {m['peak_rss'] / 2**30:.2f} GiB, compile {m['peak_compile'] / 2**30:.2f} GiB"
            )
    return "; ".join(rows)


def run(
    work: Path, pythons: tuple[str, ...] = PYTHONS, torch: str = "requires", arch: str = "9.0a", loop_s: float = 0.0
) -> Section:
    """One round (module doc). `loop_s`: the seed loop's seconds measured by an earlier run (a loaded 2-core
    machine: 17 min per Python), which then is not run again and the ratios say so."""
    from kestrel_release.adapters import ccache
    from kestrel_release.adapters import pythons as find

    if ccache.find() is None:
        raise NotAvailable("no ccache")
    if shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists():
        raise NotAvailable("no nvcc")
    interpreters = {py: find.find_interpreter(py) for py in pythons}
    tarball = sdist()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = work / "real-ext.log"
    build_env = {
        "TORCH_CUDA_ARCH_LIST": arch,
        # chamferdist's setup.py compiles knn.cu only with a visible GPU or FORCE_CUDA=1 (none here: this
        # machine has no GPU, and the kernels are the part that is the same for every Python).
        "FORCE_CUDA": "1",
        **({"CXX": os.environ["BENCH_CXX"]} if os.environ.get("BENCH_CXX") else {}),
    }
    env = bench_env({"SOURCE_DATE_EPOCH": "1700000000", **build_env})
    figs = {k: Figure(k) for k in ("loop cold", "one Python cold", "all cold", ".py edit", ".cu edit")}
    notes = [f"load before: {os.getloadavg()[0]:.2f}"]
    if len(pythons) > 1 and not os.environ.get("BENCH_SKIP_ONE"):  # one Python: "every Python cold" is it
        one = project(tarball, work / "one", pythons[-1:], torch, build_env)
        seconds = tool(one, {**env, "KESTREL_RELEASE_CACHE_DIR": str(work / "cache-one")}, log)[0]
        figs["one Python cold"].samples.append(seconds)
    root = project(tarball, work / "all", pythons, torch, build_env)
    cache = work / "cache-all"
    tenv = {**env, "KESTREL_RELEASE_CACHE_DIR": str(cache)}
    seconds, cold, plan = tool(root, tenv, log)
    figs["all cold"].samples.append(seconds)
    if len(pythons) == 1:
        figs["one Python cold"].samples.append(seconds)
    notes.append(f"cold: {cold}; plan: {' | '.join(plan)}")
    edit_py(root, 1)
    seconds, hits, plan = tool(root, tenv, log)
    figs[".py edit"].samples.append(seconds)
    notes.append(f"after a .py edit: {hits}; plan: {' | '.join(plan)}")
    if not os.environ.get("BENCH_SKIP_CU"):  # a short device lease: the .cu edit was shown with one arch
        edit_cu(root, 1)
        seconds, hits, _ = tool(root, tenv, log)
        figs[".cu edit"].samples.append(seconds)
        notes.append(f"after a .cu edit (hits, misses): {hits}")
    # The loop last (its per-Python times are in the log as each ends): the longest part, it may be cut short.
    if loop_s:
        figs["loop cold"].samples.append(loop_s)
        notes.append(f"the seed's loop: {loop_s:.0f} s measured by an earlier run, not side by side")
    else:
        headers = {**_cuda_headers(work), **_cuda_home(env)}
        figs["loop cold"].samples.append(loop(tarball, work, interpreters, torch, {**env, **headers}, log))
        notes.append(f"load after the loop: {os.getloadavg()[0]:.2f}")
    return _section(figs, notes, pythons, arch, cache)


def _section(figs: dict[str, Figure], notes: list[str], pythons: tuple[str, ...], arch: str, cache: Path) -> Section:
    notes.append(f"measured by the tool (last build): {_peaks(cache)}")
    notes.append(f"load after: {os.getloadavg()[0]:.2f}")
    section = Section(
        f"Real extension: {NAME} {VERSION}, {len(pythons)} Python(s), {arch}", figures=list(figs.values())
    )
    comparisons = [
        Comparison("all Pythons cold vs one Python cold", figs["all cold"], figs["one Python cold"], max_ratio=1.5),
        Comparison("all Pythons cold vs the seed's loop", figs["all cold"], figs["loop cold"], max_ratio=0.4),
        Comparison("after a .py edit vs the seed's loop", figs[".py edit"], figs["loop cold"], max_ratio=0.1),
        Comparison("after a .cu edit vs the seed's loop", figs[".cu edit"], figs["loop cold"]),
    ]
    section.figures = [f for f in section.figures if f.samples]  # a step skipped (--skip-one, BENCH_SKIP_CU)
    section.comparisons += [c for c in comparisons if c.subject.samples and c.baseline and c.baseline.samples]
    section.notes += notes
    return section


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pythons", default=",".join(PYTHONS))
    p.add_argument("--torch", choices=("requires", "host"), default="requires")
    p.add_argument("--arch", default="9.0a")
    p.add_argument("--work", default="/tmp/kestrel-bench-real-ext")
    p.add_argument("--json", help="write the section as JSON here")
    p.add_argument("--loop-seconds", type=float, default=0.0, help="the seed loop's time from an earlier run")
    p.add_argument("--skip-one", action="store_true", help="no separate one-Python cold build")
    args = p.parse_args()
    if args.skip_one:
        os.environ["BENCH_SKIP_ONE"] = "1"
    section = run(Path(args.work), tuple(args.pythons.split(",")), args.torch, args.arch, args.loop_seconds)
    doc = {
        "title": section.title,
        "figures": [f.to_json() for f in section.figures],
        "comparisons": [
            {"claim": c.claim, "ratio": c.ratio, "target": c.target, "met": c.met} for c in section.comparisons
        ],
        "notes": section.notes,
    }
    text = json.dumps(doc, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
