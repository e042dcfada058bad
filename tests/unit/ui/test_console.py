"""console.safe: the one escape of control characters in human output."""

from __future__ import annotations

from kestrel_release.ui import console


def test_every_control_character_is_escaped_and_the_rest_kept():
    assert console.safe("a\x1b[2Jb\nc\td\re\x00\x7f\x85\x9bé✓") == "a\\x1b[2Jb\\nc\\td\\re\\x00\\x7f\\x85\\x9bé✓"
    assert console.safe("plain name-1.0.whl") == "plain name-1.0.whl"


def test_every_printed_string_is_escaped_and_the_error_line_stays_one_line(monkeypatch, capsys):
    from rich.table import Table

    monkeypatch.setattr(console, "_console", None)  # a fresh console on this test's captured stderr
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
