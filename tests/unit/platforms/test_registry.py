"""Adding a platform is one module and one registry line: a throwaway FreeBSD platform, registered
here only, is accepted by the configuration, planned by build, given a CI job by `ci init`,
named by explain, checked by verify's binary and PyPI rules, taken as a variant's OS, and read as the
running host, with no other code knowing its name (every list of platforms derives from the registry)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from kestrel_release import platforms
from kestrel_release.adapters.host import Host
from kestrel_release.artifacts import binformat
from kestrel_release.config_loader import load as config
from kestrel_release.errors import ConfigError
from kestrel_release.flows import ci
from kestrel_release.platforms import arches
from kestrel_release.platforms.base import OSPlatform, Platform
from kestrel_release.stages.build_wheels import platforms as build_platforms

TAG = "freebsd_14_0_release_amd64"  # what `sysconfig.get_platform()` gives there, as a wheel tag
LINUX = "manylinux_2_28_x86_64"


class FreeBSD(OSPlatform):
    """The whole platform: its tags, its CPUs (from the one table), its binaries and its runner."""

    system = "freebsd"
    binary_format = "elf"
    examples = (TAG,)
    runners: ClassVar[dict[str, str]] = {"x86_64": "freebsd-14-runner"}
    sys_platform = "freebsd"
    host_floor = "os"
    variant_word = "fbsd"
    _TAG = re.compile(r"^freebsd_(\d+)_(\d+)_release_(\w+)$")

    def parse(self, name: str) -> Platform | None:
        m = self._TAG.match(name)
        cpu = arches.canonical(m.group(3)) if m else None
        return Platform(name, "freebsd", (cpu,), (int(m.group(1)), int(m.group(2))), self.system) if m and cpu else None

    def host_tag(self, host: Host) -> str:
        major, minor = host.libc_version or (14, 0)
        return f"freebsd_{major}_{minor}_release_{'amd64' if host.arch == 'x86_64' else host.arch}"


@pytest.fixture
def freebsd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(platforms.REGISTRY, "freebsd", FreeBSD())


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
        [project]
        name = "demo-kernels"
        version = "1.2.3"

        [tool.kestrel-release]
        python = ["3.12"]
        platforms = ["{LINUX}", "{TAG}"]
        """)
    )
    return tmp_path


def test_unregistered_the_platform_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        config.load(_project(tmp_path), env={})
    assert f"platforms: '{TAG}' is not a wheel platform tag" in str(err.value)


def test_registered_build_plans_it_on_its_host_and_leaves_it_elsewhere(tmp_path: Path, freebsd: None) -> None:
    cfg = config.load(_project(tmp_path), env={})  # accepted: the registry parses it
    here = build_platforms.plan(cfg.platforms, cfg.python, Host("freebsd", "x86_64", libc_version=(14, 1)))
    assert here.to_json() == {
        "configured": [LINUX, TAG],
        "built": TAG,
        "left_for_others": [{"platform": LINUX, "python": "3.12", "why": "needs a linux x86_64 machine"}],
    }
    linux = build_platforms.plan(cfg.platforms, cfg.python, Host("linux", "x86_64", "glibc", (2, 36)))
    assert linux.build == LINUX
    assert linux.left == [{"platform": TAG, "python": "3.12", "why": "needs a freebsd x86_64 machine"}]


def test_registered_ci_init_gives_it_a_job_on_its_runner(tmp_path: Path, freebsd: None) -> None:
    cfg = config.load(_project(tmp_path), env={})
    text = ci.render_workflow(cfg, tmp_path, ci.ToolInstall(locked=True))
    jobs = yaml.safe_load(text)["jobs"]
    assert jobs["build-freebsd-x86_64"]["runs-on"] == "freebsd-14-runner"
    assert jobs[f"build-{LINUX}"]["runs-on"] == list(cfg.ci.runner_labels)  # Linux CUDA builds: the GPU runners


def test_registered_explain_and_verify_know_it(freebsd: None) -> None:
    assert platforms.host_tag(Host("freebsd", "x86_64", libc_version=(14, 0))) == TAG
    assert binformat.expected_binary(TAG) == binformat.Expected("elf", ("x86_64",))
    assert platforms.covers(TAG.replace("14_0", "13_2"), TAG) and not platforms.covers(LINUX, TAG)


def test_registered_it_is_a_variant_os_named_in_its_own_word(tmp_path: Path, freebsd: None) -> None:
    from kestrel_release.config.variants import Variant

    assert "freebsd" in platforms.systems()
    assert Variant(torch="2.13", cuda="13.0", os="freebsd").name == "torch213-cu130-x86_64-fbsd"  # no ABI word
    (tmp_path / "pyproject.toml").write_text(
        _project(tmp_path).joinpath("pyproject.toml").read_text()
        + '\n[tool.kestrel-release.variants]\ntorch = ["2.13"]\ncuda = ["13.0"]\nexclude = [{os = "freebsd"}]\n'
    )
    config.load(tmp_path, env={})  # an exclude naming its OS is valid: the OS list is the registry's


def test_registered_verify_and_the_strict_sandbox_refuse_its_tags_as_pypi_does(freebsd: None) -> None:
    from kestrel_release.sandbox.pypi import strict

    assert not platforms.pypi_accepts(TAG)  # it declares no PyPI tags: PyPI refuses them
    assert platforms.pypi_accepts(LINUX) and platforms.pypi_accepts("any")
    with pytest.raises(Exception, match=f"unsupported platform tag '{TAG}'"):
        strict.check_wheel_rules(f"demo-1.0-cp312-cp312-{TAG}.whl", "1.0", 1, 2**20)
    strict.check_wheel_rules(f"demo-1.0-cp312-cp312-{LINUX}.whl", "1.0", 1, 2**20)  # a Linux tag PyPI takes


def test_registered_the_running_system_is_read_through_it(monkeypatch: pytest.MonkeyPatch, freebsd: None) -> None:
    from kestrel_release.adapters import host

    assert platforms.for_sys_platform("freebsd14") is platforms.REGISTRY["freebsd"]
    monkeypatch.setattr(host.sys, "platform", "freebsd14")
    monkeypatch.setattr(host.platform, "mac_ver", lambda: ("14.1", ("", "", ""), ""))  # its floor: the OS release
    assert host.current().system == "freebsd" and host.current().libc_version == (14, 1)
