"""kestrel-release: release prebuilt CUDA kernel wheels in one safe, repeatable command."""

__version__ = "0.1.0"
