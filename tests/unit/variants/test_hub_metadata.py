"""hub_metadata: what the `kernels` library reads in a build variant, checked against kernels' own reader
(kernels-data's Metadata and Digest, the Rust extension of the `kernels` package from PyPI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kestrel_release.errors import UsageError
from kestrel_release.records.manifest import GitState, Manifest, Wheel
from kestrel_release.variants import hub_metadata
from tests.helpers import need


def _kernels_rust():
    try:
        from kernels import _rust
    except ImportError:
        need("the kernels package", "tools/uv sync (it is in the dev group)")
    return _rust


def _meta(tmp_path: Path, **overrides) -> dict:
    (tmp_path / "my_ops").mkdir(exist_ok=True)
    (tmp_path / "my_ops" / "__init__.py").write_text("X = 1\n")
    args = dict(
        kernel="my-ops",
        variant_name="torch213-cxx11-cu130-x86_64-linux",
        version="1.4.0",
        license="MIT",
        cuda=True,
        archs=["8.0", "9.0a", "9.0+PTX"],
        git=GitState("AB" * 20, True),
        files_digest=hub_metadata.digest(tmp_path),
        unique="abc1234",
    )
    args.update(overrides)
    return hub_metadata.metadata(**args)


def test_metadata_is_what_kernels_reads(tmp_path: Path) -> None:
    rust = _kernels_rust()
    meta = rust.Metadata.from_bytes(json.dumps(_meta(tmp_path)).encode())
    assert str(meta.name) == "my-ops" and meta.name.python_name == "my_ops"
    assert meta.id == "_my_ops_cuda_abc1234"
    assert meta.version == 1 and meta.license == "MIT" and meta.python_depends == []
    assert meta.backend.backend_type == rust.Backend.CUDA
    assert meta.backend.archs == ["8.0", "9.0a", "9.0+PTX"]
    assert meta.provenance is not None and meta.provenance.dirty  # kernels warns about a dirty tree
    assert meta.provenance.kernel.commit == "ab" * 20
    assert meta.provenance.kernel_builder.version.startswith("kestrel-release ")


def test_no_git_commit_means_no_kernel_provenance(tmp_path: Path) -> None:
    rust = _kernels_rust()
    data = _meta(tmp_path, git=GitState(None, False), cuda=False, archs=[], license=None)
    meta = rust.Metadata.from_bytes(json.dumps(data).encode())
    assert meta.provenance.kernel is None and not meta.provenance.dirty
    assert meta.backend.backend_type == rust.Backend.CPU and meta.backend.archs is None
    assert meta.license == "unknown" and meta.id.startswith("_my_ops_cpu_")


def test_digest_equals_kernels_hash_variant(tmp_path: Path) -> None:
    rust = _kernels_rust()
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("from . import sub\n")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_bytes(b"\x00\x01 binary")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "x.cpython-312.pyc").write_bytes(b"bytecode")
    (tmp_path / "pkg.libs").mkdir()
    (tmp_path / "pkg.libs" / "libfoo.so.1").write_bytes(b"\x7fELF...")
    (tmp_path / "metadata.json").write_text("{}")  # excluded at the top level only
    ours = hub_metadata.digest(tmp_path)
    theirs = rust.Digest.hash_variant(rust.DigestAlgorithm.SHA256, tmp_path)
    assert ours["files"] == theirs.files
    assert set(ours["files"]) == {"pkg/__init__.py", "pkg/sub/__init__.py", "pkg.libs/libfoo.so.1"}
    data = _meta(tmp_path, files_digest=ours)
    rust.Metadata.from_bytes(json.dumps(data).encode()).digest.validate(theirs)  # raises on a mismatch


def test_arch_words_are_kernel_builders() -> None:
    words = hub_metadata.arch_names(["sm_90a", "sm_80", "sm_100f", "sm_120", "sm_80"], ["compute_90"])
    assert words == ["8.0", "9.0+PTX", "9.0a", "10.0f", "12.0"]


@pytest.mark.parametrize("package", ["MyOps", "_ops", "9ops", "ops_"])
def test_a_package_kernels_cannot_name_is_refused(package: str) -> None:
    with pytest.raises(UsageError, match="cannot be a kernels kernel"):
        hub_metadata.kernel_name(package)


def test_kernel_name_is_the_package_with_dashes() -> None:
    assert hub_metadata.kernel_name("kestrel_kernels") == "kestrel-kernels"


def _built(toolchain: dict | None = None) -> Manifest:
    return Manifest("kestrel-kernels", "0.1.0", (), toolchain=toolchain)


def test_variant_from_a_manifest_row() -> None:
    row = Wheel("x.whl", 0, "", variant={"torch": "2.12", "cuda": "12.6", "cxx11_abi": True, "default": False})
    assert hub_metadata.variant_name(row, _built()) == ("torch212-cxx11-cu126-x86_64-linux", True, False)


def test_a_build_without_variants_is_named_from_its_torch() -> None:
    row = Wheel("x.whl", 0, "", platform_tag="manylinux_2_28_aarch64")
    data = _built({"torch": {"version": "2.11.0+cu130", "cuda": "13.0", "cxx11_abi": True}})
    assert hub_metadata.variant_name(row, data) == ("torch211-cxx11-cu130-aarch64-linux", True, True)
    cpu = _built({"torch": {"version": "2.11.0+cpu", "cuda": None, "cxx11_abi": True}})
    assert hub_metadata.variant_name(row, cpu) == ("torch211-cxx11-cpu-aarch64-linux", False, True)


def test_wheels_without_records_in_a_project_with_variants_are_told_to_rebuild() -> None:
    data = _built({"torch": {"version": "2.11.0+cu130", "cuda": "13.0", "cxx11_abi": True}})
    with pytest.raises(UsageError) as err:
        hub_metadata.variant_name(Wheel("x.whl", 0, "", platform_tag="linux_x86_64"), data, configured=True)
    assert "carries no variant record" in err.value.message and "rebuild" in (err.value.hint or "")


def test_a_build_without_variants_or_torch_is_refused_with_what_to_add() -> None:
    with pytest.raises(UsageError) as err:
        hub_metadata.variant_name(Wheel("x.whl", 0, "", platform_tag="linux_x86_64"), _built({}))
    assert "[tool.kestrel-release.variants]" in (err.value.hint or "")


def test_kernels_minver_and_upstream_are_what_kernels_reads_and_checks(tmp_path: Path, monkeypatch) -> None:
    """kernels' MinverValidator refuses an older kernels than `kernels-minver` (the first that reads `digest`);
    `upstream` is the repository from the wheel's Project-URL, a git URL kernels accepts."""
    rust = _kernels_rust()
    from kernels import validate

    data = _meta(tmp_path, upstream="https://github.com/acme/my-ops")
    meta = rust.Metadata.from_bytes(json.dumps(data).encode())
    assert str(meta.kernels_minver) == hub_metadata.KERNELS_MINVER and meta.upstream == "https://github.com/acme/my-ops"
    validate.MinverValidator().validate_metadata(metadata=meta, variant="v")  # the installed kernels is newer
    monkeypatch.setattr(validate, "_installed_version", lambda: rust.Version.from_str("0.15.2"))
    with pytest.raises(RuntimeError, match=r"requires kernels>=0\.16"):
        validate.MinverValidator().validate_metadata(metadata=meta, variant="v")
    assert "upstream" not in _meta(tmp_path)  # none known: none written (kernels' key is optional)


@pytest.mark.parametrize(
    ("urls", "expected"),
    [
        (["Homepage, https://acme.dev/ops", "Source, https://github.com/acme/ops"], "https://github.com/acme/ops"),
        (["Source Code, https://gitlab.com/acme/ops.git"], "https://gitlab.com/acme/ops.git"),
        (["Repository, git@github.com:acme/ops.git", "Documentation, https://docs.acme.dev"], None),
        (["Bug Tracker, https://github.com/acme/ops/issues"], None),
        ([], None),
    ],
)
def test_upstream_is_the_source_repository_url(urls: list[str], expected: str | None) -> None:
    assert hub_metadata.upstream(urls) == expected
