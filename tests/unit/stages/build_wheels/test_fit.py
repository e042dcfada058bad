"""How many compiles run at once (stages/build_wheels/fit.py): from cores AND free memory, never more than fits."""

from __future__ import annotations

from kestrel_release.stages.build_wheels import fit

GIB = 1024**3


def test_memory_bounds_compiles_below_the_cores() -> None:
    # 16 cores, 8 GiB free, 1.6 GiB measured (+25% = 2 GiB): 4 compiles at once, not 16.
    f = fit.fitted(cores=16, available=8 * GIB, measured=int(1.6 * GIB), cuda=True, archs=1, pythons=1)
    assert (f.slots, f.pythons, f.jobs, f.threads) == (4, 1, 4, 1)
    assert f.env({}, lead=False) == {"MAX_JOBS": "4", "CMAKE_BUILD_PARALLEL_LEVEL": "4"}
    assert f.warning == ""


def test_a_first_build_counts_a_cuda_compile_at_two_gib() -> None:
    f = fit.fitted(cores=16, available=6 * GIB, measured=None, cuda=True, archs=1, pythons=4)
    assert f.per_compile == 2 * GIB and f.source == "a first build's guess"
    assert (f.slots, f.pythons, f.jobs) == (3, 3, 1)


def test_cores_bound_when_memory_is_plenty_and_slots_are_shared_between_pythons() -> None:
    # 4 builds at once, each up to twice its share (16 / 4): a build's compiles are not all ready at once.
    f = fit.fitted(cores=16, available=200 * GIB, measured=GIB // 4, cuda=False, archs=0, pythons=4)
    assert (f.slots, f.pythons, f.jobs) == (16, 4, 8)


def test_a_python_building_alone_at_the_end_still_has_every_core() -> None:
    # 2 cores, plenty of memory (the measured 1.8 GiB + 25%): after the lead, two builds at once of two
    # compiles each, so the last Python, alone, compiles its two files at once.
    f = fit.fitted(cores=2, available=22 * GIB, measured=int(1.8 * GIB), cuda=True, archs=1, pythons=4, lead=True)
    assert (f.pythons, f.jobs, f.lead_jobs) == (2, 2, 2)
    assert f.warning == ""


def test_memory_still_bounds_every_compile_at_once() -> None:
    # 2 cores, 4 GiB free, 2 GiB a compile: two compiles in all, one per build, never four.
    f = fit.fitted(cores=2, available=4 * GIB, measured=None, cuda=True, archs=1, pythons=4)
    assert (f.pythons, f.jobs) == (2, 1)
    assert f.warning == ""


def test_the_lead_python_gets_every_slot_while_it_builds_alone() -> None:
    f = fit.fitted(cores=16, available=200 * GIB, measured=GIB // 4, cuda=False, archs=0, pythons=4, lead=True)
    assert f.env({}, lead=True)["MAX_JOBS"] == "16"
    assert f.env({}, lead=False)["MAX_JOBS"] == "8"


def test_several_archs_compile_in_parallel_within_nvcc() -> None:
    f = fit.fitted(cores=16, available=200 * GIB, measured=GIB, cuda=True, archs=4, pythons=1)
    assert (f.threads, f.jobs) == (4, 4)
    env = f.env({"NVCC_APPEND_FLAGS": "--compress-mode=size"}, lead=False)
    assert env["NVCC_APPEND_FLAGS"] == "--compress-mode=size --threads 4"
    assert env["NVCC_THREADS"] == "4"


def test_what_the_user_set_is_left_alone() -> None:
    f = fit.fitted(cores=16, available=200 * GIB, measured=GIB, cuda=True, archs=4, pythons=1)
    user = {"MAX_JOBS": "2", "NVCC_APPEND_FLAGS": "--threads 1"}
    assert f.env(user, lead=False) == {"CMAKE_BUILD_PARALLEL_LEVEL": "4", "NVCC_THREADS": "4"}


def test_settings_override_and_an_overcommit_is_one_warning_line() -> None:
    f = fit.fitted(cores=2, available=4 * GIB, measured=None, cuda=True, archs=1, pythons=4, jobs=4, compile_jobs=2)
    assert (f.pythons, f.jobs) == (4, 2)
    assert f.warning.startswith("this build may run out of memory: 8 compiles at once of 2.0 GiB each")
    assert "lower build.jobs / build.compile_jobs" in f.warning and "\n" not in f.warning


def test_one_compile_bigger_than_free_memory_says_so() -> None:
    f = fit.fitted(cores=2, available=GIB, measured=None, cuda=False, archs=0, pythons=1, memory_per_job=3 * GIB)
    assert f.slots == 1
    assert "one compile took 3.0 GiB (build.memory_per_job), 1.0 GiB is free" in f.warning


def test_unknown_memory_falls_back_to_the_cores() -> None:
    f = fit.fitted(cores=8, available=None, measured=None, cuda=True, archs=1, pythons=2)
    assert (f.slots, f.pythons, f.jobs, f.warning) == (8, 2, 4, "")


def test_arch_count_reads_torch_cuda_arch_list_first() -> None:
    assert fit.arch_count({"TORCH_CUDA_ARCH_LIST": "8.0;9.0a 10.0+PTX"}, ("90a",)) == 3
    assert fit.arch_count({}, ("80", "90a")) == 2
