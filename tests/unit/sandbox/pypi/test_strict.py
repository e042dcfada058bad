"""The strict sandbox's copy of PyPI's upload rules (messages as Warehouse words them)."""

from __future__ import annotations

import pytest

from kestrel_release.sandbox.pypi.strict import _Refused, check_wheel_rules

MIB = 1024 * 1024


@pytest.mark.parametrize(
    "filename",
    [
        "kestrel_kernels-0.1.0-cp312-cp312-manylinux_2_34_x86_64.whl",
        "kestrel_kernels-0.1.0-cp312-cp312-manylinux2014_aarch64.whl",
        "kestrel_kernels-0.1.0-cp312-cp312-musllinux_1_2_x86_64.whl",
        "kestrel_kernels-0.1.0-py3-none-any.whl",
        "kestrel_kernels-0.1.0-cp312-cp312-linux_armv7l.whl",
    ],
)
def test_wheels_pypi_accepts_pass(filename):
    check_wheel_rules(filename, "0.1.0", 10, 100 * MIB)


@pytest.mark.parametrize(
    "filename, version, size, message",
    [
        (
            "kestrel_kernels-0.1.0-cp312-cp312-linux_x86_64.whl",
            "0.1.0",
            1,
            "has an unsupported platform tag 'linux_x86_64'",
        ),
        (
            "kestrel_kernels-0.1.0-cp312-cp312-manylinux_2_34_x86_64.linux_x86_64.whl",
            "0.1.0",
            1,
            "unsupported platform tag 'linux_x86_64'",
        ),
        (
            "kestrel_kernels-0.1.0+cu124-cp312-cp312-manylinux_2_34_x86_64.whl",
            "0.1.0+cu124",
            1,
            "The use of local versions in '0.1.0+cu124' is not allowed.",
        ),
        (
            "kestrel_kernels-0.1.0-cp312-cp312-manylinux_2_34_x86_64.whl",
            "0.1.0",
            101 * MIB,
            "File too large. Limit for project 'kestrel-kernels' is 100 MB.",
        ),
        ("kestrel_kernels-0.1.0-cp312-cp312-manylinux_2_34_x86_64.whl", "0.2.0", 1, "Version in filename"),
        ("kestrel-kernels-0.1.0.tar.gz", "0.1.0", 1, "Invalid file extension"),
    ],
)
def test_wheels_pypi_refuses_are_refused_with_its_message(filename, version, size, message):
    with pytest.raises(_Refused, match=None) as info:
        check_wheel_rules(filename, version, size, 100 * MIB)
    assert message in str(info.value)
