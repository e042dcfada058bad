"""Helpers for the GitHub publisher tests: tiny valid wheels, a tmp project, a download poller."""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from kestrel_release import manifest

REPO = "m87-labs/kestrel"
TAG = "kestrel-kernels-nightly"
CANARY = "ghp_" + "C4naryT0ken" * 3 + "abc"  # ghp_ + 36 characters
PYTHONS = ("3.12", "3.13")
PLAT = "manylinux_2_34_x86_64"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(out: Path, version: str, python: str, payload: str = "", extra: dict | None = None) -> Path:
    """A valid platform wheel of kestrel-kernels (correct RECORD), a few hundred bytes."""
    tag = "cp" + python.replace(".", "")
    name = f"kestrel_kernels-{version}-{tag}-{tag}-{PLAT}.whl"
    info = f"kestrel_kernels-{version}.dist-info"
    files = {
        "kestrel_kernels/__init__.py": f'__version__ = "{version}"\n{payload}'.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: kestrel-kernels\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: kestrel-tests\nRoot-Is-Purelib: false\n"
                          f"Tag: {tag}-{tag}-{PLAT}\n").encode(),
        **(extra or {}),
    }
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in files.items()) + f"{info}/RECORD,,\n"
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for p, d in {**files, f"{info}/RECORD": record.encode()}.items():
            zf.writestr(zipfile.ZipInfo(p, (2024, 1, 1, 0, 0, 0)), d)
    return path


def make_project(root: Path, version: str, *, retries: int = 2, extra: str = "") -> Path:
    """A kernel-package directory whose config verifies the tiny wheels (no SASS required)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f"""\
[project]
name = "kestrel-kernels"
version = "{version}"

[tool.kestrel-release]
python = {list(PYTHONS)!r}
out_dir = "dist-all"

[tool.kestrel-release.verify]
required_sass = []

[tool.kestrel-release.publish]
retries = {retries}
backoff = 0.01
max_backoff = 0.05
timeout = 10
rate_limit_wait_cap = 5

[tool.kestrel-release.targets.github]
repo = "{REPO}"
{extra}""")
    return root


def build_output(project: Path, version: str, commit: str, payload: str = "", extra: dict | None = None) -> Path:
    """dist-all/ with one wheel per Python, a manifest naming `commit`, and SHA256SUMS.

    Like a real bump + build, the project's pyproject then declares `version` too.
    """
    pyproject = project / "pyproject.toml"
    pyproject.write_text(re.sub(r'(?m)^version = ".*"$', f'version = "{version}"', pyproject.read_text(), count=1))
    out = project / "dist-all"
    for old in out.glob("*.whl"):
        old.unlink()
    wheels = [make_wheel(out, version, py, payload, extra) for py in PYTHONS]
    rows = [{"filename": w.name, "python": py, "python_tag": "cp" + py.replace(".", ""), "platform_tag": PLAT,
             "size": w.stat().st_size, "sha256": hashlib.sha256(w.read_bytes()).hexdigest()}
            for w, py in zip(wheels, PYTHONS)]
    manifest.save(out, {"package": "kestrel-kernels", "version": version,
                        "git": {"commit": commit, "dirty": False}, "wheels": rows, "kernels": []})
    manifest.write_sums(out, rows)
    return out


class Poller(threading.Thread):
    """Downloads `url` in a loop and counts answers that are not 200 (the asset was missing)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.ok, self.missing, self.errors = url, 0, 0, 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=5) as resp:
                    resp.read()
                    self.ok += 1
            except urllib.error.HTTPError:
                self.missing += 1
            except OSError:  # the emulator itself failed to answer
                self.errors += 1

    def stop(self) -> "Poller":
        self._halt.set()
        self.join(10)
        return self
