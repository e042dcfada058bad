"""Helpers for the GitHub publisher tests: the target's names and a download poller (wheels, build outputs and
projects come from tests/factories.py)."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

from tests.factories import GITHUB_REPO

REPO = GITHUB_REPO
TAG = "kestrel-kernels-nightly"
CANARY = "ghp_" + "C4naryT0ken" * 3 + "abc"  # ghp_ + 36 characters


class Poller(threading.Thread):
    """Downloads `url` in a loop and counts answers that are not 200 (the asset was missing)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.ok, self.missing, self.errors = url, 0, 0, 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=5) as resp:
                    resp.read()
                    self.ok += 1
            except urllib.error.HTTPError:
                self.missing += 1
            except OSError:  # the emulator itself failed to answer
                self.errors += 1

    def stop(self) -> Poller:
        self._halt.set()
        self.join(10)
        return self
