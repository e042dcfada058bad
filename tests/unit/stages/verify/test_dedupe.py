"""dedupe: per-Python wheels of one platform holding the same binaries; a compressed platform tag is one platform."""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.utils import parse_wheel_filename

from kestrel_release.stages.verify import dedupe

PLAT = "manylinux2014_x86_64.manylinux_2_17_x86_64"  # sorted, as verify names the set


@dataclass
class W:
    filename: str
    name: str = "k"
    version: str = "0.1.0"
    size: int = 1000
    tags: list[str] = field(default_factory=list)
    binaries: dict[str, tuple[str, int]] = field(default_factory=dict)


def _wheel(py: str) -> W:
    filename = f"k-0.1.0-{py}-{py}-{PLAT}.whl"
    tags = sorted(str(t) for t in parse_wheel_filename(filename)[3])
    return W(filename, tags=tags, binaries={f"k/_ops.{py}.so": ("same-digest", 900)})


def test_per_python_wheels_with_a_compressed_platform_tag_are_one_platform() -> None:
    (finding,) = dedupe.check([_wheel("cp311"), _wheel("cp312")])
    assert finding.rule == "dedupe" and f"the 2 per-Python wheels for {PLAT} (cp311, cp312)" in finding.message
