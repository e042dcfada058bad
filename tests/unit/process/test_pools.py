"""pools.threads: an interrupted block does not wait for its running workers; a normal one does."""

from __future__ import annotations

import threading
import time

import pytest

from kestrel_release.process import pools


def test_an_interrupt_leaves_the_running_worker_behind():
    release = threading.Event()
    timer = threading.Timer(60, release.set)  # the worker's own end, far later than the assertion below
    timer.start()
    try:
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt), pools.threads(2) as pool:
            running = pool.submit(release.wait)
            queued = [pool.submit(release.wait) for _ in range(3)]
            raise KeyboardInterrupt
        assert time.monotonic() - started < 30  # a ThreadPoolExecutor's exit waits the 60 s
        assert not running.done() and all(f.cancelled() for f in queued[1:])
    finally:
        release.set()
        timer.cancel()


def test_a_normal_exit_waits_for_every_result():
    with pools.threads(2) as pool:
        futures = [pool.submit(time.sleep, 0.05) for _ in range(4)]
    assert all(f.done() and f.exception() is None for f in futures)
