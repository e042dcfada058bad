"""Build children never see publish credentials, and whatever a build prints is masked.

A build runs third-party code (the backend, setup.py, CMake, build dependencies from PyPI).
Here that code dumps its whole environment and the user's ~/.pypirc to stdout and to a file;
no credential may appear in the child's view, the build logs, the console or any file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kestrel_release.process import proc
from kestrel_release.ui import redact
from tests import factories
from tests.helpers import run_cli

CANARIES = {
    "TWINE_PASSWORD": "canary-twine-pw-5a1f93",
    "TWINE_USERNAME": "canary-twine-user-77b2",
    "GH_TOKEN": "canary-gh-4c8e21",
    "GITHUB_TOKEN": "canary-github-9d0b55",
    "UV_PUBLISH_TOKEN": "canary-uvpub-3e6a70",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "canary-oidc-1b2c3d",
}
PYPIRC_PASSWORD = "canary-pypirc-pw-8f7e6d"
# Runs inside the build (setup.py is executed by the backend): print everything, keep a copy.
DUMP = """
import os, pathlib, sys
_env = "\\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))
_rc = pathlib.Path(os.path.expanduser("~/.pypirc"))
_text = _env + "\\n" + (_rc.read_text() if _rc.exists() else "")
print(_text)
print(_text, file=sys.stderr)
# The build runs in a clean copy of the project, so the copy goes where the test says, not beside setup.py.
pathlib.Path(os.environ["ENV_SEEN_BY_BUILD"]).write_text(_env)
if os.environ.get("MINI_FAIL"):
    # The frontend drains stdout and stderr as they come: a block-buffered stdout (no PYTHONUNBUFFERED, as in
    # a clean login shell) arrives after stderr, whole. Ending both streams with the failure keeps it the last
    # line of the tail whichever stream comes last, however long the environment printed before it.
    print("MINI_FAIL: failing on purpose", flush=True)
    sys.exit("MINI_FAIL: failing on purpose")
"""


def _project(tmp_path: Path, fail: bool) -> Path:
    root = factories.make_c_ext_project(tmp_path / "p")
    (root / "setup.py").write_text(DUMP + (root / "setup.py").read_text())
    if fail:
        text = (root / "pyproject.toml").read_text()
        (root / "pyproject.toml").write_text(text + '\n[tool.kestrel-release.build.env]\nMINI_FAIL = "1"\n')
    return root


def _grep(root: Path, needles: list[str]) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            hits += [f"{path}: {n}" for n in needles if n.encode() in data]
    return hits


@pytest.mark.slow
@pytest.mark.parametrize("fail", [False, True], ids=["build-ok", "build-fails"])
def test_a_build_that_prints_its_environment_leaks_no_credential(tmp_path: Path, fail: bool) -> None:
    project = _project(tmp_path, fail)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".pypirc").write_text(
        f"[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {PYPIRC_PASSWORD}\n"
    )
    env = {
        **CANARIES,
        "HOME": str(home),
        "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache/uv")),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "ENV_SEEN_BY_BUILD": str(tmp_path / "env-seen-by-build.txt"),
    }
    result = run_cli(["build", "--project", str(project)], env=env)
    assert result.code == (4 if fail else 0), result.output
    seen = (tmp_path / "env-seen-by-build.txt").read_text()
    assert seen.strip(), "the build step did not run"
    for name in CANARIES:
        assert f"\n{name}=" not in "\n" + seen, f"the build child inherited {name}"
    everything = [*list(CANARIES.values()), PYPIRC_PASSWORD]
    assert not [n for n in everything if n in result.output], result.output
    # logs, wheels, the project tree: the .pypirc password is printed by the build, so only masking stops it
    assert not _grep(project, everything)
    assert not _grep(tmp_path / "cache", everything)  # build logs and a failed build's kept source copy
    if fail:
        assert "MINI_FAIL" in result.output  # the failure tail really was shown (so masking was exercised)
        assert "****" in result.output


def test_child_env_drops_credentials_and_keeps_the_rest(monkeypatch, tmp_path: Path) -> None:
    redact.clear()
    monkeypatch.setenv("MY_RELEASE_TOKEN", "canary-custom-123456")
    monkeypatch.setenv("SOME_VAR_HOLDING_IT", "prefix canary-custom-123456 suffix")
    monkeypatch.setenv("PATH_LIKE", "/usr/bin")
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    redact.register_startup(
        argv=["kestrel-release", "publish", "--token-env", "MY_RELEASE_TOKEN"], pypirc="/nonexistent/.pypirc"
    )
    try:
        env = proc.child_env({"EXTRA": "1"})
        for name in [*CANARIES, "MY_RELEASE_TOKEN", "SOME_VAR_HOLDING_IT"]:
            assert name not in env
        assert env["PATH_LIKE"] == "/usr/bin" and env["EXTRA"] == "1"
        (tmp_path / "said").write_text("canary-custom-123456\n")
        out = proc.run(["sh", "-c", f"env; cat {tmp_path / 'said'}"]).output
        assert "canary-custom-123456" not in out and "****" in out
        assert not [v for v in CANARIES.values() if v in out]
    finally:
        redact.clear()


def test_a_short_password_does_not_strip_ordinary_variables(monkeypatch) -> None:
    redact.clear()
    monkeypatch.setenv("TWINE_PASSWORD", "weakpw")  # a weak password that also occurs inside PATH
    monkeypatch.setenv("PATH", "/opt/weakpw/bin:" + os.environ["PATH"])
    redact.register_startup(argv=["kestrel-release"], pypirc="/nonexistent/.pypirc")
    try:
        env = proc.child_env()
        assert "TWINE_PASSWORD" not in env and env["PATH"] == os.environ["PATH"]
    finally:
        redact.clear()
