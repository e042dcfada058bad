"""Build-time helpers for kestrel-kernels (never shipped in a wheel)."""
