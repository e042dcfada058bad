"""[tool.kestrel-release.variants]: parsed into Config.variants, every mistake one line, env overrides."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kestrel_release.config.variants import Exclude, Variant
from kestrel_release.config_loader import load as config
from kestrel_release.errors import ConfigError

FULL = """\
[tool.kestrel-release.variants]
torch = ["2.12", "2.13"]
cuda = ["12.6", "13.0"]
default = {torch = "2.13", cuda = "13.0"}
exclude = [{torch = "2.12", cuda = "12.6"}]
index = {"12.6" = "https://mirror.example/whl/cu126"}
python = ["3.12"]
platforms = ["manylinux_2_28_x86_64"]
"""


def _project(tmp_path: Path, table: str, top: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "ext"\nversion = "1.0"\n\n[tool.kestrel-release]\n' + top + textwrap.dedent(table)
    )
    return tmp_path


def _error(tmp_path: Path, table: str, env: dict[str, str] | None = None, top: str = "") -> str:
    with pytest.raises(ConfigError) as info:
        config.load(_project(tmp_path, table, top), env=env or {})
    assert info.value.exit_code == 2
    text = str(info.value)
    assert "\n" not in text
    return text


def test_absent_table_is_none(tmp_path):
    assert config.load(_project(tmp_path, ""), env={}).variants is None


def test_full_table(tmp_path):
    v = config.load(_project(tmp_path, FULL), env={}).variants
    assert v is not None
    assert (v.torch, v.cuda, v.default) == (("2.12", "2.13"), ("12.6", "13.0"), Variant("2.13", "13.0"))
    assert v.exclude == (Exclude(torch="2.12", cuda="12.6"),)
    assert (v.naming, v.format, v.python, v.platforms) == ("local", "wheel", ("3.12",), ("manylinux_2_28_x86_64",))
    assert v.index_url("12.6") == "https://mirror.example/whl/cu126"
    assert v.index_url("13.0") == "https://download.pytorch.org/whl/cu130"
    assert len(v.matrix()) == 3


def test_default_is_newest_pair_when_not_set(tmp_path):
    v = config.load(
        _project(tmp_path, '[tool.kestrel-release.variants]\ntorch = ["2.13", "2.12"]\ncuda = ["13", "12.6"]\n'), env={}
    ).variants
    assert v is not None and v.default == Variant("2.13", "13.0") and v.cuda == ("13.0", "12.6")


def test_env_overrides_the_table(tmp_path):
    env = {
        "KESTREL_RELEASE_VARIANTS_TORCH": "2.13",
        "KESTREL_RELEASE_VARIANTS_CUDA": "12.6,13.0",
        "KESTREL_RELEASE_VARIANTS_DEFAULT": '{torch = "2.13", cuda = "12.6"}',
        "KESTREL_RELEASE_VARIANTS_NAMING": "local",
    }
    v = config.load(
        _project(tmp_path, FULL.replace('exclude = [{torch = "2.12", cuda = "12.6"}]\n', "")), env=env
    ).variants
    assert v is not None and v.torch == ("2.13",) and v.default == Variant("2.13", "12.6")


def test_env_alone_makes_variants(tmp_path):
    env = {"KESTREL_RELEASE_VARIANTS_TORCH": "2.13", "KESTREL_RELEASE_VARIANTS_CUDA": "13.0"}
    v = config.load(_project(tmp_path, ""), env=env).variants
    assert v is not None and [x.name for x in v.matrix()] == ["torch213-cxx11-cu130-x86_64-linux"]


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('cuda = ["13.0"]\n', "`torch` is missing"),
        ('torch = ["2.13.1"]\ncuda = ["13.0"]\n', "'2.13.1' is not a torch minor like 2.13"),
        ('torch = ["2.13"]\ncuda = ["thirteen"]\n', "'thirteen' is not a CUDA toolkit version"),
        ('torch = ["2.13", "2.13"]\ncuda = ["13.0"]\n', "2.13 listed twice"),
        ('torch = ["2.13"]\ncuda = ["13.0"]\nnaming = "suffix"\n', "'suffix' is not one of local, package-suffix"),
        ('torch = ["2.13"]\ncuda = ["13.0"]\nformat = "pep852"\n', "(did you mean 'pep825'?)"),
        ('torch = ["2.13"]\ncuda = ["13.0"]\ntroch = 1\n', "variants].troch: unknown key (did you mean 'torch'?)"),
        ('torch = ["2.13"]\ncuda = ["13.0"]\ndefault = {torch = "2.12", cuda = "13.0"}\n', "is not in torch x cuda"),
        (
            'torch = ["2.13"]\ncuda = ["13.0", "12.6"]\ndefault = {torch = "2.13", cuda = "12.6"}\nexclude = [{cuda = "12.6"}]\n',
            "is excluded",
        ),
        (
            'torch = ["2.13"]\ncuda = ["13.0"]\nexclude = [{cuda = "12.8"}]\n',
            "'12.8' is not in cuda (13.0): it excludes nothing",
        ),
        ('torch = ["2.13"]\ncuda = ["13.0"]\nexclude = [{torch = "2.13"}]\n', "excludes every variant"),
        ('torch = ["2.13"]\ncuda = ["13.0"]\nexclude = [{python = "3.12"}]\n', "exclude[0].python: unknown key"),
        ('torch = ["2.13"]\ncuda = ["13.0"]\nindex = {"12.6" = "https://x"}\n', "CUDA 12.6 is not in cuda (13.0)"),
        ('torch = ["2.13"]\ncuda = ["13.0"]\nindex = {"13.0" = "download.pytorch.org"}\n', "is not an index URL"),
        ('torch = ["2.13"]\ncuda = ["13.0"]\npython = ["3.x"]\n', "'3.x' is not a CPython version"),
        ('torch = ["2.13"]\ncuda = ["13.0"]\nplatforms = ["linux"]\n', "variants].platforms"),
        ('torch = ["2.12", "2.13"]\ncuda = ["13.0"]\nnaming = "package-suffix"\n', "would all be <name>-cu13"),
    ],
)
def test_each_mistake_is_one_line(tmp_path, table, needle):
    assert needle in _error(tmp_path, "[tool.kestrel-release.variants]\n" + table)


def test_a_variant_toolkit_that_cannot_build_an_arch(tmp_path):
    text = _error(
        tmp_path,
        '[tool.kestrel-release.variants]\ntorch = ["2.13"]\ncuda = ["12.6", "13.0"]\n',
        top='cuda_arch = ["70"]\n',
    )
    assert "variants.cuda: sm_70 cannot be built by CUDA 13.0" in text


def test_env_mistake_names_the_variable(tmp_path):
    text = _error(tmp_path, FULL, env={"KESTREL_RELEASE_VARIANTS_NAMING": "suffix"})
    assert "in environment variables: KESTREL_RELEASE_VARIANTS_NAMING: 'suffix' is not one of" in text


def test_unknown_variants_variable(tmp_path):
    assert (
        "KESTREL_RELEASE_VARIANTS_TROCH: unknown variable (did you mean 'KESTREL_RELEASE_VARIANTS_TORCH'?)"
        in _error(tmp_path, "", env={"KESTREL_RELEASE_VARIANTS_TROCH": "2.13"})
    )


def test_variants_as_a_plain_key_is_a_table(tmp_path):
    assert "variants]: expected a table" in _error(tmp_path, "", top='variants = "torch"\n')


def _cached(cache: Path, answers: dict[str, str], read: str = "2026-11-28T00:00:00+00:00") -> None:
    import json

    from kestrel_release.adapters.pypi import torch_cuda

    entries = {m: {"cuda": c, "read": read} for m, c in answers.items()}
    (cache / torch_cuda.CACHE_FILE).write_text(json.dumps({torch_cuda.PYPI: entries}))


def test_torch_minors_alone_build_each_against_its_own_pypi_cuda(tmp_path, monkeypatch):
    import datetime as dt

    from kestrel_release.adapters.pypi import torch_cuda

    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(cache))
    monkeypatch.delenv(torch_cuda.ROOT_ENV, raising=False)
    _cached(cache, {"2.14": "13.0", "2.15": "13.2"}, dt.datetime.now(dt.timezone.utc).isoformat())
    v = config.load(_project(tmp_path, '[tool.kestrel-release.variants]\ntorch = ["2.14", "2.15"]\n'), env={}).variants
    assert v is not None
    assert [(x.torch, x.cuda) for x in v.matrix()] == [("2.14", "13.0"), ("2.15", "13.2")]


def test_torch_minors_alone_with_pypi_unreachable_and_nothing_cached_is_one_line(tmp_path, monkeypatch):
    from kestrel_release.adapters.pypi import torch_cuda

    def unreachable(minors, root):
        raise torch_cuda.Unreadable("https://pypi.org/pypi/torch/json could not be read (URLError)")

    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(torch_cuda.ROOT_ENV, raising=False)
    monkeypatch.setattr(torch_cuda, "read_from_index", unreachable)
    with pytest.raises(ConfigError) as err:
        config.load(_project(tmp_path, '[tool.kestrel-release.variants]\ntorch = ["2.14"]\n'), env={})
    assert (
        "variants]: `cuda` is not given and the CUDA of PyPI's torch 2.14 could not be read from "
        'https://pypi.org: list the CUDAs to build (e.g. cuda = ["13.0"])'
    ) in str(err.value)


STABLE = """\
[tool.kestrel-release.variants]
stable_abi = "2.10"
torch = ["2.13"]
cuda = ["12.6", "13.0"]
"""


def test_stable_abi_builds_once_per_cuda_major(tmp_path):
    v = config.load(_project(tmp_path, STABLE), env={}).variants
    assert v is not None and v.stable_abi == "2.10"
    assert [w.name for w in v.matrix()] == [
        "torch-stable-abi210-cu126-x86_64-linux",
        "torch-stable-abi210-cu130-x86_64-linux",
    ]
    assert v.default == Variant("2.13", "13.0", stable_abi="2.10")
    # one wheel per CUDA major: the local version names the CUDA alone, never the torch it compiled against
    assert [v.wheel_version("1.0", w) for w in v.matrix()] == ["1.0+cu126", "1.0"]


def test_stable_abi_without_torch_builds_against_its_target(tmp_path):
    v = config.load(
        _project(tmp_path, '[tool.kestrel-release.variants]\nstable_abi = "2.11"\ncuda = ["13.0"]\n'), env={}
    )
    assert v.variants is not None and v.variants.torch == ("2.11",)


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('stable_abi = "2.9"\ncuda = ["13.0"]', 'torch 2.9 has no stable ABI to target (TORCH_TARGET_VERSION starts with torch 2.10); use stable_abi = "2.10" or later'),
        ('stable_abi = 2.10\ncuda = ["13.0"]', 'stable_abi: 2.1 is not a string; write the torch minor quoted: stable_abi = "2.10"'),
        ('stable_abi = "two"\ncuda = ["13.0"]', "stable_abi: 'two' is not a torch minor like \"2.10\""),
        ('stable_abi = "2.10"\ntorch = ["2.13", "2.14"]\ncuda = ["13.0"]', "a stable-ABI build compiles against one torch (2.13, 2.14 given)"),
        ('stable_abi = "2.12"\ntorch = ["2.11"]\ncuda = ["13.0"]', "torch 2.11 is older than stable_abi 2.12"),
        ('stable_abi = "2.10"\nformat = "pep825"\ncuda = ["13.0"]', "format: 'pep825' labels each wheel with one torch minor; with stable_abi use 'wheel'"),
        ('stable_abi = "2.10"\ntorch = ["2.13"]\ncuda = ["13.0", "13.2"]', "a stable-ABI build is one wheel per CUDA major, and 13.0, 13.2 are all CUDA 13; keep the oldest (13.0"),
    ],
)  # fmt: skip
def test_stable_abi_mistakes_are_one_line(tmp_path, table, needle):
    assert needle in _error(tmp_path, "[tool.kestrel-release.variants]\n" + table + "\n")
