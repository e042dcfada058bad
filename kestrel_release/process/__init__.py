"""Running child processes: the one subprocess wrapper (proc), the process tree of a long child
(proctree), the guardian that ends children with the tool (reaper) and the worker pool (pools)."""
