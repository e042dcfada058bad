"""`explain --torch 2.13 [--gpu sm_90]`: which variant of a project's torch x CUDA matrix a torch user
installs, from which index, with the exact pip / uv line, or why none. Pure: the config, the GPU and the
platform come in, a TorchAnswer goes out.

Where a variant lives: the default variant (and every variant under `naming = "package-suffix"`) is on
PyPI with a plain version; the others are on the static index in PyTorch's URL layout,
`<root>/cu130/<project>/`, with `+cu130` versions, so pip's `--index-url` is `<root>/cu130`, and torch of
that CUDA build comes from PyTorch's index of that CUDA (`variants.index` overrides it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kestrel_release.config.variants import Variant, VariantError, VariantsConfig, cuda_version, torch_minor
from kestrel_release.facts import cuda_rules
from kestrel_release.records import documents
from kestrel_release.records.explain_documents import TorchDocument

PYPI = "https://pypi.org/simple"
NO_ROOT = "<static-index URL>"
_REQUEST = re.compile(r"^(\d+\.\d+)(?:\.\d+)?(?:\+(cu\d{3,4}|cpu))?$")


@dataclass
class TorchAnswer:
    torch: str
    gpu: str | None
    platform: str
    project: str
    variant: dict[str, Any] | None = None
    index: str | None = None  # "pypi" or the static index URL of the variant's CUDA
    pip: str = ""
    uv: str = ""
    why: str = ""
    fix: str = ""
    considered: list[dict[str, str]] = field(default_factory=list)  # every variant of that torch, and why not
    loads_on: str = ""  # a stable-ABI project's wheels: "torch>=2.10"

    @property
    def ok(self) -> bool:
        return self.variant is not None

    def document(self) -> TorchDocument:
        return TorchDocument(
            ok=self.ok,
            torch=self.torch,
            gpu=self.gpu,
            platform=self.platform,
            project=self.project,
            variant=self.variant,
            index=self.index,
            pip=self.pip or None,
            uv=self.uv or None,
            why=self.why or None,
            fix=self.fix or None,
            considered=self.considered,
            loads_on=self.loads_on or None,
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


def parse_request(text: str) -> tuple[str, str | None]:
    """'2.13' -> ('2.13', None); '2.13.1+cu126' -> ('2.13', 'cu126'); VariantError otherwise."""
    m = _REQUEST.match(text.strip().lower())
    if not m:
        raise VariantError(f"--torch {text!r} is not a torch version; use e.g. --torch 2.13 or --torch 2.13+cu126")
    major, minor = torch_minor(m.group(1))
    return f"{major}.{minor}", m.group(2)


def static_root(indexes: dict[str, Any]) -> tuple[str | None, str]:
    """(base_url of the project's first target that serves variants or None, the target's name or "");
    `indexes`: name -> its VariantIndex (targets.variant_indexes)."""
    for name, index in indexes.items():
        return (index.base_url or None), name
    return None, ""


def platform_of(tag: str) -> tuple[str, str]:
    """(os, arch) of a wheel platform tag as Variant names them (the platform registry's system and
    CPU; a multi-CPU tag such as universal2 counts as x86_64, Variant's default)."""
    from kestrel_release import platforms
    from kestrel_release.platforms import arches

    p = platforms.parse(tag)
    if p is None:
        return "linux", arches.X86_64
    return p.system, p.arches[0] if len(p.arches) == 1 else arches.X86_64


def _gpu_problem(v: Variant, device: tuple[int, int] | None) -> str | None:
    if device is None:
        return None
    arch = cuda_rules.Arch.parse(f"sm_{device[0]}{device[1]}")
    why = cuda_rules.cannot_compile(cuda_version(v.cuda), arch)
    return f"{v.name}: {why}" if why else None


def _serves(v: Variant, cu: str) -> bool:
    """A stable-ABI variant serves a torch of CUDA `cu` of its major and no older minor (one binary of
    CUDA 13.0 loads with every 13.x runtime), as kernels picks such variants."""
    if cu == "cpu":
        return False
    want, have = cuda_version(cu), cuda_version(v.cuda)
    return want[0] == have[0] and have[1] <= want[1]


def _requirement(project: str, version: str | None) -> str:
    return f"{project}=={version}" if version else project


def answer(
    cfg: VariantsConfig,
    *,
    project: str,
    version: str | None,
    torch: str,
    device: tuple[int, int] | None,
    platform: str,
    static_root: str | None,
    target: str = "",
) -> TorchAnswer:
    minor, cu = parse_request(torch)
    os_name, arch = platform_of(platform)
    gpu = f"sm_{device[0]}{device[1]}" if device else None
    out = TorchAnswer(minor, gpu, platform, project)
    matrix = cfg.matrix(os_name, arch)
    if cfg.stable_abi:
        out.loads_on = f"torch>={cfg.stable_abi}"
        if torch_minor(minor) < torch_minor(cfg.stable_abi):
            out.why = (
                f"torch {minor} is older than {project}'s stable-ABI target {cfg.stable_abi}: its wheels load on "
                f"torch {cfg.stable_abi} and later only"
            )
            out.fix = f"use torch {cfg.stable_abi} or later, or lower [tool.kestrel-release.variants] stable_abi"
            return out
        same = [v for v in matrix if cu is None or _serves(v, cu)]
        if not same:
            have = ", ".join(sorted({v.cuda for v in matrix}, key=cuda_version)) or "none"
            out.why = f"{project}'s stable-ABI wheels are built for CUDA {have}, and none loads with torch {minor}+{cu}"
            out.fix = (
                "use a torch of one of those CUDA majors, or add a CUDA toolkit of that major (no newer minor than "
                "torch's) to [tool.kestrel-release.variants] cuda"
            )
            return out
    else:
        same = [v for v in matrix if v.torch == minor and (cu is None or v.cu == cu)]
    if not same:
        built = sorted({v.torch for v in matrix}, key=torch_minor)
        flavour = f"+{cu}" if cu else ""
        out.why = f"torch {minor}{flavour} is not in {project}'s variants matrix (torch {', '.join(built) or 'none'})"
        cudas = sorted({v.cu for v in matrix if v.torch == minor})
        out.fix = (
            f"use a torch {minor} of {' or '.join(cudas)}"
            if cudas
            else f'add "{minor}" to [tool.kestrel-release.variants] torch and release again'
        )
        return out
    fits: list[Variant] = []
    for v in same:
        problem = _gpu_problem(v, device)
        out.considered.append({"variant": v.name, "why_not": problem or ""})
        if problem is None:
            fits.append(v)
    if not fits:
        out.why = f"no variant of torch {minor} runs on {gpu}: " + "; ".join(c["why_not"] for c in out.considered)
        out.fix = f"add a CUDA toolkit that compiles {gpu} to [tool.kestrel-release.variants] cuda (see docs/gpu-generations.md)"
        return out
    # The default variant when it fits (PyPI, no extra index); else the newest CUDA that fits.
    best = next((v for v in fits if cfg.is_default(v)), None) or max(fits, key=lambda v: cuda_version(v.cuda))
    for c in out.considered:
        if c["variant"] != best.name and not c["why_not"]:
            c["why_not"] = "another variant is preferred (the default, else the newest CUDA)"
    out.variant = {**best.to_json(), "default": cfg.is_default(best)}
    name = cfg.project_name(project, best)
    wanted = _requirement(name, version and cfg.wheel_version(version, best))
    if cfg.is_default(best) or cfg.naming == "package-suffix":
        out.index = "pypi"
        out.pip = f"pip install '{wanted}'"
        out.uv = f"uv pip install '{wanted}'"
        return out
    root = (static_root or NO_ROOT).rstrip("/")
    out.index = f"{root}/{best.cu}"
    torch_index = cfg.index_url(best.cuda)
    # Our index first (its +cuXYZ wheel), torch of that CUDA build from PyTorch's index, the rest from PyPI.
    extra = f"--extra-index-url {torch_index} --extra-index-url {PYPI}"
    out.pip = f"pip install '{wanted}' --index-url {out.index} {extra}"
    out.uv = f"uv pip install '{wanted}' --index-url {out.index} {extra} --index-strategy unsafe-best-match"
    if static_root is None and target:
        out.fix = f"the static-index target {target!r} has no base_url: set where its dir is served"
    elif static_root is None:
        out.fix = 'no static-index target is configured: add [tool.kestrel-release.targets.NAME] kind = "static-index"'
    return out
