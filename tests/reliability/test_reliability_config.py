"""Malformed pyproject / configuration / environment: one clear line, exit 2, never a crash.

The CLI tests go through the real `kestrel-release` as a user would; the property
test throws arbitrary TOML values at every configuration key and requires that
`config.load` either returns a Config or raises ConfigError (which the CLI turns
into one line and exit 2) — any other exception would surface as exit 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kestrel_release.config_loader import load as config
from kestrel_release.errors import ConfigError
from tests.helpers import assert_one_line_error, run_cli

GOOD_PROJECT = '[project]\nname = "mini-kernels"\nversion = "0.1.0"\n'

# (file content as bytes, the needle that the one error line must contain)
BAD_PYPROJECTS = {
    "invalid-toml": (b'[project\nname = "x"\n', "not valid TOML"),
    "not-utf8": (b"\xff\xfe[project]\nname = 'x'\n", "not valid TOML"),
    "nul-byte": (b'[project]\nname = "x\x00"\n', "not valid TOML"),
    "deeply-nested": (
        GOOD_PROJECT.encode() + b"[tool.kestrel-release]\nx = " + b"[" * 5000 + b"]" * 5000 + b"\n",
        "not valid TOML",
    ),
    "no-name": (b'[project]\nversion = "1.0"\n', "[project].name: missing"),
    "no-version": (b'[project]\nname = "x"\n', "[project].version: missing"),
    "dynamic-not-a-list": (b'[project]\nname = "x"\ndynamic = 5\n', "[project].dynamic"),
    "project-not-a-table": (b'project = "x"\n', "[project].name: missing"),
    # top-level keys must come before the [project] header to stay top-level
    "tool-not-a-table": (b'tool = "x"\n' + GOOD_PROJECT.encode(), "[tool]: expected a table"),
    "table-not-a-table": (b"tool = { kestrel-release = 3 }\n" + GOOD_PROJECT.encode(), "expected a table"),
    "unknown-key": (GOOD_PROJECT.encode() + b"[tool.kestrel-release]\npyhton = ['3.12']\n", "did you mean 'python'"),
    "unknown-section-key": (
        GOOD_PROJECT.encode() + b"[tool.kestrel-release.publish]\nretires = 3\n",
        "did you mean 'retries'",
    ),
    "python-not-a-list": (
        GOOD_PROJECT.encode() + b"[tool.kestrel-release]\npython = '3.12'\n",
        "expected a list of strings",
    ),
    "bad-python": (GOOD_PROJECT.encode() + b"[tool.kestrel-release]\npython = ['2.7']\n", "not a CPython version"),
    "negative-jobs": (GOOD_PROJECT.encode() + b"[tool.kestrel-release.build]\njobs = -1\n", "non-negative"),
    "infinite-size": (
        GOOD_PROJECT.encode() + b"[tool.kestrel-release.verify]\nmax_file_size = 'infMiB'\n",
        "max_file_size",
    ),
    "bad-frontend": (
        GOOD_PROJECT.encode() + b"[tool.kestrel-release.build]\nfrontend = 'buid'\n",
        "did you mean 'build'",
    ),
    "bad-version": (b'[project]\nname = "x"\nversion = "1.0-banana!"\n', "not a valid PEP 440 version"),
    "bad-repo": (
        GOOD_PROJECT.encode() + b"[tool.kestrel-release.targets.github]\nrepo = 'no-slash'\n",
        "not OWNER/NAME",
    ),
    "bad-version-file": (
        GOOD_PROJECT.encode() + b"[tool.kestrel-release]\nversion_files = [{path = 'a'}]\n",
        "version_files[0]",
    ),
}

# Commands that load the configuration before doing anything else. (`release` only ever
# rehearses here: a test must never be one bug away from the real indexes.)
PROBE = ["version"]
CONFIG_COMMANDS = [
    ["release", "--rehearse"],
    ["verify"],
    ["build", "--no-gpu-check"],
    ["version"],
    ["doctor"],
    ["publish", "--dry-run"],
]


def _project(tmp_path: Path, content: bytes) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_bytes(content)
    return project


def _listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", sorted(BAD_PYPROJECTS))
def test_bad_pyproject_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, case: str) -> None:
    content, needle = BAD_PYPROJECTS[case]
    project = _project(tmp_path, content)
    before = _listing(tmp_path)
    result = run_cli([*PROBE, "--project", str(project)])
    assert_one_line_error(result, 2, needle)
    assert _listing(tmp_path) == before  # nothing written: no lock, no state, no out dir


@pytest.mark.parametrize("command", CONFIG_COMMANDS, ids=lambda c: c[0])
def test_every_command_refuses_a_broken_config_the_same_way(tmp_path: Path, command: list[str]) -> None:
    project = _project(tmp_path, BAD_PYPROJECTS["unknown-key"][0])
    before = _listing(tmp_path)
    result = run_cli([*command, "--project", str(project)])
    assert_one_line_error(result, 2, "did you mean 'python'")
    assert _listing(tmp_path) == before


def test_missing_pyproject_names_the_directory(tmp_path: Path) -> None:
    result = run_cli([*PROBE, "--project", str(tmp_path / "nowhere")])
    assert_one_line_error(result, 2, "no pyproject.toml in", "nowhere")


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("KESTREL_RELEASE_BUILD_JOBS", "many", "KESTREL_RELEASE_BUILD_JOBS: expected a non-negative number"),
        ("KESTREL_RELEASE_PUBLISH_BACKOFF", "nan", "KESTREL_RELEASE_PUBLISH_BACKOFF"),
        ("KESTREL_RELEASE_PYTHONN", "3.12", "did you mean 'KESTREL_RELEASE_PYTHON'"),
        ("KESTREL_RELEASE_VERIFY_ALLOW_PTX", "maybe", "expected true or false"),
    ],
)
def test_bad_environment_override_is_one_line_exit_2(tmp_path: Path, name: str, value: str, needle: str) -> None:
    project = _project(tmp_path, GOOD_PROJECT.encode())
    result = run_cli([*PROBE, "--project", str(project)], env={name: value})
    assert_one_line_error(result, 2, needle)


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    content = (
        GOOD_PROJECT.encode()
        + b"[tool.kestrel-release]\npython = '3.12'\nverifyy = 1\n[tool.kestrel-release.build]\njobs = -1\n"
    )
    result = run_cli([*PROBE, "--project", str(_project(tmp_path, content))])
    assert_one_line_error(result, 2, "3 configuration problem(s)", "python", "verifyy", "build.jobs")


# --- property: arbitrary values under every key never crash the loader -------------------------

_KEYS = {
    None: ["python", "cuda_arch", "requires_gpu", "precompile", "out_dir", "version_files", "targets", "zzz"],
    "build": ["frontend", "plat", "exclude", "env", "jobs", "isolation"],
    "verify": ["required_sass", "allow_ptx", "forbid", "max_file_size", "project_size_budget"],
    "publish": ["retries", "backoff", "max_backoff", "parallel", "timeout"],
    "ci": ["runner_labels", "environment"],
}
_scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["1.5GiB", "infMiB", "nanKB", "-3mb", "1e400mib", "3.12", "{version}", "a/b"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def _pyprojects(draw) -> dict:
    table: dict = {}
    for section, keys in _KEYS.items():
        chosen = draw(st.lists(st.sampled_from(keys), max_size=3, unique=True))
        target = table if section is None else table.setdefault(section, {})
        for key in chosen:
            target[key] = draw(_values)
    project = draw(
        st.one_of(
            st.just({"name": "mini", "version": "1.0"}),
            st.fixed_dictionaries({"name": _values, "version": _values}),
            st.fixed_dictionaries({"name": st.just("mini"), "dynamic": _values}),
        )
    )
    return {"project": project, "tool": {"kestrel-release": table}}


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_pyprojects(), env_value=st.text(max_size=10))
def test_config_loader_never_crashes(tmp_path: Path, data: dict, env_value: str) -> None:
    (tmp_path / "pyproject.toml").write_text(tomlkit.dumps(data), encoding="utf-8")
    env = {"KESTREL_RELEASE_PUBLISH_TIMEOUT": env_value, "KESTREL_RELEASE_VERIFY_ALLOW_PTX": env_value}
    try:
        cfg = config.load(tmp_path, env=env)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    # What the loader accepts must be usable: finite non-negative numbers, strings where strings go.
    for value in (cfg.publish.timeout, cfg.publish.backoff, cfg.verify.max_file_size, cfg.build.jobs):
        assert value >= 0 and value == value and value != float("inf")
    assert isinstance(cfg.name, str) and all(isinstance(p, str) for p in cfg.python)


# --- bad versions through `version set/bump`: refused, pyproject byte-for-byte untouched ---------

VERSIONED = (
    GOOD_PROJECT + '[tool.kestrel-release]\nversion_files = [{path = "mini/__init__.py", '
    'pattern = "__version__ = \\"{version}\\""}]\n'
)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["set", "banana"], "not a valid PEP 440 version"),
        (["set", ""], "not a valid PEP 440 version"),
        (["set", "1.0\n[tool.evil]\nx = 1"], "not a valid PEP 440 version"),
        (["set", "1.0+cu124"], "local version"),
        (["set", "0.0.1"], "would go backwards"),
        (["set", "0.1.0"], "is already"),
        (["bump", "nightlyy"], "did you mean 'nightly'"),
        (["bump", "../../etc"], "unknown bump kind"),
        (["frobnicate", "1.0"], "unknown version action"),
    ],
)
def test_bad_version_is_refused_and_nothing_changes(tmp_path: Path, args: list[str], needle: str) -> None:
    project = _project(tmp_path, VERSIONED.encode())
    (project / "mini").mkdir()
    (project / "mini" / "__init__.py").write_text('__version__ = "0.1.0"\n')
    before = _listing(tmp_path)
    result = run_cli(["version", *args, "--project", str(project)])
    assert_one_line_error(result, 2, needle)
    assert _listing(tmp_path) == before


def test_version_files_that_disagree_are_refused(tmp_path: Path) -> None:
    project = _project(tmp_path, VERSIONED.encode())
    (project / "mini").mkdir()
    (project / "mini" / "__init__.py").write_text('__version__ = "0.0.9"\n')
    before = _listing(tmp_path)
    result = run_cli(["version", "bump", "patch", "--project", str(project)])
    assert_one_line_error(result, 2, "0.0.9")
    assert _listing(tmp_path) == before
