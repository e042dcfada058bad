"""The build frontend's command: one wheel of a project for one Python, by `uv build` or pypa/build.

Both frontends may run through uv (pypa/build from an ephemeral uv tool env), which is why uv's binary
is a parameter; the argv is built here and run by the build stage through proc.
"""

from __future__ import annotations

from pathlib import Path


def wheel_command(
    uv: Path,
    python: Path,
    project: Path,
    out_dir: Path,
    *,
    frontend: str,
    isolation: bool,
    config_settings: dict[str, str],
) -> list[str]:
    """argv that builds one wheel of `project` for `python` into `out_dir`.

    frontend "uv": `uv build --wheel`. frontend "build": pypa/build; with isolation
    it runs from an ephemeral uv tool env on `python` (no need to install build
    into each interpreter); without isolation it must be `python -m build`, since
    the build dependencies have to be importable by that very interpreter.
    """
    settings = [f"--config-setting={k}={v}" for k, v in config_settings.items()]
    if frontend == "uv":
        return [
            str(uv),
            "build",
            "--wheel",
            "--python",
            str(python),
            "--out-dir",
            str(out_dir),
            *(() if isolation else ("--no-build-isolation",)),
            *settings,
            str(project),
        ]
    if isolation:
        return [
            str(uv),
            "tool",
            "run",
            "--python",
            str(python),
            "--from",
            "build",
            "pyproject-build",
            "--installer",
            "uv",
            "--wheel",
            "--outdir",
            str(out_dir),
            *settings,
            str(project),
        ]
    return [str(python), "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out_dir), *settings, str(project)]
