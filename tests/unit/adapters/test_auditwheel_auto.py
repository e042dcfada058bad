"""adapters/_auditwheel_auto.py runs by an image's own Python in a container build (stages/build_wheels/container.py
copies the file there): a root that has auditwheel and nothing of this tool."""

from __future__ import annotations

import ast

from kestrel_release.adapters import auditwheel
from kestrel_release.adapters._auditwheel_auto import resolve_auto


def test_the_file_run_in_an_image_imports_only_the_standard_library_and_auditwheel():
    tree = ast.parse(auditwheel.in_root_script().read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    tops = {name.split(".")[0] for name in names}
    assert tops <= {"__future__", "sys", "pathlib", "auditwheel"}, tops


def test_an_explicit_plat_is_passed_on_as_given():
    argv = ["repair", "--plat", "manylinux_2_17_x86_64", "--only-plat", "-w", "out", "w.whl"]
    assert resolve_auto(argv) == argv
