"""Which built wheels skip repair: a `-none-any` tag, or a platform tag over no native code."""

from __future__ import annotations

from kestrel_release.stages.build_wheels import pure
from tests.factories import write_wheel

ELF = b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"\x03\x00\x3e\x00" + b"\x00" * 44


def test_any_wheels_need_no_repair(tmp_path):
    for tag in ("py3-none-any", "py2.py3-none-any", "cp312-none-any"):
        assert pure.needs_repair(write_wheel(tmp_path / tag, tag=tag)) is False


def test_a_platform_wheel_without_native_code_needs_no_repair(tmp_path):
    wheel = write_wheel(tmp_path, tag="cp312-cp312-linux_x86_64", files={"kestrel_kernels/__init__.py": b"x = 1\n"})
    assert pure.needs_repair(wheel) is False


def test_a_wheel_with_an_elf_library_is_repaired(tmp_path):
    wheel = write_wheel(
        tmp_path, tag="cp312-cp312-linux_x86_64", files={"kestrel_kernels/_c.cpython-312-x86_64-linux-gnu.so": ELF}
    )
    assert pure.needs_repair(wheel) is True
