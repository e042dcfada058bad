"""`explain`: which wheel a machine installs and which cubin/PTX of each binary in it its GPU and driver
load, by NVIDIA's rules (cuda_rules), or why none and the fix. Reads a wheel, a directory of wheels or
one project's page on a package index (the chosen wheel is downloaded, bounded, into a temp dir).

Exit 0 when every CUDA binary of the chosen wheel has a loadable image on every GPU asked about;
5 (VerifyError) when there is no wheel for the machine or a binary has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.errors import PreflightError, PublishError, UsageError, VerifyError
from kestrel_release.flows.explain import images as images_mod
from kestrel_release.flows.explain import wheels
from kestrel_release.flows.explain.arch_source import ArchSource
from kestrel_release.flows.explain.result import ExplainReport, GpuResult
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.config.model import Config
    from kestrel_release.flows.explain.torch import TorchAnswer

MAX_DOWNLOAD = 4 * 1024**3  # larger than any wheel an index takes (PyPI's raised limits included)
TIMEOUT = 900.0  # seconds for the whole download (--timeout): 4 GiB at ~5 MB/s


@dataclass(frozen=True)
class Request:
    source: Path | None = None
    index: str | None = None
    gpu: str = "auto"
    driver: str | None = None
    python: str | None = None
    platform: str | None = None
    arches: ArchSource = field(default_factory=ArchSource)  # where the project's arch list comes from (a fix names it)
    timeout: float = TIMEOUT  # the whole download from --index, in seconds


def _python(text: str | None) -> wheels.Python:
    if text is None:
        import sys
        import sysconfig

        threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
        return wheels.Python(sys.version_info.major, sys.version_info.minor, threaded)
    parsed = wheels.parse_python(text)
    if parsed is None:
        raise UsageError(f"--python {text!r} is not a Python version", "use e.g. --python 3.12 (or 3.13t)")
    return parsed


def _platform(text: str | None) -> str:
    from kestrel_release import platforms

    if text is None:
        from kestrel_release.adapters import host

        return platforms.host_tag(host.current())
    if platforms.parse(text) is None or not re.fullmatch(r"[a-z0-9_]+", text):
        raise UsageError(
            f"--platform {text!r} is not a wheel platform tag",
            f"use the target machine's tag, e.g. {platforms.EXAMPLES}",
        )
    return text


def _device(text: str) -> tuple[int, int]:
    from kestrel_release.facts import cuda_rules

    try:
        arch = cuda_rules.Arch.parse(text)
    except cuda_rules.ArchError:
        raise UsageError(
            f"--gpu {text!r} is not a GPU", "use its compute capability, e.g. --gpu sm_89 or 8.9, or --gpu auto"
        ) from None
    return arch.major, arch.minor


def _driver(text: str | None) -> str:
    if text is None:
        return ""
    from kestrel_release.facts import cuda_rules

    driver = cuda_rules.parse_driver(text)
    if driver is None:
        raise UsageError(
            f"--driver {text!r} is not an NVIDIA driver version",
            "use e.g. --driver 550.54.15 or a branch, --driver 580 (nvidia-smi shows it)",
        )
    return driver


def _gpus(request: Request) -> list[tuple[tuple[int, int], str, str]]:
    """(compute capability, name, driver) of each GPU asked about."""
    driver = _driver(request.driver)
    if request.gpu.strip().lower() != "auto":
        return [(_device(request.gpu), "", driver)]
    from kestrel_release.adapters import gpu

    found, why = gpu.detect()
    if not found:
        raise PreflightError(
            f"--gpu auto: no NVIDIA GPU found here ({why})",
            "name the machine instead: --gpu sm_89 --driver 550.54.15",
        )
    out: list[tuple[tuple[int, int], str, str]] = []
    for g in found:
        device = _device(g.capability)
        row = (device, g.name, driver or g.driver)
        if all(o[0] != device or o[2] != row[2] for o in out):  # eight equal GPUs are one answer
            out.append(row)
    return out


def _candidates(request: Request) -> tuple[str, list[wheels.Candidate], dict[str, dict[str, str]]]:
    """(where from, the wheels to choose among, filename -> {url, sha256} for an index)."""
    if request.index:
        from kestrel_release.adapters.pypi import client as pypi
        from kestrel_release.adapters.retry import RetryPolicy

        listing = pypi.project_page(request.index, RetryPolicy(retries=2, timeout=60))
        cands = [c for c in map(wheels.parse_filename, listing) if c is not None]
        return request.index, cands, listing
    path = request.source
    if path is None:
        raise UsageError(
            "explain needs wheels", "give a wheel, a directory of wheels, or --index URL of the project's page"
        )
    if path.is_dir():
        files = sorted(p.name for p in path.iterdir() if p.suffix == ".whl" and p.is_file())
    elif path.is_file():
        files = [path.name]
    else:
        raise UsageError(f"{path} does not exist", "give a wheel, a directory of wheels, or --index URL")
    cands = [c for c in map(wheels.parse_filename, files) if c is not None]
    if path.is_file() and not cands:
        raise UsageError(
            f"{path.name} is not a wheel file name", "give a .whl file (name-version-python-abi-platform.whl)"
        )
    return str(path), cands, {}


def run(request: Request) -> ExplainReport:
    if request.source is not None and request.index:
        raise UsageError("give either wheels or --index, not both")
    python, platform = _python(request.python), _platform(request.platform)
    gpus = _gpus(request)
    source, cands, listing = _candidates(request)
    report = ExplainReport(python.name, platform, source, candidates=sorted(c.filename for c in cands))
    chosen, why, fix = wheels.choose(cands, python, platform)
    if chosen is None:
        report.why, report.fix = why, fix
        return report
    report.wheel = chosen.filename
    if request.index:
        from kestrel_release.files import statedir

        with statedir.temp_dir("explain") as tmp:
            path = _download(listing[chosen.filename], tmp / chosen.filename, request.timeout)
            groups = _read(path, report)
    else:
        assert request.source is not None
        path = request.source / chosen.filename if request.source.is_dir() else request.source
        groups = _read(path, report)
    for device, name, driver in gpus:
        result = GpuResult(f"sm_{device[0]}{device[1]}", name, driver)
        result.choices = [
            images_mod.choose(
                images_mod.binary_name(key, sorted({i.member for i in imgs})), imgs, device, driver, request.arches
            )
            for key, imgs in sorted(groups.items())
        ]
        report.gpus.append(result)
    return report


def _download(row: dict[str, str], dest: Path, timeout: float = TIMEOUT) -> Path:
    from kestrel_release.adapters.pypi import client as pypi
    from kestrel_release.adapters.retry import RetryPolicy

    console.step(f"downloading {dest.name}")
    policy = RetryPolicy(retries=2, timeout=min(60.0, timeout))
    try:
        return pypi.download(
            row["url"], dest, policy, max_bytes=MAX_DOWNLOAD, sha256=row.get("sha256", ""), deadline=timeout
        )
    except PublishError as exc:
        raise PublishError(
            exc.message, "check the URL and the network, raise --timeout, or download the wheel and pass its path"
        ) from None


def _read(path: Path, report: ExplainReport) -> dict[str, list[images_mod.Image]]:
    """The CUDA images of every binary in the wheel, grouped into binaries (alternatives together)."""
    from kestrel_release.artifacts import cuda_binary
    from kestrel_release.artifacts.wheel import Member, WheelError, read_wheel

    budget = cuda_binary.wheel_budget()
    groups: dict[str, list[images_mod.Image]] = {}

    def visit(member: Member, data: bytes | memoryview) -> None:
        name = member.name
        if not cuda_binary.is_cuda_candidate(name) or name.endswith((".o", ".obj")):  # objects are linked, not loaded
            return
        try:
            info = cuda_binary.inspect_bytes(data, name, budget, toolkits=True)
        except cuda_binary.CudaFormatError as exc:
            report.unreadable.append(exc.message)
            return
        rows = [
            images_mod.Image(name, e["kind"], e["arch"], e["cuda"], e["compressed"], e["bytes"])
            for e in info.entries
            if e["kind"] in ("sass", "ptx")
        ]
        if rows:
            groups.setdefault(images_mod.group_key(name), []).extend(rows)

    try:
        read_wheel(path, visit)
    except WheelError as exc:
        raise VerifyError(exc.message, exc.hint) from None
    report.no_cuda = not groups and not report.unreadable
    return groups


def raise_for(report: ExplainReport) -> None:
    """VerifyError (exit 5) when the wheels cannot serve the machine; its one line says why and the fix."""
    if report.ok:
        return
    if not report.wheel:
        raise VerifyError(report.why, report.fix)
    if report.unreadable:
        raise VerifyError(report.unreadable[0], "rebuild the binary; verify reports every unreadable one")
    for result in report.gpus:
        for choice in result.choices:
            if not choice.ok:
                raise VerifyError(
                    f"{report.wheel}: {choice.binary} has nothing {result.gpu} with driver "
                    f"{result.driver or '(any)'} loads: {choice.why[0]}",
                    choice.fix,
                )


def render(report: ExplainReport) -> None:
    from kestrel_release.flows.explain import display

    display.render(report)


def run_torch(cfg: Config, torch: str, gpu: str | None, platform: str | None) -> TorchAnswer:
    """`explain --torch X.Y`: the variant of the project's matrix a torch user installs (explain/torch.py)."""
    from kestrel_release.config.variants import VariantError
    from kestrel_release.flows.explain import torch as torch_mod
    from kestrel_release.project import meta as project_meta

    cfg = project_meta.resolve(cfg)  # the answer names the project
    if cfg.variants is None:
        raise UsageError(
            f"--torch needs a project with variants and {cfg.name} has none",
            "add [tool.kestrel-release.variants] (torch = [...], cuda = [...]), or explain its wheels instead",
        )
    device = None
    if gpu:
        device = _gpus(Request(gpu=gpu))[0][0]  # auto: this machine's (first) GPU
    from kestrel_release import targets

    root, target = torch_mod.static_root(targets.variant_indexes(cfg))
    try:
        return torch_mod.answer(
            cfg.variants,
            project=cfg.name,
            version=cfg.version,
            torch=torch,
            device=device,
            platform=_platform(platform),
            static_root=root,
            target=target,
        )
    except VariantError as exc:
        raise UsageError(str(exc)) from None


def raise_for_torch(answer: TorchAnswer) -> None:
    if not answer.ok:
        raise VerifyError(answer.why, answer.fix)


def render_torch(answer: TorchAnswer) -> None:
    on = f" on {answer.gpu}" if answer.gpu else ""
    if not answer.ok:
        for c in answer.considered:
            console.info(f"{c['variant']}: {c['why_not']}")
        return
    v = answer.variant or {}
    where = "PyPI" if answer.index == "pypi" else answer.index
    kind = ", the default variant," if v.get("default") else ""
    console.ok(f"torch {answer.torch}{on}: {v['name']}{kind} from {where}")
    if answer.loads_on:
        console.info(f"one stable-ABI wheel per CUDA major: it loads on {answer.loads_on}")
    console.console.print(answer.pip, markup=False, highlight=False, soft_wrap=True)
    console.console.print(answer.uv, markup=False, highlight=False, soft_wrap=True)
    for c in answer.considered:
        if c["variant"] != v["name"]:
            console.info(f"not {c['variant']}: {c['why_not']}")
    if answer.fix:
        console.warn(answer.fix)
