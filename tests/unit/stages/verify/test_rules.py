"""verify.run on hand-made wheels: each defect gives exactly the expected findings."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import pytest

from kestrel_release.artifacts.wheel import read_wheel
from kestrel_release.config_loader import load as config
from kestrel_release.errors import UsageError, VerifyError
from kestrel_release.output_dir import manifest
from kestrel_release.stages import verify
from tests.factories import make_verify_project, make_wheel, save_manifest

PKG = "kestrel_kernels"
DATA_CUDA = Path(__file__).resolve().parents[3] / "data" / "cuda" / "release"
TOKEN = "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejEyMzQ1Ng"


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


def test_clean_wheel_has_no_findings_and_records_in_manifest(tmp_path):
    dist = tmp_path / "dist"
    dist.mkdir()
    save_manifest(dist, {"package": "kestrel-kernels", "version": "0.1.0", "wheels": []})
    wheel = make_wheel(dist)
    report = verify.run(_cfg(tmp_path), [dist])
    assert report.ok and _found(report) == set()
    assert manifest.verified_hashes(dist, "pypi") == {wheel.name: report.wheels[0].sha256}
    verify.raise_for(report)  # no error


@pytest.mark.parametrize(
    "member",
    [
        f"{PKG}/csrc/moe.cu",
        f"{PKG}/include/x.cuh",
        f"{PKG}/ops.cpp",
        f"{PKG}/a.h",
        f"{PKG}/topk/kernel.py",
        f"{PKG}/cute_moe_gemm.py",
        f"{PKG}/flash_attn.py",
        "csrc/build.txt",
        "scripts/precompile.py",
        "tests/test_x.py",
    ],
)
def test_forbidden_sources_are_source_leaks(tmp_path, member):
    files = {f"{PKG}/__init__.py": b"", member: b"x = 1\n"}
    report = _verify(tmp_path, files)
    assert _found(report) == {("source-leak", member)}
    assert not report.ok


def test_tests_shipped_inside_the_package_are_not_a_leak_by_default(tmp_path):
    # Packages such as numpy ship <pkg>/tests on purpose; only a top-level tests/ is forbidden.
    report = _verify(tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/tests/test_x.py": b"x = 1\n"})
    assert _found(report) == set()
    assert report.ok


def test_allow_list_flags_anything_outside_it(tmp_path):
    cfg = _cfg(tmp_path, verify_toml='allow = ["kestrel_kernels/*.py"]')
    files = {f"{PKG}/__init__.py": b"", f"{PKG}/notes.txt": b"hi\n"}
    assert _found(_verify(tmp_path, files, cfg=cfg)) == {("source-leak", f"{PKG}/notes.txt")}


@pytest.mark.parametrize(
    "member, content",
    [
        (f"{PKG}/cfg.py", f"TOKEN = '{TOKEN}'\n".encode()),
        (f"{PKG}/gh.py", b"t = 'ghp_" + b"a1B2" * 9 + b"'\n"),
        (
            f"{PKG}/key.txt",
            b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n",
        ),
        (f"{PKG}/aws.py", b"k = 'AKIA2E0A8F3B244C9986'\n"),  # AKIAIOSFODNN7EXAMPLE is AWS's documented stand-in
        (f"{PKG}/.pypirc", b"[pypi]\n"),
        (f"{PKG}/.env", b"A=1\n"),
    ],
)
def test_secrets_are_found_and_never_echoed(tmp_path, member, content):
    report = _verify(tmp_path, {f"{PKG}/__init__.py": b"", member: content})
    assert _found(report) == {("secret", member)}
    text = str(report.to_json())
    assert TOKEN not in text and "AKIA2E0A8F3B244C9986" not in text and "a1B2a1B2" not in text


def test_home_directory_in_text_is_a_build_path(tmp_path):
    report = _verify(tmp_path, {f"{PKG}/__init__.py": b"ROOT = '/home/alice/kestrel/kernels'\n"})
    assert _found(report) == {("build-path", f"{PKG}/__init__.py")}


def test_project_directory_in_text_is_a_build_path(tmp_path):
    cfg = _cfg(tmp_path)
    report = _verify(tmp_path, {f"{PKG}/__init__.py": f"SRC = '{cfg.project_dir}/csrc'\n".encode()}, cfg=cfg)
    assert _found(report) == {("build-path", f"{PKG}/__init__.py")}


def test_the_clean_copy_build_compiled_in_is_a_build_path_even_outside_home(tmp_path, monkeypatch):
    # Build compiles in a copy under the cache dir; a CI cache outside any home directory is no excuse.
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "ci-cache"))
    from kestrel_release.files import statedir

    cfg = _cfg(tmp_path)
    copied = statedir.sources(cfg.project_dir) / "3.12" / "csrc"
    assert not str(copied).startswith(("/home/", "/root/", "/Users/"))
    report = _verify(tmp_path, {f"{PKG}/paths.py": f"BUILD_DIR = '{copied}'\n".encode()}, cfg=cfg)
    assert _found(report) == {("build-path", f"{PKG}/paths.py")}


def _tamper(rows):
    rows[0][1] = "sha256=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    return rows


@pytest.mark.parametrize(
    "edit, expected",
    [
        (_tamper, {("record-mismatch", f"{PKG}/__init__.py")}),
        (lambda rows: rows[1:], {("record-mismatch", f"{PKG}/__init__.py")}),
        (lambda rows: [*rows, [f"{PKG}/gone.py", "sha256=x", "1"]], {("record-mismatch", f"{PKG}/gone.py")}),
    ],
)
def test_record_must_match_the_members(tmp_path, edit, expected):
    assert _found(_verify(tmp_path, record_edit=edit)) == expected


@pytest.mark.parametrize(
    "kw, rules",
    [
        ({"metadata_version": "2.6"}, {"pypi-metadata"}),  # valid for installers, beyond what PyPI accepts
        ({"metadata_version": "3.0"}, {"metadata", "pypi-metadata"}),
        ({"meta_name": "other-kernels"}, {"metadata", "pypi-filename"}),
        ({"meta_version": "0.2.0"}, {"metadata", "version-mismatch"}),  # and METADATA is not the release
        ({"wheel_tags": ["cp312-cp312-manylinux_2_34_x86_64"]}, {"wheel-tags"}),
    ],
)
def test_metadata_must_agree_with_the_filename(tmp_path, kw, rules):
    report = _verify(tmp_path, **kw)
    assert {r for r, _ in _found(report)} == rules


def test_unsafe_names_are_flagged(tmp_path):
    wheel = make_wheel(tmp_path, {f"{PKG}/__init__.py": b"", "../evil.py": b"", "/etc/passwd": b""})
    with zipfile.ZipFile(wheel, "a") as zf:
        link = zipfile.ZipInfo(f"{PKG}/link")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/shadow")
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr(f"{PKG}/__init__.py", b"again")
    found = _found(verify.run(_cfg(tmp_path), [wheel]))
    unsafe = {m for r, m in found if r == "unsafe-path"}
    assert unsafe == {"../evil.py", "/etc/passwd", f"{PKG}/link", f"{PKG}/__init__.py"}


def test_zip_bomb_is_not_inflated(tmp_path):
    report = _verify(tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/zeros.bin": bytes(65 * 2**20)})
    assert ("zip-bomb", "") in _found(report)
    assert not report.ok


@pytest.mark.parametrize("cut", [0.5, 0.99])
def test_truncated_wheel_is_a_finding_not_a_crash(tmp_path, cut):
    wheel = make_wheel(tmp_path)
    data = wheel.read_bytes()
    wheel.write_bytes(data[: int(len(data) * cut)])
    report = verify.run(_cfg(tmp_path), [wheel])
    assert {r for r, _ in _found(report)} >= {"zip-format"} and not report.ok
    with pytest.raises(VerifyError):
        verify.raise_for(report)


def test_read_wheel_hashes_and_visits_each_member_once(tmp_path):
    wheel = make_wheel(
        tmp_path, {f"{PKG}/a.py": b"a", f"{PKG}/b.bin": os.urandom(1000)}, compression=zipfile.ZIP_STORED
    )
    seen = []
    read = read_wheel(wheel, lambda m, data: seen.append((m.name, bytes(data))))
    import hashlib

    assert read.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert [n for n, _ in seen].count(f"{PKG}/a.py") == 1 and dict(seen)[f"{PKG}/a.py"] == b"a"
    assert read.problems == []


@pytest.mark.parametrize(
    "kw, target, rule",
    [
        ({"tag": "cp311-cp311-linux_x86_64"}, "pypi", "platform-tag"),
        ({"tag": "cp311-cp311-linux_x86_64"}, "testpypi", "platform-tag"),
        ({"version": "0.1.0+cu124", "meta_version": "0.1.0+cu124"}, None, "local-version"),
    ],
)
def test_index_acceptance(tmp_path, kw, target, rule):
    report = _verify(tmp_path, target=target, **kw)
    assert {r for r, _ in _found(report)} == {rule}


def test_github_accepts_what_pypi_refuses(tmp_path):
    assert _verify(tmp_path, target="github", tag="cp311-cp311-linux_x86_64").ok


def test_file_size_limit_comes_from_config(tmp_path):
    cfg = _cfg(tmp_path, verify_toml='max_file_size = "1 KiB"')
    report = _verify(tmp_path, {f"{PKG}/__init__.py": os.urandom(4096)}, cfg=cfg)
    assert {r for r, _ in _found(report)} == {"file-size"}


def test_file_size_finding_names_the_largest_members(tmp_path):
    cfg = _cfg(tmp_path, verify_toml='max_file_size = "4 KiB"')
    files = {
        f"{PKG}/__init__.py": b"",
        f"{PKG}/lib/libbig.so.10": os.urandom(6000),
        f"{PKG}/small.bin": os.urandom(900),
    }
    report = _verify(tmp_path, files, cfg=cfg)
    [finding] = [f for f in report.wheels[0].findings if f.rule == "file-size"]
    assert finding.member == f"{PKG}/lib/libbig.so.10"
    assert f"largest members, compressed: {PKG}/lib/libbig.so.10 5.9 KiB, {PKG}/small.bin" in finding.message


def test_matrix_wants_one_wheel_per_python_and_the_same_kernels(tmp_path):
    cfg = _cfg(tmp_path, pythons=("3.11", "3.12", "3.13"))
    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(dist, {f"{PKG}/precompiled/k.cubin": b"one"}, tag="cp311-cp311-manylinux_2_34_x86_64")
    make_wheel(dist, {f"{PKG}/precompiled/k.cubin": b"two"}, tag="cp312-cp312-manylinux_2_34_x86_64")
    report = verify.run(cfg, [dist])
    set_level = {(f.rule, f.member, f.message.split(":")[0]) for f in report.findings}
    assert set_level == {
        ("matrix", "", "no wheel for Python 3.13"),
        (
            "matrix",
            f"{PKG}/precompiled/k.cubin",
            f"differs between {PKG}-0.1.0-cp311-cp311-manylinux_2_34_x86_64.whl and "
            f"{PKG}-0.1.0-cp312-cp312-manylinux_2_34_x86_64.whl",
        ),
    }
    assert not report.ok


def test_bad_inputs_are_usage_errors(tmp_path):
    cfg = _cfg(tmp_path)
    (tmp_path / "x-0.1.tar.gz").write_bytes(b"")
    for paths, needle in [
        ([tmp_path / "x-0.1.tar.gz"], "sdist"),
        ([tmp_path / "nope.whl"], "does not exist"),
        ([tmp_path / "proj"], "no wheels"),
        ([], "does not exist"),
    ]:
        with pytest.raises(UsageError, match=needle):
            verify.run(cfg, paths)
    with pytest.raises(UsageError, match="unknown verify target"):
        verify.run(cfg, [make_wheel(tmp_path)], target="conda")


def test_cuda_less_extension_is_not_missing_arch(tmp_path):
    from pathlib import Path

    # A real ELF .so without CUDA (committed: an interpreter's own modules may be built in).
    so = (Path(__file__).resolve().parents[3] / "data" / "elf" / "plain_x86_64.so").read_bytes()
    assert _found(_verify(tmp_path, {f"{PKG}/_C.cpython-311-x86_64-linux-gnu.so": so})) == set()


def test_unreadable_cubin_is_a_cuda_format_finding(tmp_path):
    member = f"{PKG}/precompiled/bad.cubin"
    assert _found(_verify(tmp_path, {member: b"\x7fELF\x02\x01\x01" + bytes(20)})) == {("cuda-format", member)}


def test_hostile_variants_never_crash_verify(tmp_path):
    """Truncations and byte flips of a real wheel: findings or WheelError, never another exception."""
    cfg = _cfg(tmp_path)
    good = make_wheel(tmp_path, {f"{PKG}/__init__.py": b"x = 1\n" * 50, f"{PKG}/k.cubin": b"\x7fELF" + bytes(60)})
    data = good.read_bytes()
    variants = [data[:n] for n in range(0, len(data), max(1, len(data) // 40))]
    variants += [
        data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :] for i in range(0, len(data), max(1, len(data) // 80))
    ]
    bad = tmp_path / "bad" / good.name
    bad.parent.mkdir()
    for variant in variants:
        bad.write_bytes(variant)
        report = verify.run(cfg, [bad], record=False)
        assert report.wheels[0].filename == good.name


# contourpy 1.3.3's util/_build_config.py as meson writes it in a build under the home directory: the
# path is longer than 80 characters, and meson's temp dirs carry characters a \w class stops at.
LONG = "/home/alice/.cache/kestrel-release/builds/contourpy-1.3.3-3f9c2e1a/build/cp311@meson~tmp/lib/contourpy/util"
BUILD_CONFIG = (
    f'def build_config():\n    return dict(\n        build_dir=r"{LONG}",\n        meson_backend="ninja",\n    )\n'
)


def _messages(report) -> list[tuple[str, str, str]]:
    return [(f.severity, f.member, f.message) for w in report.wheels for f in w.findings if f.rule == "build-path"]


def test_a_build_path_is_quoted_whole(tmp_path):
    report = _verify(tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/_paths.py": f"SRC = '{LONG}'\n".encode()})
    ((severity, member, message),) = _messages(report)
    assert (severity, member) == ("error", f"{PKG}/_paths.py") and f"'{LONG}'" in message


def test_a_generated_build_config_module_recording_build_paths_is_a_warning_that_says_what_it_is(tmp_path):
    member = f"{PKG}/util/_build_config.py"
    report = _verify(tmp_path, {f"{PKG}/__init__.py": b"", member: BUILD_CONFIG.encode()})
    ((severity, found, message),) = _messages(report)
    assert (severity, found) == ("warning", member) and report.ok
    assert f"'{LONG}'" in message and "generated build-config module" in message


def test_release_cubin_with_the_v2_note_index_bit_set_is_not_a_debug_build(tmp_path):
    """flashinfer-cubin 0.5.0: release fmhaSm100a cubins whose e_flags top byte (the toolkit note's index) has bit
    0x08000000 set were reported as debug builds; cuobjdump sees no debug info in them."""
    from tests.data.cuda.release_builds import RELEASE

    cfg = _cfg(tmp_path, verify_toml='required_sass = ["sm_100a"]')
    member = f"{PKG}/cubins/fmhaSm100aKernel_release.cubin"
    report = _verify(
        tmp_path, {f"{PKG}/__init__.py": b"", member: (RELEASE / "cu129-sm100a-note13.cubin").read_bytes()}, cfg=cfg
    )
    assert _found(report) == set() and report.ok
    assert [(c.member, c.sass, c.debug) for c in report.wheels[0].cuda] == [(member, ["sm_100a"], False)]


def _lineinfo_wheel_report(tmp_path, verify_toml: str):
    cubin = (DATA_CUDA / "cu130-sm90a-lineinfo.cubin").read_bytes()  # -lineinfo: its build dir in the line table
    cfg = _cfg(tmp_path, verify_toml=verify_toml)
    return _verify(tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/k.cubin": cubin}, cfg=cfg)


def test_allow_debug_allows_the_source_paths_line_info_carries(tmp_path):
    report = _lineinfo_wheel_report(tmp_path, "required_sass = []\nallow_debug = true")
    assert _found(report) == set() and report.ok
    strict = _lineinfo_wheel_report(tmp_path / "strict", "required_sass = []")
    assert {rule for rule, _m in _found(strict)} == {"debug-info", "build-path"}
    (message,) = [m for _s, _m, m in _messages(strict)]
    assert "'/tmp/tmp.A4OpQ6rslD'" in message and "verify.allow_debug" in message


@pytest.mark.parametrize("in_git", [False, True])
def test_a_path_in_the_tools_clean_copy_is_named_as_the_users_file(tmp_path, monkeypatch, in_git):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    from kestrel_release.files import statedir

    root = tmp_path / "repo"
    if in_git:  # a project in a subdirectory of its repository: the copy holds it at pkg/
        (root / ".git").mkdir(parents=True)
    project = make_verify_project(root / "pkg" if in_git else root, verify="required_sass = []")
    cfg = config.load(project, env={})
    inner = "pkg/csrc/k.cu" if in_git else "csrc/k.cu"
    copied = statedir.sources(cfg.project_dir) / "3.12" / inner
    report = _verify(tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/paths.py": f"SRC = '{copied}'\n".encode()}, cfg=cfg)
    (message,) = [m for _s, _m, m in _messages(report)]
    assert f"'{cfg.project_dir / 'csrc' / 'k.cu'}'" in message and str(statedir.sources(cfg.project_dir)) not in message
    # The CUDA rule maps it the same way.
    from kestrel_release.artifacts.cuda_binary import CudaInfo
    from kestrel_release.stages.verify.leaks import check_cuda

    info = CudaInfo(f"{PKG}/k.cubin", sass=["sm_90a"], debug=True, source_paths=[str(copied)])
    where = (str(cfg.project_dir), (str(statedir.sources(cfg.project_dir)),))
    assert check_cuda(info, (), False, True, *where) == []  # allow_debug: line info's paths are allowed
    (path_finding,) = [f for f in check_cuda(info, (), False, False, *where) if f.rule == "build-path"]
    assert f"'{cfg.project_dir / 'csrc' / 'k.cu'}'" in path_finding.message


def test_a_top_level_extension_module_beside_the_package_is_not_a_source_leak(tmp_path):
    # CUDAExtension("kestrel_kernels_cuda", ...) puts the module beside the package, outside its allow-list.
    so = (Path(__file__).resolve().parents[3] / "data" / "elf" / "plain_x86_64.so").read_bytes()
    cfg = _cfg(tmp_path, verify_toml=f'required_sass = []\nallow = ["{PKG}/**"]')
    files = {
        f"{PKG}/__init__.py": b"",
        "kestrel_kernels_cuda.cpython-311-x86_64-linux-gnu.so": so,
        "_ops.abi3.so": so,
        "libextra.so": so,  # a library, not a module: still outside the allow-list
        "notes.txt": b"stray\n",
    }
    report = _verify(tmp_path, files, cfg=cfg)
    assert _found(report) == {("source-leak", "libextra.so"), ("source-leak", "notes.txt")}
