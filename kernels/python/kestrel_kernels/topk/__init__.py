from .dispatch import topk

__all__ = ["topk"]
