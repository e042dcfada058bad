"""The worker pool every command uses: on Ctrl-C or SIGTERM the command ends now, not when its workers finish.

Why not `with ThreadPoolExecutor() as pool`: its exit waits for every running task, so a signal that lands
while the main thread waits for results was answered only when the slowest worker finished (a verify of a
hostile wheel: 51 s after SIGTERM). Here a failure or an interrupt cancels what has not started and leaves
the running workers behind; the interrupted process ends with os._exit (__main__), which does not join them.
A normal exit still waits, so results are never lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager


@contextmanager
def threads(max_workers: int, name: str = "") -> Iterator[ThreadPoolExecutor]:
    """A ThreadPoolExecutor that does not wait for its workers when the block raises (KeyboardInterrupt too)."""
    pool = ThreadPoolExecutor(max_workers=max(1, max_workers), thread_name_prefix=name)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
