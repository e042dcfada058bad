"""release-manifest.json and SHA256SUMS: what was built, and what verify passed.

build writes the manifest; verify adds a `verified` record (sha256 of each
wheel it passed); publish refuses any wheel whose bytes changed since.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kestrel_release.errors import PublishError, UsageError
from kestrel_release.fsutil import atomic_write_text, sha256_file

MANIFEST = "release-manifest.json"
SUMS = "SHA256SUMS"
SCHEMA = 1


def load(out_dir: Path) -> dict[str, Any] | None:
    """The manifest in `out_dir`, or None when there is none."""
    path = Path(out_dir) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid JSON ({exc})", "rebuild with kestrel-release build") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UsageError(f"{path} has an unknown schema", "rebuild with kestrel-release build")
    return data


def save(out_dir: Path, data: dict[str, Any]) -> Path:
    data = {"schema": SCHEMA, **{k: v for k, v in data.items() if k != "schema"}}
    path = Path(out_dir) / MANIFEST
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


# Who built an output: lets `assemble` record per wheel which machine or CI job made it.
BUILDER_ENV = "KESTREL_RELEASE_BUILDER"  # a label the CI workflow sets per matrix leg
_CI_ENV = {
    "job": "GITHUB_JOB",
    "run_id": "GITHUB_RUN_ID",
    "run_attempt": "GITHUB_RUN_ATTEMPT",
    "workflow": "GITHUB_WORKFLOW",
    "repository": "GITHUB_REPOSITORY",
    "runner": "RUNNER_NAME",
}


def builder(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The machine (and the CI job, when on GitHub Actions) that is building now."""
    import os
    import platform
    import socket
    import sysconfig

    env = dict(os.environ if env is None else env)
    ci = {key: env[name] for key, name in _CI_ENV.items() if env.get(name)}
    return {
        "host": socket.gethostname(),
        "platform": sysconfig.get_platform(),
        "machine": platform.machine(),
        "label": env.get(BUILDER_ENV) or None,
        "ci": ci if "run_id" in ci else None,
    }


def wheel_paths(out_dir: Path) -> list[Path]:
    """The wheels the manifest in `out_dir` names (the build's own, in a possibly shared folder)."""
    data = load(out_dir) or {}
    return [
        Path(out_dir) / str(w["filename"]) for w in data.get("wheels", []) if isinstance(w, dict) and w.get("filename")
    ]


def write_sums(out_dir: Path, wheels: list[dict[str, Any]]) -> Path:
    """SHA256SUMS in the format `sha256sum -c` accepts (two spaces, relative names)."""
    lines = [f"{w['sha256']}  {w['filename']}\n" for w in sorted(wheels, key=lambda w: w["filename"])]
    path = Path(out_dir) / SUMS
    atomic_write_text(path, "".join(lines))
    return path


def record_verified(out_dir: Path, target: str | None, hashes: dict[str, str]) -> None:
    """Remember which bytes verify passed; a no-op without a manifest."""
    data = load(out_dir)
    if data is None:
        return
    verified = data.get("verified") or {}
    verified[target or "default"] = {"wheels": dict(sorted(hashes.items()))}
    data["verified"] = verified
    save(out_dir, data)


def verified_hashes(out_dir: Path, target: str | None = None) -> dict[str, str]:
    """sha256 by filename that verify recorded (for `target`, or any target)."""
    data = load(out_dir) or {}
    verified = data.get("verified") or {}
    if target and target in verified:
        return dict(verified[target]["wheels"])
    merged: dict[str, str] = {}
    for record in verified.values():
        merged.update(record.get("wheels", {}))
    return merged


def check_unchanged(wheels: list[Path], target: str | None) -> None:
    """Refuse bytes that differ from what build recorded and verify passed for `target` (exit 6, both
    hashes): the one integrity gate of every publisher, index or GitHub."""
    for wheel in wheels:
        data = load(wheel.parent)
        if data is None:
            continue  # ad-hoc wheels outside a build output: verify is the only gate
        built = {w.get("filename"): w.get("sha256") for w in data.get("wheels", [])}
        if wheel.name not in built:
            raise PublishError(
                f"{wheel.name} is not in {wheel.parent / MANIFEST}",
                "publish only wheels that kestrel-release build produced",
            )
        actual = sha256_file(wheel)
        verified = verified_hashes(wheel.parent, target).get(wheel.name)
        for what, expected in (("built", built[wheel.name]), ("verified", verified)):
            if expected and actual != expected:
                raise PublishError(
                    f"{wheel.name} changed since it was {what}: sha256 {actual} != {what} {expected}",
                    "the file was modified or replaced; rebuild with kestrel-release build",
                )
