"""`explain --index`: the project's page on the local sandbox PyPI (a real pypiserver), the wheel chosen by
tags, downloaded (digest checked) and explained; exit 0 with one JSON document, exit 5 with the one error line."""

from __future__ import annotations

from pathlib import Path

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_wheel
from tests.helpers import assert_one_line_error, run_in_process
from tests.schemas import fits

DATA = Path(__file__).resolve().parents[2] / "data" / "cuda"


def test_explain_reads_the_project_page_of_an_index_and_downloads_the_chosen_wheel(tmp_path):
    packages = tmp_path / "index"
    fatbin = {"kestrel_kernels/_attn.so": (DATA / "explain" / "cu130-sm80.fatbin").read_bytes()}
    for tag in ("cp312-cp312-manylinux_2_28_x86_64", "cp313-cp313-manylinux_2_28_x86_64", "cp312-cp312-win_amd64"):
        make_wheel(packages, fatbin, tag=tag)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}  # where the download goes: the run removes it
    with PypiSandbox(directory=packages) as box:
        page = box.simple_url + "kestrel-kernels/"
        args = ["explain", "--index", page, "--gpu", "sm_89", "--python", "3.12", "--platform", "manylinux_2_34_x86_64"]
        ok = run_in_process([*args, "--driver", "580.65.06", "--json"], env=env)
        assert ok.code == 0, ok.output
        doc = fits("explain", ok.stdout)
        assert doc["ok"] is True and doc["wheel"] == "kestrel_kernels-0.1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
        (binary,) = doc["gpus"][0]["binaries"]
        assert binary["image"] == {
            "member": "kestrel_kernels/_attn.so",
            "kind": "sass",
            "arch": "sm_80",
            "cuda": "13.0",
            "compressed": False,
        }
        old = run_in_process([*args, "--driver", "535.104.05"], env=env)
        assert_one_line_error(old, 5, "_attn.so has nothing sm_89 with driver 535.104.05 loads", "driver >= 580.65.06")
        none = run_in_process(
            [*args[:-4], "--python", "3.9", "--platform", "manylinux_2_34_x86_64", "--driver", "580.65.06"], env=env
        )
        assert_one_line_error(
            none, 5, "no wheel for Python 3.9 on manylinux_2_34_x86_64: the wheels are for Python 3.12, 3.13"
        )
    assert list(tmp.iterdir()) == []  # the downloaded wheel's temp dir is gone


def test_explain_in_a_project_names_its_arch_list_and_takes_a_driver_branch(tmp_path):
    # The project's arch list is build.env's TORCH_CUDA_ARCH_LIST: the fix for an sm_80 GPU edits it,
    # and --driver 580 (a branch) meets CUDA 13's floor.
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "kestrel-kernels"\nversion = "0.1.0"\n[tool.kestrel-release]\ncuda_arch = ["90a"]\n'
        '[tool.kestrel-release.build]\nenv = {TORCH_CUDA_ARCH_LIST = "9.0a"}\n'
    )
    cubin = {"kestrel_kernels/k.cubin": (DATA / "release" / "cu124-sm90a.cubin").read_bytes()}
    wheel = make_wheel(tmp_path / "w", cubin, tag="cp312-cp312-manylinux_2_28_x86_64")
    args = ["explain", str(wheel), "--project", str(project), "--python", "3.12"]
    args += ["--platform", "manylinux_2_34_x86_64", "--driver", "580"]
    missing = run_in_process([*args, "--gpu", "sm_80"])
    assert_one_line_error(missing, 5, "nothing runs on sm_80", 'add "8.0" to TORCH_CUDA_ARCH_LIST in build.env')
    assert "to cuda_arch" not in missing.output
    assert run_in_process([*args, "--gpu", "sm_90"]).code == 0
