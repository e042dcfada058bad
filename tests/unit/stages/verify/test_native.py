"""verify on wheels holding real binaries of several platforms: `binary-platform` when a binary does not
match the wheel's platform tag, `arch-name` when a file named for an architecture lacks its SASS."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kestrel_release.artifacts import archname
from kestrel_release.config_loader import load as config
from kestrel_release.stages import verify
from tests.factories import make_verify_project, make_wheel

PKG = "kestrel_kernels"
RELEASE = Path(__file__).resolve().parents[3] / "data" / "cuda" / "release"


def _x86_64_so() -> bytes:
    """A real x86_64 ELF .so without CUDA (committed: an interpreter's own modules may be built in)."""
    return (RELEASE.parent.parent / "elf" / "plain_x86_64.so").read_bytes()


def _macho_arm64() -> bytes:
    return struct.pack("<IIIIIIII", 0xFEEDFACF, 0x0100000C, 0, 8, 0, 0, 0, 0)


def _verify(tmp_path, files: dict[str, bytes], tag: str, required: str = '["sm_90a"]'):
    cfg = config.load(make_verify_project(tmp_path / "proj", verify=f"required_sass = {required}"), env={})
    dist = tmp_path / "dist"
    dist.mkdir(exist_ok=True)
    wheel = make_wheel(dist, {f"{PKG}/__init__.py": b"", **files}, tag=f"cp311-cp311-{tag}")
    return verify.run(cfg, [wheel], record=False)


def _found(report) -> set[tuple[str, str]]:
    return {(f.rule, f.member) for w in report.wheels for f in w.findings}


@pytest.mark.parametrize(
    "binary, member, tag",
    [
        ("aarch64_sm90a.so", "kernels_sm90a.so", "manylinux_2_28_aarch64"),
        ("kernel_sm90a.dll", "kernels_sm90a.dll", "win_amd64"),
    ],
)
def test_matching_platform_is_clean_and_reports_the_fat_binary(tmp_path, binary, member, tag):
    report = _verify(tmp_path, {f"{PKG}/{member}": (RELEASE / binary).read_bytes()}, tag, '["sm_90a"]')
    assert _found(report) - {("ptx", f"{PKG}/{member}")} == set()  # the test fatbin ships PTX on purpose
    [info] = report.wheels[0].cuda
    assert (info.sass, info.ptx) == (["sm_90a"], ["compute_90a"])


@pytest.mark.parametrize(
    "member, data, tag",
    [
        ("ext.so", "x86_64", "manylinux_2_28_aarch64"),  # an x86_64 .so in an aarch64 wheel
        ("ext.so", "aarch64", "manylinux_2_34_x86_64"),  # and the reverse
        ("kernels.dll", "dll", "manylinux_2_34_x86_64"),  # a DLL in a Linux wheel
        ("ext.so", "x86_64", "win_amd64"),  # an ELF in a Windows wheel
        ("ext.so", "macho", "manylinux_2_34_x86_64"),  # Mach-O in a Linux wheel
        ("ext.so", "macho", "macosx_11_0_x86_64"),  # arm64 Mach-O in an x86_64 macOS wheel
        ("ext.so", "macho", "macosx_10_9_universal2"),  # a thin slice in a universal2 wheel
    ],
)
def test_binary_of_another_platform_is_an_error(tmp_path, member, data, tag):
    blobs = {
        "x86_64": _x86_64_so,
        "macho": _macho_arm64,
        "aarch64": lambda: (RELEASE / "aarch64_sm90a.so").read_bytes(),
        "dll": lambda: (RELEASE / "kernel_sm90a.dll").read_bytes(),
    }
    report = _verify(tmp_path, {f"{PKG}/{member}": blobs[data]()}, tag, "[]")
    assert ("binary-platform", f"{PKG}/{member}") in _found(report)
    assert not report.ok
    message = next(f.message for f in report.wheels[0].findings if f.rule == "binary-platform")
    assert tag in message


def test_executables_are_judged_but_foreign_payloads_are_not(tmp_path):
    aarch64 = (RELEASE / "aarch64_sm90a.so").read_bytes()
    dll = (RELEASE / "kernel_sm90a.dll").read_bytes()
    files = {f"{PKG}/bin/tool": aarch64, f"{PKG}/_vendor/launcher-64.exe": dll, f"{PKG}/fw/npu.bin": aarch64}
    report = _verify(tmp_path, files, "manylinux_2_34_x86_64", "[]")
    assert {(r, m) for r, m in _found(report) if r == "binary-platform"} == {("binary-platform", f"{PKG}/bin/tool")}


def test_macho_in_a_macos_wheel_is_clean(tmp_path):
    report = _verify(tmp_path, {f"{PKG}/_C.cpython-311-darwin.so": _macho_arm64()}, "macosx_11_0_arm64", "[]")
    assert _found(report) == set()
    assert report.ok


def test_cubins_and_fatbins_have_no_host_platform(tmp_path):
    files = {
        f"{PKG}/k.sm_90a.cubin": (RELEASE / "cu124-sm90a.cubin").read_bytes(),
        f"{PKG}/k.fatbin": (RELEASE / "cu130-sm90a-ptx.fatbin").read_bytes(),
    }
    report = _verify(tmp_path, files, "win_amd64", "[]")
    assert not {rule for rule, _ in _found(report)} & {"binary-platform", "arch-name"}


@pytest.mark.parametrize(
    "member, binary, ok",
    [
        ("gemm.sm_90a.cubin", "cu124-sm90a.cubin", True),
        ("gemm.sm_100a.cubin", "cu124-sm90a.cubin", False),  # the loader/precompile mismatch
        ("gemm-sm90.cubin", "cu124-sm90a.cubin", True),  # sm90 is met by any sm_90 variant
        ("gemm_sm90a.cubin", "cu118-sm90.cubin", False),  # sm_90a needs the arch-specific SASS
        ("kernel_sm_100a.fatbin", "cu128-sm100a.cubin", True),
        ("attn_sm80.cubin", "cu128-sm100a.cubin", False),
    ],
)
def test_file_named_for_an_architecture_must_hold_it(tmp_path, member, binary, ok):
    report = _verify(
        tmp_path, {f"{PKG}/precompiled/{member}": (RELEASE / binary).read_bytes()}, "manylinux_2_34_x86_64", "[]"
    )
    assert (("arch-name", f"{PKG}/precompiled/{member}") not in _found(report)) is ok


def test_cuda_free_so_named_for_an_architecture_is_an_error(tmp_path):
    member = f"{PKG}/moe_sm90a.cpython-311-x86_64-linux-gnu.so"
    report = _verify(tmp_path, {member: _x86_64_so()}, "manylinux_2_34_x86_64", "[]")
    assert _found(report) == {("arch-name", member)}


@pytest.mark.parametrize(
    "name, archs",
    [
        ("pkg/attn_sm90a.so", ["sm_90a"]),
        ("x/gemm.sm_90a.cubin", ["sm_90a"]),
        ("foo-sm80.cubin", ["sm_80"]),
        ("kernel_sm_100a.fatbin", ["sm_100a"]),
        ("k_sm120f.cubin", ["sm_120f"]),
        ("fused_SM90A.so", ["sm_90a"]),
        ("multi_sm80_sm90a.so", ["sm_80", "sm_90a"]),
        ("asm80.so", []),
        ("libsm800x.so", []),
        ("sm_90ab.so", []),
        ("sm9.so", []),
        ("sm_90/x.so", []),
    ],
)
def test_named_archs(name, archs):
    assert archname.named_archs(name) == archs


def _runtime_findings(report) -> set[tuple[str, str, str]]:
    return {
        (f.rule, f.severity, f.member)
        for w in report.wheels
        for f in w.findings
        if f.rule in ("grafted-runtime", "bundled-runtime")
    }


@pytest.mark.parametrize(
    "member",
    [
        "nvidia/curand/lib/libcurand.so.10",  # nvidia-curand-cu12: the library is the package
        "nvidia/cusparselt/lib/libcusparseLt.so.0",  # nvidia-cusparselt-cu12
        "torch/lib/libtorch_cuda.so",  # torch ships its own runtime
    ],
)
def test_a_wheels_own_runtime_library_is_reported_not_an_error(tmp_path, member):
    report = _verify(tmp_path, {member: _x86_64_so()}, "manylinux_2_28_x86_64", "[]")
    assert _runtime_findings(report) == {("bundled-runtime", "info", member)}
    assert report.ok


@pytest.mark.parametrize(
    "member",
    [
        "kestrel_kernels.libs/libcudart-1a2b3c4d.so.12",  # auditwheel: <dist>.libs/ and a hash-suffixed name
        "kestrel_kernels.libs/libc10.so",  # a graft directory alone
        f"{PKG}/.libs/libtorch.so",  # older auditwheel: <pkg>/.libs/
        f"{PKG}/libcurand-0123abcd.so.10",  # a hash-suffixed name alone
    ],
)
def test_a_runtime_a_repair_tool_grafted_is_an_error(tmp_path, member):
    report = _verify(tmp_path, {member: _x86_64_so()}, "manylinux_2_28_x86_64", "[]")
    assert _runtime_findings(report) == {("grafted-runtime", "error", member)}
    assert not report.ok
