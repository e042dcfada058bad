"""Unit tests start no process and no server (issue 13): those belong in tests/integration/.

The autouse fixture below makes every way of starting a child (`subprocess.Popen`, which `subprocess.run`,
`proc.run` and `run_cli` all go through, and `os.fork`/`os.posix_spawn`) and every way of serving
(`socket.bind`, `socket.listen`) raise at once with a message naming the rule, so a unit test that slips
one in fails loudly instead of quietly becoming slow and machine-dependent. Client sockets are not blocked:
nothing in a unit test may reach a server anyway, since none can be started.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator

import pytest

_RULE = "unit tests start no process or server (tests/unit/conftest.py); move this test to tests/integration/"


class NoProcessOrServer(AssertionError):
    """Raised by the guard; an AssertionError so pytest reports it as a plain test failure."""


def _refuse(what: str):
    def refuse(*args: object, **kwargs: object) -> None:
        raise NoProcessOrServer(f"{what} called: {_RULE}")

    return refuse


# Package scope (this directory and below), not function scope: module- and session-scoped fixtures of unit
# tests are set up before function-scoped ones, and one that starts a server or compiles with nvcc would slip by.
@pytest.fixture(scope="package", autouse=True)
def _no_process_or_server() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", _refuse("subprocess.Popen"))
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
            if hasattr(os, name):
                patch.setattr(os, name, _refuse(f"os.{name}"))
        patch.setattr(socket.socket, "bind", _refuse("socket.bind"))
        patch.setattr(socket.socket, "listen", _refuse("socket.listen"))
        yield
