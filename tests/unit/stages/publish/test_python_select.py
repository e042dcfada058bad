"""publish --python: which wheels serve the selected Pythons (abi3/py3 serve every Python at or above their floor)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.errors import UsageError
from kestrel_release.stages.publish import python_select

PLAT = "manylinux_2_28_x86_64"


@pytest.mark.parametrize(
    ("tag", "served"),
    [
        ("cp312-cp312", True),
        ("cp311-cp311", False),
        ("cp310-abi3", True),
        ("cp313-abi3", False),
        ("py3-none", True),
        ("py310-none", True),
        ("py313-none", False),
    ],
)
def test_serves_3_12(tag, served):
    assert python_select.serves(f"kestrel_kernels-0.1.0-{tag}-{PLAT}.whl", ("3.12",)) is served


def test_for_pythons_splits_and_refuses_an_empty_selection():
    wheels = [Path(f"kestrel_kernels-0.1.0-cp3{m}-cp3{m}-{PLAT}.whl") for m in (11, 12, 13)]
    kept, left = python_select.for_pythons(wheels, ("3.12", "3.13"))
    assert (kept, left) == (wheels[1:], wheels[:1])
    with pytest.raises(UsageError, match=r"no wheel for Python 3\.10"):
        python_select.for_pythons(wheels, ("3.10",))
