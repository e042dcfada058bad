"""helpcache.wanted: which requests may be answered from the help cache (bounded by the command table)."""

from __future__ import annotations

import pytest

from kestrel_release import helpcache


@pytest.mark.parametrize(
    "args",
    [["--help"], ["verify", "--help"], ["--version"], ["-v", "sandbox", "pypi", "--help"], ["ci", "init", "--help"]],
)
def test_help_and_version_with_command_names_only_are_cached(args: list[str]) -> None:
    assert helpcache.wanted(args)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["verify"],
        ["verify", "dist/", "--help"],  # a path: one entry per path typed would grow without bound
        ["build", "--project", "kernels", "--help"],
        ["build", "--python=3.12", "--help"],
        ["--json", "--help"],
        ["verify", "--", "--help"],
    ],
)
def test_anything_else_takes_the_normal_path(args: list[str]) -> None:
    assert not helpcache.wanted(args)
