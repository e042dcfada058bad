"""kestrel-kernels: precompiled CUDA kernels for Kestrel (sm_90a / H100).

Importing needs no GPU: the CUDA driver is opened on first use, and every
problem (no driver, no GPU, another architecture) raises KestrelKernelsError.
"""

__version__ = "0.1.0"

from ._runtime import KestrelKernelsError
from .moe_align import moe_align_block_size
from .silu_and_mul import silu_and_mul
from .topk import topk

__all__ = ["KestrelKernelsError", "__version__", "moe_align_block_size", "silu_and_mul", "topk"]
