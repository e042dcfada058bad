"""abi3 C extension linked against stand-ins for libtorch, libc10 and libcudart."""

__version__ = "0.1.0"


def versions() -> tuple[int, int, int]:
    """The stub libraries' versions, read through the extension (needs them on LD_LIBRARY_PATH)."""
    from c_ext_stub import _native

    return _native.versions()
