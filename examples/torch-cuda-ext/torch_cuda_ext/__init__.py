"""A fused SiLU-and-multiply CUDA kernel registered as the torch op torch_cuda_ext::silu_mul."""

import torch  # noqa: F401  (loads libtorch before the extension that links against it)

from . import _C, ops  # noqa: F401  (importing _C runs its TORCH_LIBRARY registrations)
from .ops import silu_mul
from .version import __version__

__all__ = ["__version__", "silu_mul"]
