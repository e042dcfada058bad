"""console.safe: the one escape of control characters in human output."""

from __future__ import annotations

from kestrel_release.ui import console


def test_every_control_character_is_escaped_and_the_rest_kept():
    assert console.safe("a\x1b[2Jb\nc\td\re\x00\x7f\x85\x9bé✓") == "a\\x1b[2Jb\\nc\\td\\re\\x00\\x7f\\x85\\x9bé✓"
    assert console.safe("plain name-1.0.whl") == "plain name-1.0.whl"


def test_every_printed_string_is_escaped_and_the_error_line_stays_one_line(capsys):
    # the test's own run context (tests/conftest.py) makes a fresh console on its captured stderr
    from rich.table import Table

    table = Table("member")
    table.add_row("pkg/\x1b]0;title\x07.so")
    console.get_console().print("a\x1b[2Jb")
    console.get_console().print(table)
    console.info("line one\nline two \x9b")
    console.warn("a\nb")
    console.error("failed: x\nerror: forged")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\x9b" not in err
    assert "a\\x1b[2Jb" in err and "pkg/\\x1b]0;title\\x07.so" in err
    assert "line one\nline two \\x9b" in err and "warning: a\\nb" in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == ["error: failed: x\\nerror: forged"]


def test_a_secret_in_a_table_cell_that_wraps_is_masked_whole(capsys, monkeypatch):
    # 80 columns (a log, CI): the cell wraps, and a secret cut across two lines was in neither line whole.
    from rich.table import Table

    from kestrel_release.ui import redact

    monkeypatch.setenv("COLUMNS", "80")
    secret = "ZGVwbG95OnMzY3IzdC1QYTU1d29yZC1vZi1hbnktc2hhcGU="
    redact.register(secret)
    table = Table("status", "file", "error")
    table.add_row("FAILED", "kestrel_kernels-0.1.0-cp312-cp312-manylinux_2_34_x86_64.whl", f"Forbidden: Basic {secret}")
    console.get_console().print(table)
    err = capsys.readouterr().err
    assert max(len(line) for line in err.splitlines()) <= 80  # it did wrap
    assert not any(secret[i : i + 8] in err for i in range(len(secret) - 8))
    assert "****" in err
