"""The configuration a build output was made under, recorded in its manifest and compared before publishing.

Why: verify's matrix rule sees the Pythons and platforms in the file names, but not what else shaped the
wheels: a `[tool.kestrel-release.variants]` table added after the build (the old wheels pin no torch), other
CUDA toolkits or architectures, `build.env`, the precompile steps. Publishing such an output would ship what
the current configuration no longer builds. `build` records `built_with` (config-only: no Python list or
platform, which a machine's flags narrow and the matrix rule checks); verify, publish and release --from
compare it with the configuration of now and name what differs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kestrel_release.records.manifest import Manifest

KEY = "built_with"
# Read from the table as written: a build changes its working config per variant and platform (cuda, env),
# and what is compared is what the user declared.
_TOP = ("abi", "cuda", "cuda_arch", "cuda_ptx", "precompile")


def record(project_dir: Path) -> dict[str, Any]:
    """What of the project's `[tool.kestrel-release]` shapes the wheels' contents beyond their tags."""
    from kestrel_release._compat import tomllib

    try:
        with open(Path(project_dir) / "pyproject.toml", "rb") as fh:
            table = tomllib.load(fh).get("tool", {}).get("kestrel-release", {})
    except (OSError, ValueError):  # config loading reports a broken file; nothing to compare with here
        return {}
    if not isinstance(table, dict):
        return {}
    build: dict[str, Any] = table["build"] if isinstance(table.get("build"), dict) else {}
    variants = table.get("variants") if isinstance(table.get("variants"), dict) else None
    env = json.dumps(build.get("env") or {}, sort_keys=True, default=str)
    out: dict[str, Any] = {key: table.get(key) for key in _TOP}
    out["cuda_compress"] = build.get("cuda_compress")
    out["build_env_sha256"] = hashlib.sha256(env.encode()).hexdigest()  # a digest: values may be private
    out["variants"] = None if variants is None else {"torch": variants.get("torch"), "cuda": variants.get("cuda")}
    return json.loads(json.dumps(out, default=str))  # JSON-safe, as it will be read back


_LABELS = {
    "abi": "abi",
    "cuda": "cuda (toolkits)",
    "cuda_arch": "cuda_arch",
    "cuda_ptx": "cuda_ptx",
    "cuda_compress": "build.cuda_compress",
    "precompile": "precompile",
    "build_env_sha256": "build.env",
    "variants": "the variants table",
}


def _show(key: str, value: Any) -> str:
    if key == "build_env_sha256":
        return "other values"
    if key == "variants":
        return "none" if not value else f"torch {_show('', value.get('torch'))} x cuda {_show('', value.get('cuda'))}"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return str(value) if value not in ("", None) else "none"


def differences(project_dir: Path, data: Manifest) -> list[str]:
    """One phrase per setting the manifest `data` was built under that differs from `cfg` now. A manifest
    written before the record existed is judged on what its wheels show: no variant records under a variants
    table (the wheels pin no torch)."""
    recorded = data.built_with
    now = record(project_dir)
    if recorded is not None and now:
        return [
            f"{_LABELS.get(key, key)} was {_show(key, recorded.get(key))}, is {_show(key, value)} now"
            if key != "build_env_sha256"
            else "build.env has other values now"
            for key, value in now.items()
            if key in recorded and recorded.get(key) != value
        ]
    has_variants = any(w.variant is not None for w in data.wheels) or data.variant is not None
    if data.wheels and now.get("variants") and not has_variants:
        return [f"the variants table was none, is {_show('variants', now['variants'])} now"]
    return []
