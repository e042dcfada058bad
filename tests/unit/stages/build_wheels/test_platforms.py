"""The configured platforms: what a tag means, what a host can build, what is left for others,
and which repair tool each platform gets (with the argv it runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release import platforms
from kestrel_release.adapters import repair
from kestrel_release.adapters.host import Host
from kestrel_release.errors import BuildError, PreflightError, UsageError
from kestrel_release.stages.build_wheels import platforms as bp

LINUX_236 = Host("linux", "x86_64", "glibc", (2, 36))
LINUX_228 = Host("linux", "x86_64", "glibc", (2, 28))
AARCH64 = Host("linux", "aarch64", "glibc", (2, 34))
WINDOWS = Host("windows", "x86_64")
MAC = Host("macos", "aarch64", libc_version=(14, 5))
UPSTREAM = (
    "manylinux_2_28_x86_64",
    "manylinux_2_34_x86_64",
    "manylinux_2_28_aarch64",
    "win_amd64",
    "macosx_14_0_arm64",
)  # the five platforms kestrel-kernels releases
PYTHONS = ("3.12", "3.13")


def test_every_upstream_platform_parses_and_a_typo_is_a_problem() -> None:
    assert bp.problems(UPSTREAM) == []
    assert bp.problems(("win_amd46", "win_amd64", "win_amd64")) == [
        f"platforms: 'win_amd46' is not a wheel platform tag (e.g. {bp.EXAMPLES})",
        "platforms: 'win_amd64' is listed twice",
    ]
    assert bp.parse("manylinux2014_x86_64") == bp.Platform(
        "manylinux2014_x86_64", "manylinux", ("x86_64",), (2, 17), "linux"
    )


@pytest.mark.parametrize(
    ("wheel", "configured", "expected"),
    [
        ("manylinux_2_28_x86_64", "manylinux_2_28_x86_64", True),
        ("manylinux_2_17_x86_64", "manylinux_2_28_x86_64", True),  # a lower floor installs wherever 2.28 does
        ("manylinux_2_34_x86_64", "manylinux_2_28_x86_64", False),  # not on a glibc 2.28 system
        ("manylinux_2_28_aarch64", "manylinux_2_28_x86_64", False),
        ("musllinux_1_2_x86_64", "manylinux_2_28_x86_64", False),
        ("macosx_11_0_arm64", "macosx_14_0_arm64", True),
        ("macosx_11_0_universal2", "macosx_14_0_arm64", True),
        ("macosx_15_0_arm64", "macosx_14_0_arm64", False),
        ("win_amd64", "win_amd64", True),
        ("win_arm64", "win_amd64", False),
    ],
)
def test_which_wheel_serves_which_configured_platform(wheel: str, configured: str, expected: bool) -> None:
    assert bp.covers(wheel, configured) is expected


def test_a_linux_host_builds_its_own_flavour_and_lists_the_rest_as_pairs() -> None:
    plan = bp.plan(UPSTREAM, PYTHONS, LINUX_236)
    assert plan.build == "manylinux_2_34_x86_64"  # the highest floor this glibc 2.36 host meets
    assert plan.left_pairs() == [(p, py) for p in UPSTREAM if p != "manylinux_2_34_x86_64" for py in PYTHONS]
    why = {row["platform"]: row["why"] for row in plan.left}
    assert why["win_amd64"] == "needs a windows x86_64 machine"
    assert why["macosx_14_0_arm64"] == "needs a macos arm64 machine"
    assert why["manylinux_2_28_aarch64"] == "needs a linux aarch64 machine"
    assert "--platform manylinux_2_28_x86_64" in why["manylinux_2_28_x86_64"]


@pytest.mark.parametrize(
    ("host", "built"),
    [
        (LINUX_228, "manylinux_2_28_x86_64"),  # 2.34 needs a newer glibc than this host's
        (AARCH64, "manylinux_2_28_aarch64"),
        (WINDOWS, "win_amd64"),
        (MAC, "macosx_14_0_arm64"),
    ],
)
def test_each_machine_builds_its_platform(host: Host, built: str) -> None:
    plan = bp.plan(UPSTREAM, PYTHONS, host)
    assert plan.build == built
    assert {p for p, _ in plan.left_pairs()} == set(UPSTREAM) - {built}


def test_platform_flag_and_ci_plat_narrow_and_refuse_what_the_host_cannot_build() -> None:
    assert bp.plan(UPSTREAM, PYTHONS, LINUX_236, ("manylinux_2_28_x86_64",)).build == "manylinux_2_28_x86_64"
    assert bp.plan(UPSTREAM, PYTHONS, LINUX_236, plat="manylinux_2_28_x86_64").build == "manylinux_2_28_x86_64"
    with pytest.raises(PreflightError, match=r"cannot build win_amd64 on this linux-x86_64 glibc 2\.36 host"):
        bp.plan(UPSTREAM, PYTHONS, LINUX_236, ("win_amd64",))
    with pytest.raises(UsageError, match="--platform win_arm64 is not one of the configured platforms"):
        bp.plan(UPSTREAM, PYTHONS, LINUX_236, ("win_arm64",))
    with pytest.raises(UsageError, match=r"build\.plat manylinux_2_17_ppc64le is not one of the configured"):
        bp.plan(UPSTREAM, PYTHONS, LINUX_236, plat="manylinux_2_17_ppc64le")
    # A sysconfig name (any glibc) with an explicit repair target: that platform, that tag.
    any_glibc = bp.plan(("linux-x86_64", "win_amd64"), PYTHONS, LINUX_236, plat="manylinux_2_28_x86_64")
    assert any_glibc.build == "linux-x86_64"
    assert bp.repair_plat(any_glibc.build, "manylinux_2_28_x86_64") == "manylinux_2_28_x86_64"
    with pytest.raises(PreflightError, match="none of the configured platforms can be built"):
        bp.plan(("win_amd64", "macosx_14_0_arm64"), PYTHONS, LINUX_236)


def test_no_platforms_means_this_machine_and_nothing_left() -> None:
    plan = bp.plan((), PYTHONS, LINUX_236)
    assert (plan.build, plan.left) == (None, [])


def test_a_manylinux_platform_is_its_own_repair_target() -> None:
    assert bp.repair_plat("manylinux_2_28_x86_64", "auto") == "manylinux_2_28_x86_64"
    assert bp.repair_plat("win_amd64", "auto") == "auto"
    assert bp.repair_plat("linux-x86_64", "auto") == "auto"  # any glibc: the repair picks the tag
    assert bp.repair_plat(None, "manylinux_2_34_x86_64") == "manylinux_2_34_x86_64"


def test_a_wheel_above_the_configured_floor_fails_the_build() -> None:
    plats = bp.plan(UPSTREAM, PYTHONS, MAC)
    bp.check_built(plats, ["k-0.1.0-cp312-cp312-macosx_11_0_arm64.whl"])
    assert len(plats.left) == 8
    low = bp.plan(("macosx_11_0_arm64", "win_amd64"), PYTHONS, MAC)
    with pytest.raises(BuildError, match="does not serve the configured platform macosx_11_0_arm64"):
        bp.check_built(low, ["k-0.1.0-cp312-cp312-macosx_14_0_arm64.whl"])


def test_a_pure_wheel_leaves_nothing_for_other_machines() -> None:
    plats = bp.plan(UPSTREAM, PYTHONS, LINUX_236)
    bp.check_built(plats, ["k-0.1.0-py3-none-any.whl"])
    assert plats.left == []


@pytest.mark.parametrize(
    ("tag", "tool"),
    [
        ("manylinux_2_28_x86_64", "auditwheel"),
        ("manylinux_2_28_aarch64", "auditwheel"),
        ("musllinux_1_2_x86_64", "auditwheel"),
        ("win_amd64", "delvewheel"),
        ("win_arm64", "delvewheel"),
        ("macosx_14_0_arm64", "delocate"),
        ("macosx_11_0_universal2", "delocate"),
    ],
)
def test_repair_tool_by_platform_tag(tag: str, tool: str) -> None:
    assert repair.for_system(platforms.for_tag(tag).system).name == tool


def test_windows_repair_translates_the_exclude_list_to_delvewheel_no_dll(tmp_path: Path) -> None:
    from kestrel_release.config_loader.load import DEFAULT_EXCLUDES

    argv = repair.for_system("windows").command(
        tmp_path / "k-0.1.0-cp312-cp312-win_amd64.whl",
        tmp_path / "o",
        "auto",
        DEFAULT_EXCLUDES,
        env={"CUDA_PATH": "C:/CUDA/v13.0"},
    )
    no_dll = [argv[i + 1] for i, a in enumerate(argv) if a == "--no-dll"]
    # torch's and CUDA's DLLs: c10.dll, torch_cpu.dll, cudart64_13.dll, cublasLt64_13.dll; the driver is nvcuda.dll
    import fnmatch

    for dll in (
        "c10.dll",
        "c10_cuda.dll",
        "torch.dll",
        "torch_cpu.dll",
        "torch_cuda.dll",
        "cudart64_13.dll",
        "cublas64_13.dll",
        "cublasLt64_13.dll",
        "nvrtc64_130_0.dll",
        "nvJitLink_130_0.dll",
        "nvcuda.dll",
    ):
        assert any(fnmatch.fnmatch(dll.lower(), p.lower()) for p in no_dll), dll
    assert not any(fnmatch.fnmatch("mykernels.dll", p.lower()) for p in no_dll)
    assert argv[1:4] == ["repair", "-w", str(tmp_path / "o")]
    assert argv[argv.index("--add-path") + 1] == str(Path("C:/CUDA/v13.0") / "bin")
    assert argv[-1] == str(tmp_path / "k-0.1.0-cp312-cp312-win_amd64.whl")


def test_macos_repair_requires_the_tags_archs_and_excludes_torch_and_cuda(tmp_path: Path) -> None:
    tool = repair.for_system("macos")
    argv = tool.command(
        tmp_path / "k-0.1.0-cp312-cp312-macosx_14_0_arm64.whl",
        tmp_path / "o",
        "auto",
        ("libtorch*", "libc10*", "libcuda.so*", "libomp.dylib"),
    )
    assert argv[1:] == [
        "-w",
        str(tmp_path / "o"),
        "--require-archs",
        "arm64",
        "--exclude",
        "libtorch",
        "--exclude",
        "libc10",
        "--exclude",
        "libcuda",
        "--exclude",
        "libomp.dylib",
        str(tmp_path / "k-0.1.0-cp312-cp312-macosx_14_0_arm64.whl"),
    ]
    universal = tool.command(tmp_path / "k-0.1.0-cp312-cp312-macosx_11_0_universal2.whl", tmp_path, "auto", ())
    assert universal[universal.index("--require-archs") + 1] == "universal2"


def test_a_missing_platform_tool_is_a_preflight_problem(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert repair.for_system("windows").missing()[0].startswith("delvewheel not found")
    assert repair.for_system("macos").missing()[0].startswith("delocate-wheel not found")


def test_a_macos_platform_sets_the_deployment_target_and_archs_unless_the_user_did() -> None:
    assert bp.macos_env("macosx_11_0_arm64", {}) == {
        "MACOSX_DEPLOYMENT_TARGET": "11.0",
        "_PYTHON_HOST_PLATFORM": "macosx-11.0-arm64",
        "ARCHFLAGS": "-arch arm64",
    }
    assert bp.macos_env("macosx_10_15_x86_64", {"MACOSX_DEPLOYMENT_TARGET": "12.0"}) == {
        "_PYTHON_HOST_PLATFORM": "macosx-10.15-x86_64",
        "ARCHFLAGS": "-arch x86_64",
    }
    assert bp.macos_env("macosx_11_0_universal2", {})["ARCHFLAGS"] == "-arch arm64 -arch x86_64"
    assert bp.macos_env("win_amd64", {}) == {} and bp.macos_env(None, {}) == {}
    assert bp.macos_env("macosx-14.0-arm64", {})["_PYTHON_HOST_PLATFORM"] == "macosx-14.0-arm64"


def test_for_build_sets_the_repair_target_and_keeps_the_users_env(tmp_path: Path) -> None:
    import dataclasses

    from kestrel_release.config_loader.load import BuildConfig, Config

    cfg = Config(
        project_dir=tmp_path,
        name="k",
        version="0.1.0",
        platforms=UPSTREAM,
        build=BuildConfig(env={"ARCHFLAGS": "-arch arm64 -arch x86_64"}),
    )
    linux = bp.for_build(cfg, bp.plan(UPSTREAM, PYTHONS, LINUX_236), environ={})
    assert linux.build.plat == "manylinux_2_34_x86_64" and linux.build.env == cfg.build.env
    mac = bp.for_build(cfg, bp.plan(UPSTREAM, PYTHONS, MAC), environ={})
    assert mac.build.plat == "auto"
    assert mac.build.env == {
        "ARCHFLAGS": "-arch arm64 -arch x86_64",
        "MACOSX_DEPLOYMENT_TARGET": "14.0",
        "_PYTHON_HOST_PLATFORM": "macosx-14.0-arm64",
    }
    assert dataclasses.replace(cfg, platforms=()) == bp.for_build(
        dataclasses.replace(cfg, platforms=()), bp.plan((), PYTHONS, LINUX_236), environ={}
    )
