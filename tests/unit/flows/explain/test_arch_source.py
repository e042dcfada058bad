"""arch_source: the setting or file a project's CUDA arch list comes from (explain's fix names it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.flows.explain import arch_source

SETUP_GENCODE = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
setup(name="demo", ext_modules=[CUDAExtension("demo_cuda", ["k.cu"],
      extra_compile_args={"nvcc": ["-gencode=arch=compute_75,code=sm_75", "-lineinfo"]})],
      cmdclass={"build_ext": BuildExtension})
"""


def _project(tmp_path: Path, build: str = "", setup: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\nversion = "0.1.0"\n[tool.kestrel-release]\ncuda_arch = ["90a"]\n{build}'
    )
    if setup:
        (tmp_path / "setup.py").write_text(setup)
    return tmp_path


@pytest.mark.parametrize(
    ("build", "setup", "fix"),
    [
        ("", "", 'add "80" to cuda_arch ([tool.kestrel-release] in pyproject.toml)'),
        (
            '[tool.kestrel-release.build]\nenv = {TORCH_CUDA_ARCH_LIST = "9.0a"}\n',
            "",
            'add "8.0" to TORCH_CUDA_ARCH_LIST in build.env ([tool.kestrel-release.build] env in pyproject.toml)',
        ),
        (
            '[tool.kestrel-release.build]\nenv = {TORCH_CUDA_ARCH_LIST = "9.0a"}\n',
            SETUP_GENCODE,
            "add -gencode=arch=compute_80,code=sm_80 to the nvcc flags in setup.py",
        ),
    ],
)
def test_the_fix_names_the_setting_that_holds_the_arch_list(tmp_path, build, setup, fix):
    cfg = config.load(_project(tmp_path, build, setup), env={})
    assert arch_source.find(cfg).add((8, 0)).startswith(fix)
