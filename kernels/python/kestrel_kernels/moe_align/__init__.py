from .dispatch import moe_align_block_size

__all__ = ["moe_align_block_size"]
