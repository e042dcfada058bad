"""ci_output: what a GitHub Actions job shows beside the log (groups, annotations, the job summary), and
nothing at all outside one."""

from __future__ import annotations

import pytest

from kestrel_release.ui import ci_output, console, redact


@pytest.fixture
def printed(monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(console, "plain", lines.append)
    monkeypatch.setattr(console, "warn", lambda message, **_: lines.append(f"warning: {message}"))
    return lines


@pytest.fixture
def actions(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.setitem(ci_output._warned, "summary", False)
    return tmp_path / "summary.md"


def test_escapes_follow_the_workflow_command_rules():
    assert ci_output.escape_data("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"
    assert ci_output.escape_property("C:\\x,y%\n") == "C%3A\\x%2Cy%25%0A"


def test_an_error_annotation_is_one_line_with_escaped_title_and_message(actions, printed):
    ci_output.annotate("error", "upload failed: 100% of 2\nfiles", title="kestrel-release")
    assert printed == ["::error title=kestrel-release::upload failed: 100%25 of 2%0Afiles"]


def test_a_warning_names_its_file_and_line_relative_to_the_workspace(actions, printed, monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    ci_output.annotate("warning", "too big", file=str(tmp_path / "dist" / "a,b.whl"), line=3)
    assert printed == ["::warning file=dist/a%2Cb.whl,line=3::too big"]


def test_secrets_never_reach_an_annotation_a_group_or_the_summary(actions, printed):
    secret = "s3cr3t-value-for-the-test-0123456789"
    redact.register(secret)
    try:
        ci_output.annotate("error", f"bad token {secret}", title=secret)
        ci_output.group(f"step {secret}", [f"log {secret}"])
        ci_output.summary(f"| {secret} |")
    finally:
        redact.clear()
    assert secret not in "\n".join(printed) and secret not in actions.read_text()
    assert redact.MASK in actions.read_text()


def test_a_group_folds_its_lines_and_neutralizes_commands_inside(actions, printed):
    assert ci_output.group("python 3.12: ok", ["compiling", "::endgroup::"]) is True
    assert printed == ["::group::python 3.12: ok\ncompiling\n ::endgroup::\n::endgroup::"]


def test_the_summary_is_appended_never_rewritten(actions):
    actions.write_text("earlier step\n")
    ci_output.summary("### one")
    ci_output.summary("### two")
    assert actions.read_text() == "earlier step\n### one\n\n### two\n\n"


def test_an_unwritable_summary_is_one_warning_and_no_failure(actions, printed, monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "such" / "dir" / "summary.md"))
    ci_output.summary("### one")
    ci_output.summary("### two")
    assert len(printed) == 1 and printed[0].startswith("warning: could not write the job summary")


def test_outside_actions_nothing_is_written(monkeypatch, printed, tmp_path):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    assert ci_output.group("step", ["line"]) is False
    ci_output.annotate("error", "x")
    ci_output.summary("### x")
    assert printed == [] and not (tmp_path / "summary.md").exists()


def test_a_markdown_table_keeps_each_row_on_one_line():
    assert ci_output.table(("a", "b"), [("x|y", "1\n2"), ("", 3)]) == (
        "| a | b |\n|---|---|\n| x\\|y | 1 2 |\n|   | 3 |"
    )


def test_a_quoted_compiler_error_gives_the_annotation_its_file_and_line() -> None:
    gcc = "build for Python 3.12 failed — first error: src/c.c:2:13: error: expected declaration specifiers"
    nvcc = 'first error: csrc/cuda/knn.cu(41): error: identifier "x" is undefined'
    fatal = "first error: csrc/ext.cpp:7:10: fatal error: cusparse.h: No such file or directory"
    assert ci_output.location(gcc) == ("src/c.c", 2)
    assert ci_output.location(nvcc) == ("csrc/cuda/knn.cu", 41)
    assert ci_output.location(fatal) == ("csrc/ext.cpp", 7)
    assert ci_output.location("verify found 1 error(s) in 1 of 1 wheel(s)") == (None, None)
