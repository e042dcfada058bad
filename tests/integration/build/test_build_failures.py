"""A failed build, as the user sees it: the summary quotes the first real compiler error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import make_c_ext_project
from tests.helpers import assert_one_line_error, run_cli

pytestmark = pytest.mark.slow

# The error comes first; hundreds of warning lines follow it (as a torch build's other jobs print theirs),
# so the log's tail holds only warnings and the frontend's summary.
_BROKEN = (
    "#include <Python.h>\n"
    "static int broken(void) { return undeclared_thing; }\n"
    + "".join(f"static int unused_{i}(void) {{ int v{i}; return 0; }}\n" for i in range(300))
    + 'static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, NULL};\n'
    "PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&mod); }\n"
)


def test_the_summary_quotes_the_first_compiler_error(tmp_path: Path) -> None:
    project = make_c_ext_project(tmp_path / "p")
    (project / "src" / "c.c").write_text(_BROKEN)
    setup = (project / "setup.py").read_text()
    (project / "setup.py").write_text(setup.replace('["src/c.c"]', '["src/c.c"], extra_compile_args=["-Wall"]'))
    result = run_cli(
        ["build", "--project", str(project), "--no-gpu-check"],
        env={"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert_one_line_error(result, 4, "first error: ", "src/c.c:2:34: error: ", "undeclared_thing")
