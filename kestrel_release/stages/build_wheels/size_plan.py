"""The size plan: a release's wheels against every limit they meet, and what each lever would give.

The limits: the index's per-file limit (verify.max_file_size) for each wheel, the project limit
(verify.project_size_budget) for the release as a whole, and GitHub's 2 GiB for each release asset.
The levers, measured on the release's own wheels where the bytes say it:
- dropping one (toolkit, arch) pair: measured (each code image's stored bytes times its member's zip
  ratio, size_forecast.per_arch: what it adds to the uploaded file);
- merging payload that is byte-identical in every per-Python wheel of a platform into one (an abi3/py3
  wheel, or a shared data package): measured (the identical members' compressed bytes, once instead of
  N times); it shrinks the release, not its largest file;
- nvcc --compress-mode=size: measured where the CUDA toolkit's `fatbinary` is found, by re-packing each
  binary's uncompressed SASS images with `fatbinary --compress-mode=size` (size_repack.py) against the
  binary's deflated size in the wheel; without it estimated, by compressing each such binary with zstd (the
  algorithm class nvcc's size mode uses); the lever's basis and detail say which. It raises the driver floor
  to CUDA 12.4's (r550).
Stages read it (build's report, release's preflight); render and markdown are in size_plan_text.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.artifacts import cuda_binary
from kestrel_release.artifacts.errors import CudaFormatError
from kestrel_release.config.model import GithubTarget
from kestrel_release.records.build_documents import LeverDocument, LimitDocument, SizePlanDocument, WheelSizeDocument
from kestrel_release.stages.verify import size_forecast
from kestrel_release.stages.verify.dedupe import platform_of

GITHUB_ASSET_LIMIT = GithubTarget.max_asset_size  # 2 GiB: declared once, with the GitHub target's settings
ZSTD_LEVEL = 12  # close to level 19's ratio on cubins at a fraction of the time (two cores, many GiB)


@dataclass(frozen=True)
class Limit:
    name: str  # what a user calls it, with the setting that sets it
    limit: int
    scope: str  # "file": each wheel; "release": all of them together


@dataclass
class Lever:
    name: str
    kind: str  # "drop-arch", "merge-identical", "compress-size"
    release_saving: int  # bytes off the release
    file_saving: int  # bytes off its largest wheel
    basis: str  # "measured" or "estimated"
    detail: str = ""
    fits: bool = False  # alone, it brings the release within every limit


@dataclass
class SizePlan:
    wheels: list[dict[str, Any]]  # {filename, size}, largest first
    limits: list[Limit]
    levers: list[Lever] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(w["size"] for w in self.wheels)

    @property
    def largest(self) -> int:
        return max((w["size"] for w in self.wheels), default=0)

    def over(self, file_saving: int = 0, release_saving: int = 0) -> list[str]:
        """Each limit broken (after the savings), as one line with its numbers; empty: it fits."""
        from kestrel_release.ui import sizes

        out = []
        for lim in self.limits:
            if lim.scope == "file":
                worst = [w for w in self.wheels if w["size"] - file_saving > lim.limit]
                if worst:
                    out.append(
                        f"{worst[0]['filename']} is {sizes.size(worst[0]['size'] - file_saving)}, over the "
                        f"{sizes.size(lim.limit)} {lim.name}"
                        + (f" ({len(worst)} wheels are)" if len(worst) > 1 else "")
                    )
            elif self.total - release_saving > lim.limit:
                out.append(
                    f"the release is {sizes.size(self.total - release_saving)} in {len(self.wheels)} files, "
                    f"over the {sizes.size(lim.limit)} {lim.name}"
                )
        return out

    @property
    def fits(self) -> bool:
        return not self.over()

    def document(self) -> SizePlanDocument:
        return SizePlanDocument(
            fits=self.fits,
            total=self.total,
            largest=self.largest,
            wheels=[WheelSizeDocument(w["filename"], w["size"]) for w in self.wheels],
            limits=[LimitDocument(lim.name, lim.limit, lim.scope) for lim in self.limits],
            over=self.over(),
            levers=[LeverDocument(**vars(lever)) for lever in self.levers],
        )


def limits_for(max_file_size: int, project_budget: int, *, index: bool = True, github: bool = True) -> list[Limit]:
    """The limits a release to these kinds of target meets (build reports all of them)."""
    out = []
    if index:
        out.append(Limit("per-file limit (verify.max_file_size)", max_file_size, "file"))
        out.append(Limit("project limit (verify.project_size_budget)", project_budget, "release"))
    if github:
        out.append(Limit("GitHub release asset limit", GITHUB_ASSET_LIMIT, "file"))
    return out


@dataclass
class _Read:
    """What one pass over a wheel measured: members, CUDA binaries, zstd estimates."""

    path: Path
    size: int
    tags: list[str]
    members: list[Any] = field(default_factory=list)
    cuda: list[cuda_binary.CudaInfo] = field(default_factory=list)
    compressed_estimate: dict[str, int] = field(default_factory=dict)  # member -> bytes with size-mode SASS
    repacked: set[str] = field(default_factory=set)  # members whose estimate fatbinary measured


def plan(paths: Sequence[Path], limits: list[Limit]) -> SizePlan:
    """Read each wheel once and measure every lever on its bytes."""
    from kestrel_release.adapters import fatbinary

    exe = fatbinary.find()
    reads = [_read(Path(p), exe) for p in paths]
    wheels: list[dict[str, Any]] = [
        {"filename": r.path.name, "size": r.size} for r in sorted(reads, key=lambda r: -r.size)
    ]
    result = SizePlan(wheels, limits)
    largest = max(reads, key=lambda r: r.size, default=None)
    toolkit = fatbinary.version(exe) if exe and any(r.repacked for r in reads) else ""
    result.levers = [*_drop_arch(reads, largest), *_merge(reads), *_compress(reads, largest, toolkit)]
    for lever in result.levers:
        lever.fits = not result.over(lever.file_saving, lever.release_saving)
    return result


def rejudge(measured: SizePlan, limits: list[Limit]) -> SizePlan:
    """The same measurements against other limits (a release's targets), each lever's `fits` again."""
    levers = [Lever(**{**vars(lever), "fits": False}) for lever in measured.levers]
    result = SizePlan(list(measured.wheels), limits, levers)
    for lever in result.levers:
        lever.fits = not result.over(lever.file_saving, lever.release_saving)
    return result


def _read(path: Path, exe: str | None = None) -> _Read:
    from kestrel_release.artifacts.wheel import read_wheel
    from kestrel_release.stages.build_wheels import size_repack

    budget = cuda_binary.wheel_budget()

    def work(member: Any, data: bytes | memoryview) -> Any:
        if member.name.endswith("/") or not cuda_binary.is_cuda_candidate(member.name):
            return None
        try:
            info = cuda_binary.inspect_bytes(data, member.name, budget)
        except CudaFormatError:
            return None
        if not [e for e in info.entries if e["kind"] == "sass" and not e.get("compressed")]:
            return info, None
        measured = size_repack.measure(exe, bytes(data), info) if exe else None
        return info, ((measured, True) if measured is not None else (_zstd(data), False))

    found: list[tuple[Any, Any]] = []
    wheel = read_wheel(path, visit=lambda m, done: found.append((m, done)) if done else None, work=work)
    out = _Read(path, wheel.size, _tags(path.name), wheel.members)
    for member, (info, estimate) in found:
        if info.has_cuda:
            out.cuda.append(info)
            if estimate is not None:
                out.compressed_estimate[member.name] = estimate[0]
                if estimate[1]:
                    out.repacked.add(member.name)
    return out


def _tags(filename: str) -> list[str]:
    from packaging.utils import parse_wheel_filename

    return sorted(str(t) for t in parse_wheel_filename(filename)[3])


def _zstd(data: bytes | memoryview) -> int:
    import zstandard

    return len(zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(bytes(data)))


def _drop_arch(reads: list[_Read], largest: _Read | None) -> list[Lever]:
    """One lever per (toolkit, arch) pair, largest first: what leaving it out of every wheel saves."""
    per_pair: dict[tuple[str, str], int] = {}
    in_largest: dict[tuple[str, str], int] = {}
    for r in reads:
        for row in size_forecast.per_arch(r.cuda, r.members):
            key = (row["toolkit"], row["arch"])
            per_pair[key] = per_pair.get(key, 0) + row["bytes"]
            if r is largest:
                in_largest[key] = row["bytes"]
    if len(per_pair) < 2:  # the only pair left is the package itself, not a lever
        return []
    ranked = sorted(per_pair.items(), key=lambda kv: -kv[1])
    return [
        Lever(f"drop {arch} (CUDA {toolkit})", "drop-arch", saving, in_largest.get((toolkit, arch), 0), "measured")
        for (toolkit, arch), saving in ranked
    ]


def _merge(reads: list[_Read]) -> list[Lever]:
    """Payload byte-identical in every per-Python wheel of one platform, kept once instead of N times."""
    groups: dict[str, list[_Read]] = {}
    for r in reads:
        plat = platform_of(r.tags)
        if plat:
            groups.setdefault(plat, []).append(r)
    saving, shared_count, platforms = 0, 0, []
    for plat, group in sorted(groups.items()):
        if len(group) < 2:
            continue
        payload = [{m.digest: m.compressed_size for m in _payload(r)} for r in group]
        shared = set.intersection(*(set(p) for p in payload))
        if shared:
            saving += (len(group) - 1) * sum(payload[0][d] for d in shared)
            shared_count += len(shared)
            platforms.append(f"{plat} ({len(group)} wheels)")
    if not saving:
        return []
    detail = (
        f"{shared_count} identical members across {', '.join(platforms)}: one abi3/py3 wheel where the extension "
        "allows, or a shared data package the per-Python wheels depend on"
    )
    return [Lever("merge identical payload", "merge-identical", saving, 0, "measured", detail)]


def _payload(r: _Read) -> list[Any]:
    return [m for m in r.members if m.digest and not m.is_dir and ".dist-info/" not in m.name]


def _compress(reads: list[_Read], largest: _Read | None, toolkit: str = "") -> list[Lever]:
    """nvcc --compress-mode=size: each binary with uncompressed SASS re-packed by fatbinary (measured), else
    zstd of it (estimated), against its deflated bytes in the wheel."""

    def saved(r: _Read) -> int:
        by_name = {m.name: m for m in r.members}
        return sum(max(0, by_name[n].compressed_size - z) for n, z in r.compressed_estimate.items() if n in by_name)

    total = sum(saved(r) for r in reads)
    if not total:
        return []
    binaries = sum(len(r.compressed_estimate) for r in reads)
    repacked = sum(len(r.repacked) for r in reads)
    if repacked == binaries:
        how, basis = f"the SASS re-packed with fatbinary --compress-mode=size ({toolkit})", "measured"
    elif repacked:
        how = f"{repacked} of {binaries} binaries re-packed with fatbinary ({toolkit}), zstd level {ZSTD_LEVEL} for the rest"
        basis = "estimated"
    else:
        how, basis = f"no CUDA toolkit's fatbinary found: zstd level {ZSTD_LEVEL} of the binaries", "estimated"
    detail = f"{how}; needs NVIDIA driver >= {size_forecast.COMPRESSED_DRIVER} (CUDA 12.4's)"
    return [Lever("nvcc --compress-mode=size", "compress-size", total, saved(largest) if largest else 0, basis, detail)]
