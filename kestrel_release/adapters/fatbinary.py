"""NVIDIA's `fatbinary`: re-pack a release's own SASS images with `--compress-mode=size`, to measure what nvcc's
size mode would give (the size plan's lever) instead of estimating it.

Found on PATH or beside nvcc (CUDA_HOME/bin, /usr/local/cuda/bin). Each call writes the images to a private
temporary folder and returns the size of the fat binary fatbinary made of them; nothing else is kept.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from kestrel_release.process import proc


class RepackError(Exception):
    """fatbinary refused the images (the plan falls back to the estimate)."""


def find() -> str | None:
    """The fatbinary of the CUDA toolkit here, or None."""
    found = shutil.which("fatbinary")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        candidate = Path(home or "") / "bin" / "fatbinary"
        if home and candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def version(exe: str) -> str:
    """fatbinary's release line ("release 13.0, V13.0.88"), for the plan's detail."""
    result = proc.run([exe, "--version"], check=False)
    line = next((ln for ln in result.output.splitlines() if "release" in ln), "")
    return line.split("compilation tools, ", 1)[-1].strip() or "unknown version"


def compressed_size(exe: str, images: list[tuple[str, bytes]]) -> int:
    """Bytes of the fat binary holding `images` ((sm, cubin) pairs, sm like "90a") made with --compress-mode=size."""
    with tempfile.TemporaryDirectory(prefix="kestrel-repack-") as tmp:
        work = Path(tmp)
        argv = [exe, f"--create={work / 'out.fatbin'}", "--compress-mode=size"]
        for at, (sm, data) in enumerate(images):
            path = work / f"{at}.cubin"
            path.write_bytes(data)
            argv.append(f"--image3=kind=elf,sm={sm},file={path}")
        result = proc.run(argv, check=False, timeout=600)
        out = work / "out.fatbin"
        if result.returncode != 0 or not out.is_file():
            raise RepackError(result.tail(3) or f"fatbinary exited {result.returncode}")
        return out.stat().st_size
