"""A project's name and version from its build backend, in the environment its builds use.

Glue between the configuration and adapters/backend_meta: with isolation on (the default) the
backend runs in the reusable build env of the oldest configured Python (build_env.py: exactly the
project's build requirements), so a torch extension's multi-gigabyte `torch` build requirement
is installed once for metadata and builds alike; without isolation, in the oldest configured
Python itself. Only when neither can be had does pypa/build make a throwaway isolated env.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.config.model import Config
from kestrel_release.errors import KestrelError
from kestrel_release.facts import pyversions
from kestrel_release.project import backend_meta

if TYPE_CHECKING:
    from kestrel_release.project.build_env import TorchPin


def _oldest(cfg: Config) -> str:
    return min(cfg.python, key=pyversions.sort_key)


def _build_python(cfg: Config, torch: TorchPin | None = None) -> Path | None:
    """The interpreter the backend should run in (see the module doc); None = pypa/build isolation.
    `torch` (a build_env.TorchPin): a variant's env, e.g. the interpreter's own torch on an offline host."""
    from kestrel_release.adapters import pythons, toolchain, uv

    try:
        python = pythons.find_interpreter(_oldest(cfg))
        if not cfg.build.isolation:
            return python
        if cfg.build.frontend != "uv":
            return None
        from kestrel_release.project import build_env as _buildenv

        logs = toolchain.cache_dir() / "metadata" / "logs"
        # ensure asks the backend in a clean copy of the sources: `version` writes nothing in the project
        return _buildenv.ensure(
            uv.find_uv(),
            python,
            cfg.project_dir,
            log_dir=logs,
            tag="metadata",
            env=cfg.build.env,
            torch=torch,
            extra=cfg.build.requires,
        )
    except KestrelError:
        return None  # no such Python or env here: fall back to pypa/build's own isolation


def resolve(cfg: Config, outputs: Sequence[Path] | None = None, torch: TorchPin | None = None) -> Config:
    """`cfg` with the name and version its configuration could not state (no [project] table) filled in.

    From the release manifest of `outputs` when given (an empty list: the configured out dir; build
    checked those wheels against the backend), else from the build backend (for_config, cached).
    A project with [project], or a cfg resolved before, is returned as it is: each stage that needs
    a name calls this on entry, and a stage called by another costs nothing.
    """
    if cfg.metadata_source != "backend" or cfg.name:
        return cfg
    from kestrel_release.output_dir import identity as output_identity

    found = output_identity.from_outputs(outputs, cfg.out_path) if outputs is not None else None
    if found is not None:
        return dataclasses.replace(cfg, name=found[0], version=found[1])
    meta = for_config(cfg, torch)
    return dataclasses.replace(cfg, name=meta.name, version=meta.version)


def for_config(cfg: Config, torch: TorchPin | None = None) -> backend_meta.Metadata:
    """The backend's metadata of cfg's project, cached by its inputs (files, git HEAD, tags, dirty files:
    see adapters/backend_meta_key); the inputs are read before the backend is asked."""
    extra = tuple(vf.path for vf in cfg.version_files)
    found = backend_meta.lookup(cfg.project_dir, isolated=cfg.build.isolation, extra_inputs=extra, env=cfg.build.env)
    if found.found is not None:
        return found.found
    python = _build_python(cfg, torch)
    return backend_meta.metadata(
        cfg.project_dir,
        isolated=cfg.build.isolation and python is None,
        env=cfg.build.env,
        python=python,
        extra_inputs=extra,
        cache_as_isolated=cfg.build.isolation,
        looked_up=found,
    )
