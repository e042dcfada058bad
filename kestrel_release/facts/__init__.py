"""Pure tables of outside facts the tool relies on: NVIDIA's CUDA rules (cuda_rules) and the CPython
versions it knows (pyversions)."""
