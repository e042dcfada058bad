from . import _C, ops  # noqa: F401
