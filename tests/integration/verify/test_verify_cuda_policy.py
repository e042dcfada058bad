"""verify.run on hand-made wheels: each defect gives exactly the expected findings."""

from __future__ import annotations

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.stages import verify
from tests.data.cuda.builders import build_cuda_matrix, nvcc_version
from tests.factories import make_verify_project, make_wheel

PKG = "kestrel_kernels"


def _cfg(tmp_path, pythons=("3.11",), verify_toml=""):
    return config.load(make_verify_project(tmp_path / "proj", pythons=pythons, verify=verify_toml), env={})


def _found(report) -> set[tuple[str, str]]:
    return {(f.rule, f.member) for w in report.wheels for f in w.findings} | {
        (f.rule, f.member) for f in report.findings
    }


def _verify(tmp_path, files=None, cfg=None, target=None, **wheel_kw):
    dist = tmp_path / "dist"
    dist.mkdir(exist_ok=True)
    wheel = make_wheel(dist, files, **wheel_kw)
    return verify.run(cfg or _cfg(tmp_path), [wheel], target=target)


@pytest.fixture(scope="module")
def cuda_matrix():
    if nvcc_version() is None:
        pytest.skip("nvcc is not on PATH: cannot build the CUDA test binaries")
    return build_cuda_matrix()


@pytest.mark.parametrize(
    "binary, expected",
    [
        ("sm90a-ndebug.cubin", set()),
        ("sm90a-ndebug.so", set()),
        ("sm80.o", {"missing-arch", "build-path"}),
        ("ptx90a.fatbin", {"ptx", "build-path"}),
        ("G.fatbin", {"ptx", "debug-info", "build-path"}),
        ("lto.o", {"ptx", "missing-arch"}),
    ],
)
def test_cuda_policy(tmp_path, cuda_matrix, binary, expected):
    member = f"{PKG}/precompiled/{binary}"
    report = _verify(tmp_path, {member: (cuda_matrix / binary).read_bytes()})
    assert _found(report) == {(rule, member) for rule in expected}
