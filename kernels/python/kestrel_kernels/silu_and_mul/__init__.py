from .dispatch import silu_and_mul

__all__ = ["silu_and_mul"]
