"""Shipped with the package on purpose (`python -m pytest --pyargs c_ext_stub`).

The extension needs the stub libraries at run time: run with LD_LIBRARY_PATH pointing at
build/stubs of the source tree, as the real libraries come from the user's torch install.
"""

import pytest


def test_versions_come_from_the_stub_libraries():
    try:
        import c_ext_stub

        got = c_ext_stub.versions()
    except ImportError as exc:  # the stubs are not on LD_LIBRARY_PATH
        pytest.skip(f"stub libraries not loadable: {exc}")
    assert got == (211, 10, 13000)
