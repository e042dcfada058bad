"""GPU detection: NVML through nvidia-ml-py (pynvml), falling back to nvidia-smi.

Only ever reads: model, compute capability and driver version. A machine with no
driver, no library or no device is a normal answer (an empty list plus why),
never an exception: whether that is fatal is the caller's decision.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass

from kestrel_release.process import proc


@dataclass(frozen=True)
class Gpu:
    name: str
    capability: str  # "9.0"
    driver: str
    source: str  # "nvml" or "nvidia-smi"

    @property
    def sm(self) -> str:
        return "sm_" + self.capability.replace(".", "")

    def to_json(self) -> dict:
        return {**asdict(self), "sm": self.sm}


def _text(value: bytes | str) -> str:  # pynvml answers bytes in old releases, str in new ones
    return value.decode() if isinstance(value, bytes) else str(value)


def _from_nvml() -> tuple[list[Gpu], str | None]:
    try:
        import pynvml  # nvidia-ml-py: slow-ish import, only here
    except ImportError:
        return [], "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return [], f"NVML: {exc}"
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            gpus.append(Gpu(_text(pynvml.nvmlDeviceGetName(handle)), f"{major}.{minor}", driver, "nvml"))
        return gpus, None if gpus else "NVML sees no device"
    except pynvml.NVMLError as exc:
        return [], f"NVML: {exc}"
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _from_smi() -> tuple[list[Gpu], str | None]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return [], "nvidia-smi not found"
    out = proc.probe([smi, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"])
    if out is None:
        return [], "nvidia-smi did not run"
    if out.returncode != 0:
        return [], f"nvidia-smi: {out.output.strip().splitlines()[-1:] or 'failed'}"
    gpus = []
    for line in out.output.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            gpus.append(Gpu(parts[0], parts[1], parts[2], "nvidia-smi"))
    return gpus, None if gpus else "nvidia-smi lists no device"


def detect() -> tuple[list[Gpu], str | None]:
    """(GPUs, None) or ([], why there are none): NVML first, then nvidia-smi."""
    gpus, why = _from_nvml()
    if gpus:
        return gpus, None
    gpus, why_smi = _from_smi()
    return (gpus, None) if gpus else ([], f"{why}; {why_smi}")


def has_arch(gpus: list[Gpu], arch: str) -> bool:
    """Whether a GPU runs SASS for `arch` by NVIDIA's rules ("90a": exactly 9.0; "80": 8.x, x >= 0;
    "100f": 10.0 and 10.3); "110@13.0" (a configured arch pinned to a toolkit) counts as "110"."""
    from kestrel_release.facts import cuda_rules

    try:
        target = cuda_rules.Arch.parse(arch.split("@")[0])
    except cuda_rules.ArchError:
        return False
    for g in gpus:
        try:
            major, minor = (int(p) for p in g.capability.split(".")[:2])
        except ValueError:
            continue
        if cuda_rules.sass_runs_on(target, (major, minor)):
            return True
    return False
