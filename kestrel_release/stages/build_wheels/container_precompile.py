"""The precompile step in the image (build.precompile_in = "container"): the image's CUDA toolkit.

Where the step runs is the one difference from a host precompile (precompile.py, precompile_pairs.py):
the same cache (`<cache>/precompile/<key>/`, keyed the same way, the toolkit being the image's nvcc,
its exact version and path, and the host compilers being the image's cc/c++), the same outputs in the
project's `precompile_outputs`, which every Python's build then carries into the image with the
sources. The step runs in a workspace holding a clean copy of the sources, with the build's variables
and the step's own (paths of this host translated to the copy, `{python}` the image's Python), and
what it wrote to its output directory comes back here. With precompile_in = "host" (the default) the
step runs here and its outputs go into the image with the sources.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from kestrel_release.adapters.cuda_toolkit import Toolkit
from kestrel_release.config.model import Config
from kestrel_release.errors import BuildError
from kestrel_release.process import proc
from kestrel_release.project import source_copy
from kestrel_release.stages.build_wheels import container as _container
from kestrel_release.stages.build_wheels import precompile as _precompile


def wanted(cfg: Config) -> bool:
    return bool(cfg.precompile) and bool(cfg.build.container) and cfg.build.precompile_in == "container"


def check(cfg: Config, target: _container.Target | None, problems: list[str]) -> dict[str, Toolkit]:
    """The image's toolkit, as precompile_pairs' {configured name: Toolkit} (paths inside the image);
    one preflight line (exit 3) when the image has none or not the configured one."""
    if target is None:
        return {}
    fix = 'use an image with the CUDA toolkit, or set build.precompile_in = "host"'
    if not target.nvcc or not target.nvcc_version:
        problems.append(
            f'build.precompile_in = "container" but the image {target.image} has no nvcc (looked at CUDACXX, '
            f"CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda*/bin) — {fix}"
        )
        return {}
    nvcc = Path(target.nvcc)
    toolkit = Toolkit(target.nvcc_version, f"{target.image}", nvcc.parent.parent, nvcc)
    wrong = [name for name in cfg.cuda if name != toolkit.short]
    if wrong:
        problems.append(
            f"the image {target.image} has CUDA {target.nvcc_version}, not the configured CUDA "
            f'{", ".join(wrong)} — use an image with it, or set build.precompile_in = "host"'
        )
        return {}
    return {name: toolkit for name in (cfg.cuda or (toolkit.short,))}


def runner(cfg: Config, target: _container.Target, copy_rules: dict) -> _precompile.Runner:
    """A precompile runner (precompile.run_on_host's signature) that runs the step in the image."""
    python = next((target.pythons[py] for py in cfg.python if py in target.pythons), "python3")

    def run(argv: list[str], *, cwd: Path, env: dict[str, str], log: Path, what: str, out: Path) -> None:
        engine, image = target.engine, target.image
        with _container.workspace(engine, image) as ws:
            inside = engine.inside(ws, image)
            src = source_copy.make(cfg.project_dir, ws / "src", **copy_rules)
            for sub in ("home", "tmp"):
                (ws / sub).mkdir()
            project_in = f"{inside}/{src.relative_to(ws).as_posix()}"
            mapping = [(sys.executable, python), (str(cfg.project_dir.resolve()), project_in)]
            if str(cfg.project_dir) != str(cfg.project_dir.resolve()):
                mapping.append((str(cfg.project_dir), project_in))

            def here(text: str) -> str:
                for old, new in mapping:
                    text = text.replace(old, new)
                return text

            # The image's toolkit is visible to the step as a host's must be (cuda_tools): unless set.
            nvcc = Path(target.nvcc)
            found = {"CUDA_HOME": str(nvcc.parent.parent), "CUDACXX": str(nvcc)} if target.nvcc else {}
            exports = {**found, **{k: here(v) for k, v in env.items() if k != "PATH"}}
            script = _container.build_env_script(exports, inside, "env")
            host_path = set(os.environ.get("PATH", "").split(os.pathsep))
            own = [p for p in env.get("PATH", "").split(os.pathsep) if p and p not in host_path]
            own += [str(nvcc.parent)] if target.nvcc else []
            if own:  # the toolkit's bin dir first, then the image's PATH (not this host's)
                script += f'export PATH={shlex.quote(":".join(map(here, own)))}:"$PATH"\n'
            script += f"cd {shlex.quote(here(str(cwd.resolve())))}\n{shlex.join([here(a) for a in argv])}\n"
            (ws / "precompile.sh").write_text(script, encoding="utf-8")
            console_what = f"{what} in {image}"
            proc.run_logged(engine.run_argv(image, ws, f"{inside}/precompile.sh"), log=log, what=console_what)
            wrote = src / out.resolve().relative_to(cfg.project_dir.resolve())
            if not wrote.is_dir():
                raise BuildError(
                    f"precompile ran in {image} but wrote no {out}", f"check precompile_outputs (log: {log})"
                )
            _precompile.restore(wrote, out)

    return run
