"""A built wheel made into a variant wheel: torch pinned to the minor it was built against, and the
version (`+cu126`) or the project name (`<name>-cu12`) the variant naming gives it.

Renaming a wheel without rewriting its METADATA breaks installs (sglang#14327: pip checks the
filename against the metadata), so every identity the wheel carries changes together: the filename,
the .dist-info directory, METADATA's Name/Version/Requires-Dist, and RECORD (paths and hashes), then
the zip is normalised as every build's is (stages/build_wheels/wheelzip.py). Every other member keeps its bytes.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path

from kestrel_release.errors import BuildError
from kestrel_release.stages.build_wheels import wheelzip


def _escape(name: str) -> str:
    """A project name as a wheel filename / .dist-info writes it (PEP 427/491)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _is_torch(line: str) -> bool:
    body = line.split(":", 1)[1].strip()
    m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)", body)
    return m is not None and re.sub(r"[-_.]+", "-", m.group(1)).lower() == "torch"


def rewrite_metadata(text: str, *, name: str, version: str, torch_pin: str) -> str:
    """METADATA with Name/Version replaced and every unconditional torch requirement replaced by the pin
    (one added when there was none); a requirement under an extra or a marker is left as written."""
    head, sep, body = text.partition("\n\n")
    if not sep:  # headers only: no blank line, maybe a final newline
        head, sep, body = text.rstrip("\n"), "\n", ""
    lines = head.split("\n")
    out: list[str] = []
    pinned = False
    for line in lines:
        key = line.split(":", 1)[0].lower()
        if key == "name":
            out.append(f"Name: {name}")
        elif key == "version":
            out.append(f"Version: {version}")
        elif key == "requires-dist" and _is_torch(line) and ";" not in line:
            if not pinned:
                out.append(f"Requires-Dist: {torch_pin}")
                pinned = True
        else:
            out.append(line)
    if not pinned:
        last = max((i for i, ln in enumerate(out) if ln.lower().startswith("requires-dist:")), default=len(out) - 1)
        out.insert(last + 1, f"Requires-Dist: {torch_pin}")
    return "\n".join(out) + sep + body


def retag(wheel: Path, *, name: str, version: str, torch_pin: str, source_date_epoch: int) -> Path:
    """Write the variant wheel beside `wheel` (which is removed); returns its path."""
    parts = wheel.name[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):
        raise BuildError(f"{wheel.name}: not a wheel filename")
    old_info = f"{parts[0]}-{parts[1]}.dist-info/"
    new_base = f"{_escape(name)}-{version}"
    new_info = f"{new_base}.dist-info/"
    out = wheel.with_name("-".join([new_base, *parts[2:]]) + ".whl")
    members: dict[str, bytes] = {}
    with zipfile.ZipFile(wheel) as src:
        names = [i.filename for i in src.infolist() if not i.is_dir()]
        if f"{old_info}METADATA" not in names:
            raise BuildError(f"{wheel.name}: no {old_info}METADATA")
        for member in names:
            data = src.read(member)
            target = new_info + member[len(old_info) :] if member.startswith(old_info) else member
            members[target] = data
    meta = members[f"{new_info}METADATA"].decode("utf-8")
    members[f"{new_info}METADATA"] = rewrite_metadata(meta, name=name, version=version, torch_pin=torch_pin).encode()
    record_name = f"{new_info}RECORD"
    rows = [f"{m},{_digest(d)},{len(d)}" for m, d in members.items() if m != record_name]
    members[record_name] = ("\n".join([*rows, f"{record_name},,"]) + "\n").encode()
    tmp = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for member, data in members.items():
            dst.writestr(member, data)
    wheelzip.normalize(tmp, source_date_epoch)
    if out != wheel:
        wheel.unlink()
    tmp.replace(out)
    return out
