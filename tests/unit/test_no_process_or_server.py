"""The guard in tests/unit/conftest.py: starting a child or a server from a unit test fails with the rule."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from kestrel_release.process import proc
from tests.unit.conftest import NoProcessOrServer


def test_a_child_process_is_refused_with_the_rule() -> None:
    with pytest.raises(NoProcessOrServer, match="move this test to tests/integration/"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    with pytest.raises(NoProcessOrServer, match=r"subprocess\.Popen"):
        proc.run([sys.executable, "-c", "pass"])


def test_a_server_socket_is_refused_but_a_plain_socket_object_is_not() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(NoProcessOrServer, match=r"socket\.bind"):
            sock.bind(("127.0.0.1", 0))
        with pytest.raises(NoProcessOrServer, match=r"socket\.listen"):
            sock.listen()
