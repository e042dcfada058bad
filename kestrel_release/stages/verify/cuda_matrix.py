"""The CUDA coverage matrix of a wheel: every configured (toolkit, arch) served, by NVIDIA's rules.

A cell (CUDA 12.9, sm_100f) is served when some binary in the wheel carries SASS written by that
toolkit that runs on every GPU the arch stands for and keeps its features (cuda_rules.serves: sm_80
serves a configured 86, sm_100a does not serve 100f; the `a`/`f` suffixes come from the fat-binary
entries); an arch in `cuda_ptx` also needs PTX from that toolkit. A missing cell is an error naming
it. Checked when `cuda` names toolkits (a cubin whose toolkit cannot be read, a compressed entry
without debug info, serves no cell). Each wheel also gets the oldest driver that loads all of it (CUDA majors, compressed fat binaries,
PTX toolkits), in the report and --json.
"""

from __future__ import annotations

from kestrel_release.artifacts.cuda_binary import CudaInfo
from kestrel_release.config.model import Config
from kestrel_release.facts import cuda_rules
from kestrel_release.stages.verify.finding import Finding


def _images(infos: list[CudaInfo]) -> list[tuple[str, cuda_rules.Arch, str, str]]:
    """(kind, arch, toolkit, member) of every SASS/PTX image in the wheel."""
    out = []
    for info in infos:
        for image in info.entries:
            if image["kind"] not in ("sass", "ptx"):
                continue
            try:
                arch = cuda_rules.Arch.parse(image["arch"])
            except cuda_rules.ArchError:
                continue
            out.append((image["kind"], arch, image["cuda"], info.member))
    return out


def _toolkit_ok(configured: str, written: str) -> bool:
    try:
        return bool(written) and cuda_rules.same_toolkit(configured, written)
    except cuda_rules.ArchError:
        return False


def check(cfg: Config, infos: list[CudaInfo]) -> tuple[list[Finding], dict]:
    """(findings, {"matrix": [...], "driver_floor": ...}) for one wheel's CudaInfo list."""
    images = _images(infos)
    facts: dict = {"driver_floor": driver_floor(infos)}
    if not cfg.cuda:  # the matrix is asked for by naming toolkits; required_sass covers single-toolkit projects
        return [], facts
    wanted, _problems = cuda_rules.pairs(cfg.cuda, cfg.cuda_arch)
    ptx_wanted = set()
    for text in cfg.cuda_ptx:
        try:
            ptx_wanted.add(cuda_rules.Arch.parse(text))
        except cuda_rules.ArchError:
            continue
    findings: list[Finding] = []
    cells = []
    for toolkit, arch in wanted:
        sass_by = sorted(
            {m for k, a, c, m in images if k == "sass" and _toolkit_ok(toolkit, c) and cuda_rules.serves(a, arch)}
        )
        ptx_by = sorted(
            {m for k, a, c, m in images if k == "ptx" and _toolkit_ok(toolkit, c) and cuda_rules.serves(a, arch, True)}
        )
        cell = {"cuda": toolkit, "arch": arch.sm, "sass": sass_by, "ptx": ptx_by, "ptx_required": arch in ptx_wanted}
        cells.append(cell)
        what = f"CUDA {toolkit} "
        if not sass_by:
            findings.append(
                Finding(
                    "cuda-matrix",
                    "error",
                    "",
                    f"no binary carries {what}SASS that serves {arch.sm} (it carries {_carried(images)}): "
                    f"build it, or drop {arch.name} from cuda_arch",
                )
            )
        if arch in ptx_wanted and not ptx_by:
            findings.append(
                Finding(
                    "cuda-matrix",
                    "error",
                    "",
                    f"no binary carries {what}PTX for {arch.sm}, which cuda_ptx asks for: build it, or drop it from cuda_ptx",
                )
            )
    facts["matrix"] = cells
    return findings, facts


def _carried(images: list[tuple[str, cuda_rules.Arch, str, str]]) -> str:
    seen = sorted({(c or "?", a.sm if k == "sass" else a.compute) for k, a, c, _m in images})
    return ", ".join(f"{a} (CUDA {c})" for c, a in seen) or "no CUDA code"


def driver_floor(infos: list[CudaInfo]) -> str:
    majors: set[int] = set()
    ptx: set[tuple[int, int]] = set()
    compressed = False
    for info in infos:
        for image in info.entries:
            compressed = compressed or bool(image.get("compressed"))
            try:
                version = cuda_rules.parse_toolkit(image["cuda"]) if image["cuda"] else None
            except cuda_rules.ArchError:
                version = None
            if version is None:
                continue
            majors.add(version[0])
            if image["kind"] == "ptx" and "." in image["cuda"]:
                ptx.add(version)
    return cuda_rules.driver_floor(majors, compressed, tuple(sorted(ptx)))
