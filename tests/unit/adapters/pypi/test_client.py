"""adapters/pypi/client.py: index URLs, simple-page parsing, error translation, retries, credentials."""

from __future__ import annotations

import json

import pytest

from kestrel_release.adapters.pypi import client as pypi
from kestrel_release.adapters.pypi import config as pypi_config
from kestrel_release.errors import PublishError, UsageError
from kestrel_release.targets.pypi import BUILTIN as DEFAULT_TARGETS
from kestrel_release.ui import redact

SHA = "a" * 64
INDEX = pypi.Index("sandbox", "http://127.0.0.1:1/", "http://127.0.0.1:1/simple/")


@pytest.mark.parametrize(
    "upload, simple",
    [
        ("https://upload.pypi.org/legacy/", "https://pypi.org/simple/"),
        ("https://test.pypi.org/legacy/", "https://test.pypi.org/simple/"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/simple/"),
        ("https://art.example/api/pypi/kernels", "https://art.example/api/pypi/kernels/simple/"),
        ("https://idx.example/legacy/", "https://idx.example/simple/"),
    ],
)
def test_simple_url_is_derived_from_the_upload_url(upload, simple):
    assert pypi.simple_url_for(upload) == simple


def test_parse_simple_reads_pep691_json():
    body = json.dumps({"files": [{"filename": "k-1.whl", "url": "../../f/k-1.whl", "hashes": {"sha256": SHA}}]})
    files = pypi.parse_simple(body.encode(), "application/vnd.pypi.simple.v1+json", "https://i.example/simple/k/")
    assert files == {"k-1.whl": {"sha256": SHA, "url": "https://i.example/f/k-1.whl"}}


def test_parse_simple_reads_pep503_html_with_and_without_hashes():
    html = (
        f'<html><body><a href="/packages/k-1.whl#sha256={SHA}">k-1.whl</a>\n'
        '<a href="/packages/k-2.whl">k-2.whl</a></body></html>'
    )
    files = pypi.parse_simple(html.encode(), "text/html", "http://h:1/simple/k/")
    assert files == {
        "k-1.whl": {"sha256": SHA, "url": "http://h:1/packages/k-1.whl"},
        "k-2.whl": {"sha256": "", "url": "http://h:1/packages/k-2.whl"},
    }


@pytest.mark.parametrize(
    "status, reason, text, kind, needle",
    [
        (401, "Unauthorized", "", PublishError, "rejected the credentials"),
        (403, "Invalid or non-existent authentication information.", "", PublishError, "rejected the credentials"),
        (400, "File already exists ('k.whl', with blake2_256 hash 'x').", "", pypi.FileExists, "already exists"),
        (409, "Conflict", "Package 'k.whl' already exists!", pypi.FileExists, "already exists"),
        (400, "File too large. Limit for project 'k' is 100 MB.", "", PublishError, "larger than"),
        (400, "Binary wheel 'k.whl' has an unsupported platform tag 'linux_x86_64'.", "", PublishError, "linux_x86_64"),
    ],
)
def test_every_refusal_becomes_one_line_that_says_what_to_do(status, reason, text, kind, needle):
    exc = pypi.explain(status, reason, text, "k.whl", INDEX)
    assert type(exc) is kind
    assert needle in str(exc) and "\n" not in str(exc) and " — " in str(exc)


PYPI = pypi.Index("pypi", "https://upload.pypi.org/legacy/", "https://pypi.org/simple/")
INVALID = "Invalid or non-existent authentication information. See https://pypi.org/help/#invalid-auth"


@pytest.mark.parametrize(
    "user, reason, says, hint, not_hint",
    [
        ("__token__", INVALID, "rejected the API token", "wrong, revoked or expired", "scoped"),
        ("alice", INVALID, "accepts API tokens only", "username __token__", "scoped"),
        (
            "alice",
            "Username/Password authentication is no longer supported. Migrate to API Tokens",
            "tokens only",
            "__token__",
            "scoped",
        ),
        (
            "__token__",
            "Invalid API Token: project-scoped token is not valid for project: 'k'",
            "may not upload",
            "scoped to this project",
            "revoked",
        ),
        ("alice", "The user 'alice' isn't allowed to upload to project 'k'.", "may not upload", "maintainer", "token"),
    ],
)
def test_an_auth_refusal_hint_matches_its_cause_and_the_kind_of_credentials(user, reason, says, hint, not_hint):
    exc = pypi.explain(403, reason, "", "k.whl", PYPI, user)
    assert says in exc.message and hint in exc.hint and not_hint not in exc.hint, str(exc)


def test_size_refusal_says_how_to_ask_for_a_larger_limit():
    exc = pypi.explain(400, "File too large. Limit for project 'k' is 100 MB.", "", "k.whl", INDEX)
    assert "pypi/support" in str(exc) and "verify.max_file_size" in str(exc)


def test_backoff_grows_exponentially_within_bounds_with_jitter():
    policy = pypi.RetryPolicy(retries=5, backoff=1.0, max_backoff=8.0)
    for attempt, ceiling in enumerate([1, 2, 4, 8, 8, 8]):
        delays = {policy.delay(attempt) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered
    assert policy.delay(0, retry_after=500) == policy.rate_limit_wait_cap
    assert policy.delay(0, retry_after=3) == 3


def test_with_retries_retries_transient_failures_then_succeeds(monkeypatch):
    slept = []
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise pypi.Transient("HTTP 503")
        return "done"

    assert (
        pypi.with_retries(flaky, pypi.RetryPolicy(retries=5, backoff=0.1, max_backoff=1, sleep=slept.append), "x")
        == "done"
    )
    assert len(calls) == 3 and len(slept) == 2


def test_with_retries_gives_up_after_the_configured_retries(monkeypatch):
    calls = []

    def down():
        calls.append(1)
        raise pypi.Transient("connection failed (ConnectionError)")

    with pytest.raises(PublishError, match="gave up after 3 attempts"):
        pypi.with_retries(down, pypi.RetryPolicy(retries=2, sleep=lambda s: None), "uploading k.whl")
    assert len(calls) == 3


def test_non_transient_errors_are_not_retried(monkeypatch):
    calls = []

    def refused():
        calls.append(1)
        raise PublishError("refused")

    with pytest.raises(PublishError):
        pypi.with_retries(refused, pypi.RetryPolicy(retries=5), "x")
    assert calls == [1]


def test_unknown_target_is_a_usage_error_with_a_suggestion(tmp_path):
    with pytest.raises(UsageError, match="did you mean 'testpypi'"):
        pypi_config.resolve_index("testpyp", DEFAULT_TARGETS, None, None, str(tmp_path / "none"))


def test_non_http_repository_url_is_refused(tmp_path):
    with pytest.raises(UsageError, match="not an http"):
        pypi_config.resolve_index("x", DEFAULT_TARGETS, "ftp://h/", None, str(tmp_path / "none"))


def test_pypirc_repository_and_credentials_are_used(tmp_path):
    rc = tmp_path / ".pypirc"
    rc.write_text(
        "[distutils]\nindex-servers = internal\n[internal]\nrepository = https://devpi.example/u/i/\n"
        "username = alice\npassword = s3cret-from-pypirc\n"
    )
    index = pypi_config.resolve_index("internal", DEFAULT_TARGETS, None, "https://devpi.example/u/i/+simple/", str(rc))
    assert (index.upload_url, index.simple_url) == ("https://devpi.example/u/i/", "https://devpi.example/u/i/+simple/")
    assert pypi_config.resolve_credentials(index, env={}) == ("alice", "s3cret-from-pypirc")
    assert redact.mask("x s3cret-from-pypirc y") == "x **** y"


def test_malformed_pypirc_is_one_line_without_its_content(tmp_path):
    rc = tmp_path / ".pypirc"
    rc.write_text("[internal\npassword = leak-me-not\n")
    with pytest.raises(UsageError) as info:
        pypi_config.resolve_index("internal", DEFAULT_TARGETS, None, None, str(rc))
    assert "malformed" in str(info.value) and "leak-me-not" not in str(info.value)


def test_token_env_implies_the_token_username_and_is_masked():
    token = "pypi-AgEIcHlwaS5vcmc" + "x" * 40
    assert pypi_config.resolve_credentials(INDEX, token_env="MY_TOKEN", env={"MY_TOKEN": token}) == ("__token__", token)
    assert token not in redact.mask(f"password={token}")


def test_token_env_naming_an_unset_variable_is_a_usage_error():
    with pytest.raises(UsageError, match="MY_TOKEN"):
        pypi_config.resolve_credentials(INDEX, token_env="MY_TOKEN", env={})


def test_twine_environment_variables_are_read(monkeypatch):
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    assert pypi_config.resolve_credentials(INDEX, env={"TWINE_USERNAME": "bob", "TWINE_PASSWORD": "hunter22"}) == (
        "bob",
        "hunter22",
    )


def test_missing_credentials_fail_without_prompting(monkeypatch):
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    with pytest.raises(PublishError, match="no credentials for sandbox"):
        pypi_config.resolve_credentials(INDEX, env={})
