"""explain: which wheel and which cubin/PTX a GPU + driver would load, from real nvcc output in
factory wheels (tests/data/cuda/explain/README.md), or why none and the one-line fix (exit 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.errors import EXIT_VERIFY, UsageError, VerifyError
from kestrel_release.flows import explain
from tests.factories import make_wheel

DATA = Path(__file__).resolve().parents[3] / "data" / "cuda"
TAG = "cp312-cp312-manylinux_2_28_x86_64"


def _bin(name: str) -> bytes:
    return (
        (DATA / "explain" / name).read_bytes() if name.endswith(".fatbin") else (DATA / "release" / name).read_bytes()
    )


def _wheel(tmp_path: Path, files: dict[str, str], tag: str = TAG) -> Path:
    return make_wheel(tmp_path, {f"kestrel_kernels/{k}": _bin(v) for k, v in files.items()}, tag=tag)


def _explain(path: Path, gpu: str, driver: str | None = "580.65.06", **kw) -> explain.ExplainReport:
    req = explain.Request(
        path, None, gpu, driver, kw.pop("python", "3.12"), kw.pop("platform", "manylinux_2_34_x86_64")
    )
    return explain.run(req)


def _only(report: explain.ExplainReport):
    (gpu,) = report.gpus
    (choice,) = gpu.choices
    return choice


def test_sm89_loads_the_sm80_cubin(tmp_path):
    report = _explain(_wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}), "sm_89")
    choice = _only(report)
    assert report.ok and report.wheel.endswith(f"{TAG}.whl")
    assert (choice.image.member, choice.image.arch, choice.image.kind) == ("kestrel_kernels/_attn.so", "sm_80", "sass")
    assert choice.how.startswith("same-major SASS")
    assert choice.needs_driver == "580.65.06"  # CUDA 13 code
    explain.raise_for(report)  # exit 0


def test_sm90_with_only_sm90a_loads_sm90a(tmp_path):
    choice = _only(_explain(_wheel(tmp_path, {"k.cubin": "cu124-sm90a.cubin"}), "9.0", driver="535.104.05"))
    assert (choice.image.arch, choice.image.cuda, choice.how) == ("sm_90a", "12.4", "exact arch-specific SASS (a)")
    assert choice.needs_driver == "525.60.13"


def test_sm100_with_sm90a_and_compute90_jit_compiles_the_ptx(tmp_path):
    choice = _only(_explain(_wheel(tmp_path, {"k.fatbin": "cu130-sm90a-ptx90.fatbin"}), "sm_100"))
    assert (choice.image.kind, choice.image.arch) == ("ptx", "compute_90")
    assert choice.how.startswith("PTX JIT")


def test_sm103_with_sm100f_loads_the_family_cubin(tmp_path):
    choice = _only(_explain(_wheel(tmp_path, {"k.fatbin": "cu130-sm100f.fatbin"}), "sm_103"))
    assert (choice.image.arch, choice.how) == ("sm_100f", "family SASS (f)")


def test_an_arch_specific_cubin_serves_no_other_gpu(tmp_path):
    report = _explain(_wheel(tmp_path, {"k.cubin": "cu124-sm90a.cubin"}), "sm_100")
    with pytest.raises(VerifyError) as err:
        explain.raise_for(report)
    assert err.value.exit_code == EXIT_VERIFY
    assert "nothing runs on sm_100: SASS sm_90a; PTX none" in str(err.value)
    assert 'add "100" to cuda_arch' in str(err.value)


def test_driver_535_cannot_load_cuda13_binaries_and_the_fix_is_driver_580(tmp_path):
    report = _explain(_wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}), "sm_89", driver="535.104.05")
    choice = _only(report)
    assert choice.image is None
    assert choice.why == ["CUDA 13 code needs driver >= 580 (r580); this driver is 535.104.05"]
    assert choice.fix.startswith("install NVIDIA driver >= 580.65.06")
    with pytest.raises(
        VerifyError,
        match=r"has nothing sm_89 with driver 535.104.05 loads: CUDA 13 code needs driver >= 580.* — install NVIDIA driver >= 580",
    ):
        explain.raise_for(report)


@pytest.mark.parametrize("driver", ["580", "r580", "R580", "580.65.06", "580.82.07", "590"])
def test_a_driver_branch_or_full_version_at_the_floor_loads_cuda13_code(tmp_path, driver):
    # `--driver 580` is the r580 branch: it meets CUDA 13's floor (580.65.06), not "needs 580; this is 580".
    report = _explain(_wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}), "sm_89", driver=driver)
    choice = _only(report)
    assert choice.ok and choice.why == [] and choice.image.arch == "sm_80"
    explain.raise_for(report)  # exit 0


@pytest.mark.parametrize(("driver", "shown"), [("575", "575"), ("r575", "575"), ("575.51.03", "575.51.03")])
def test_a_driver_branch_older_than_the_floor_is_refused(tmp_path, driver, shown):
    report = _explain(_wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}), "sm_89", driver=driver)
    with pytest.raises(VerifyError, match=rf"driver >= 580 \(r580\); this driver is {shown} — install NVIDIA driver"):
        explain.raise_for(report)


def test_the_fix_for_a_missing_arch_names_where_the_arch_list_comes_from(tmp_path):
    from kestrel_release.flows.explain.arch_source import ArchSource

    wheel = _wheel(tmp_path, {"k.cubin": "cu124-sm90a.cubin"})
    fixes = {}
    for source in (ArchSource("env:TORCH_CUDA_ARCH_LIST"), ArchSource("setup.py", "setup.py")):
        req = explain.Request(wheel, None, "sm_80", "580", "3.12", "manylinux_2_34_x86_64", source)
        with pytest.raises(VerifyError) as err:
            explain.raise_for(explain.run(req))
        fixes[source.kind] = str(err.value)
    assert 'add "8.0" to TORCH_CUDA_ARCH_LIST in build.env' in fixes["env:TORCH_CUDA_ARCH_LIST"]
    assert "add -gencode=arch=compute_80,code=sm_80 to the nvcc flags in setup.py" in fixes["setup.py"]
    assert not any("to cuda_arch" in fix for fix in fixes.values())


def test_compressed_cubins_need_cuda_12_4s_driver(tmp_path):
    # A CUDA 12 driver older than 550 cannot read a compressed entry (and not CUDA 13 code either).
    choice = _only(_explain(_wheel(tmp_path, {"k.fatbin": "cu130-sm120f-size.fatbin"}), "sm_121", driver="545.23.06"))
    assert any("compressed fat-binary entries need driver >= 550.54.14" in w for w in choice.why)
    assert "580.65.06" in choice.fix  # the smallest update that loads it: both floors, the higher one


def test_ptx_newer_than_the_driver_is_passed_over_for_an_older_cubin(tmp_path):
    # sm_90a SASS (CUDA 12.4, r525+) beside CUDA 13 PTX: driver 550 loads the cubin, says why not the PTX.
    files = {"k.cubin": "cu124-sm90a.cubin", "k.fatbin": "cu130-sm90a-ptx90.fatbin"}
    report = _explain(_wheel(tmp_path, files), "sm_90", driver="550.54.15")
    choice = _only(report)  # k.cubin and k.fatbin: alternatives of one binary
    assert (choice.image.member, choice.image.arch) == ("kestrel_kernels/k.cubin", "sm_90a")
    assert any("PTX from CUDA 13.0 needs driver >= 580.65.06" in line for line in choice.passed_over)


def test_alternatives_in_toolkit_and_arch_folders_are_one_binary(tmp_path):
    files = {
        "precompiled/cu13.0/sm_80/attn.fatbin": "cu130-sm80.fatbin",
        "precompiled/cu13.0/sm_100f/attn.fatbin": "cu130-sm100f.fatbin",
        "precompiled/cu12.4/sm_90a/attn.cubin": "cu124-sm90a.cubin",
    }
    wheel = _wheel(tmp_path, files)
    for gpu, member in (
        ("sm_86", "sm_80/attn.fatbin"),
        ("sm_103", "sm_100f/attn.fatbin"),
        ("sm_90", "sm_90a/attn.cubin"),
    ):
        report = _explain(wheel, gpu)
        assert report.ok and _only(report).image.member.endswith(member), gpu


def test_no_wheel_for_python_39_names_the_pythons_there_are(tmp_path):
    _wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}, tag="cp312-cp312-manylinux_2_28_x86_64")
    _wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}, tag="cp313-cp313-manylinux_2_28_x86_64")
    _wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}, tag="cp311-abi3-win_amd64")
    report = _explain(tmp_path, "sm_89", python="3.9")
    assert not report.wheel and not report.gpus
    with pytest.raises(VerifyError) as err:
        explain.raise_for(report)
    assert str(err.value).startswith(
        "no wheel for Python 3.9 on manylinux_2_34_x86_64: the wheels are for Python 3.12, 3.13"
    )


def test_abi3_serves_newer_pythons_and_the_exact_tag_wins(tmp_path):
    _wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}, tag="cp310-abi3-manylinux_2_28_x86_64")
    _wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}, tag="cp313-cp313-manylinux_2_28_x86_64")
    assert _explain(tmp_path, "sm_89", python="3.12").wheel.startswith("kestrel_kernels-0.1.0-cp310-abi3-")
    assert "-cp313-cp313-" in _explain(tmp_path, "sm_89", python="3.13").wheel
    none = _explain(tmp_path, "sm_89", python="3.9")
    assert "3.10+ (abi3)" in none.why
    # A platform the wheels do not serve: the platforms they do.
    other = _explain(tmp_path, "sm_89", platform="manylinux_2_17_x86_64")
    assert other.why.startswith("no wheel installs on manylinux_2_17_x86_64: the wheels are for manylinux_2_28_x86_64")


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        ({"gpu": "ampere"}, "--gpu 'ampere' is not a GPU"),
        ({"driver": "latest"}, "--driver 'latest' is not an NVIDIA driver version"),
        ({"python": "three"}, "--python 'three' is not a Python version"),
        ({"platform": "linux-ish"}, "--platform 'linux-ish' is not a wheel platform tag"),
    ],
)
def test_bad_flags_are_one_usage_line(tmp_path, flags, needle):
    wheel = _wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"})
    base = {"gpu": "sm_89", "driver": "580.65.06", "python": "3.12", "platform": "manylinux_2_34_x86_64"}
    with pytest.raises(UsageError, match=needle):
        explain.run(explain.Request(wheel, None, **{**base, **flags}))


def test_gpu_auto_without_a_gpu_is_preflight(tmp_path, monkeypatch):
    from kestrel_release.adapters import gpu
    from kestrel_release.errors import EXIT_PREFLIGHT, PreflightError

    monkeypatch.setattr(gpu, "detect", lambda: ([], "nvidia-ml-py: NVML: Driver Not Loaded; nvidia-smi not found"))
    with pytest.raises(PreflightError) as err:
        explain.run(explain.Request(_wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}), None, "auto", None, "3.12"))
    assert err.value.exit_code == EXIT_PREFLIGHT
    assert str(err.value).startswith("--gpu auto: no NVIDIA GPU found here (nvidia-ml-py")


def test_gpu_auto_uses_the_detected_gpus_and_driver(tmp_path, monkeypatch):
    from kestrel_release.adapters import gpu

    found = [gpu.Gpu("NVIDIA H100", "9.0", "535.104.05", "nvml")] * 2
    monkeypatch.setattr(gpu, "detect", lambda: (found, None))
    wheel = _wheel(tmp_path, {"k.cubin": "cu124-sm90a.cubin"})
    report = explain.run(explain.Request(wheel, None, "auto", None, "3.12", "manylinux_2_34_x86_64"))
    (result,) = report.gpus  # two equal GPUs: one answer
    assert (result.gpu, result.name, result.driver) == ("sm_90", "NVIDIA H100", "535.104.05")
    assert report.to_json()["gpus"][0]["binaries"][0]["image"]["arch"] == "sm_90a"


def test_a_free_threaded_python_installs_its_own_wheel_or_abi3t_never_abi3(tmp_path):
    for tag in ("cp310-abi3", "cp314-cp314t", "cp315-abi3t"):
        _wheel(tmp_path, {"_attn.so": "cu130-sm80.fatbin"}, tag=f"{tag}-manylinux_2_28_x86_64")
    assert "-cp314-cp314t-" in _explain(tmp_path, "sm_89", python="3.14t").wheel
    assert "-cp315-abi3t-" in _explain(tmp_path, "sm_89", python="3.15t").wheel
    assert "-cp310-abi3-" in _explain(tmp_path, "sm_89", python="3.15").wheel
    none = _explain(tmp_path, "sm_89", python="3.13t")
    assert not none.wheel
    assert none.why == (
        "no wheel for Python 3.13t on manylinux_2_34_x86_64: the wheels are for Python 3.10+ (abi3), 3.14t, 3.15t+ (abi3t)"
    )
