"""source_copy.left_out: which git-ignored files a failed build's log says are missing from the copy."""

from __future__ import annotations

from kestrel_release.project import source_copy


def test_a_missing_path_or_include_name_is_matched_to_the_ignored_file(tmp_path):
    copy = tmp_path / "copy"
    (copy / "src").mkdir(parents=True)
    (copy / "src" / "present.h").write_text("")
    ignored = ["src/ujson/lib/dconv.cc", "src/gen.h", "src/present.h", "build/lib/gen.h", "x.egg-info/PKG-INFO"]
    log = [
        "g++ -c ./src/ujson/lib/dconv.cc -o build/temp/dconv.o",  # no "missing" words: not read
        "cc1plus: fatal error: ./src/ujson/lib/dconv.cc: No such file or directory",
        "src/c.c:2:10: fatal error: gen.h: No such file or directory",  # bare include name
        f"error: {copy}/src/present.h: not found",  # in the copy after all: not the cause
        "error: /elsewhere/src/gen.h does not exist",  # outside the copy: not ours
    ]
    assert source_copy.left_out(copy, log, ignored) == ["src/ujson/lib/dconv.cc", "src/gen.h"]


def test_nothing_is_suggested_without_a_missing_ignored_source(tmp_path):
    log = ["fatal error: Python.h: No such file or directory", "error: command 'gcc' failed"]
    assert source_copy.left_out(tmp_path, log, ["build/Python.h", "notes.txt"]) == []


def test_the_hint_names_the_files_and_the_command():
    hint = source_copy.left_out_hint(["src/a.h"])
    assert "src/a.h is in your tree" in hint and "git add -f src/a.h" in hint
    many = source_copy.left_out_hint(["a", "b", "c", "d"])
    assert "(+1 more)" in many and "git add -f a" in many


def test_a_missing_directory_of_ignored_files_is_named_as_a_directory(tmp_path):
    log = ["error: package directory 'src/ujson/lib' does not exist"]
    assert source_copy.left_out(tmp_path, log, ["src/ujson/lib/a.cc", "src/ujson/lib/b.cc"]) == ["src/ujson/lib/"]


def test_a_quoted_top_directory_is_matched(tmp_path):
    log = ["error: error in 'egg_base' option: 'src' does not exist or is not a directory"]
    assert source_copy.left_out(tmp_path, log, ["src/c.c", "src/pkg/__init__.py"]) == ["src/"]
