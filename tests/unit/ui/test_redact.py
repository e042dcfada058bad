"""redact: a credential is masked in every shape it travels in, registered or recognised by where it stands."""

from __future__ import annotations

import base64

import pytest

from kestrel_release.ui import redact

PASSWORD = "s3cr3t-Pa55word-of-any-shape"


@pytest.fixture(autouse=True)
def _clean():
    redact.clear()
    yield
    redact.clear()


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_register_masks_the_basic_auth_encoding_and_the_percent_encoded_form() -> None:
    redact.register("p@ss:w/rd 42", user="alice")
    for shown in (
        b64("alice:p@ss:w/rd 42"),
        b64("__token__:p@ss:w/rd 42"),
        "p%40ss%3Aw%2Frd%2042",
        "p%40ss%3Aw%2Frd+42",
    ):
        assert redact.mask(f"HTTP 403: Forbidden {shown} (see logs)") == "HTTP 403: Forbidden **** (see logs)"


def test_a_reason_phrase_echoing_the_authorization_header_is_masked() -> None:
    redact.register(PASSWORD, user="__token__")
    said = f"Forbidden: Basic {b64('__token__:' + PASSWORD)}"
    assert redact.mask(said) == "Forbidden: Basic ****"
    redact.clear()  # never registered: the header's shape alone
    assert redact.mask(said) == "Forbidden: Basic ****"
    assert redact.mask("Authorization: token abcdefgh1234") == "Authorization: token ****"
    assert redact.mask("got Bearer eyJhbGciOi.J9abc") == "got Bearer ****"


@pytest.mark.parametrize(
    "text",
    [
        "Basic authentication failed",
        "ssh://git@github.com/m87-labs/kestrel.git",
        "git@github.com:m87-labs/k.git",
        "https://github.com/m87-labs/kestrel",
        "http://127.0.0.1:8080/simple/",
        "user@example.com",
    ],
)
def test_ordinary_text_is_left_alone(text) -> None:
    assert redact.mask(text) == text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://x-access-token:tok3n0fAnyShape@github.com/o/r.git", "https://x-access-token:****@github.com/o/r.git"),
        ("https://__token__:pypi-xyz12345@upload.example/legacy/", "https://__token__:****@upload.example/legacy/"),
        ("https://Zq8rT0kenOfAnyShape42@github.com/o/r", "https://****@github.com/o/r"),
        ("git+https://u:pw@host/x", "git+https://u:****@host/x"),
    ],
)
def test_url_userinfo_is_masked_unregistered(url, shown) -> None:
    assert redact.mask(f"remote: {url}") == f"remote: {shown}"


def test_register_urls_masks_the_password_wherever_it_appears_later() -> None:
    redact.register_urls("https://x-access-token:tok3n0fAnyShape@github.com/o/r.git")
    assert redact.mask("token=tok3n0fAnyShape") == "token=****"
    assert redact.mask(b64("x-access-token:tok3n0fAnyShape")) == "****"


def _git_repo(root, config: str):
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text(config)
    return root


def test_startup_registers_git_remotes_and_actions_extraheader(tmp_path) -> None:
    header = b64("x-access-token:ghs-like-but-not-ghs-123")
    repo = _git_repo(
        tmp_path / "repo",
        (
            '[remote "origin"]\n\turl = https://x-access-token:RemoteT0ken-any-shape@github.com/o/r.git\n'
            '[remote "mirror"]\n\tpushurl = https://TokenAsTheUserName0123@gitlab.example/o/r.git\n'
            f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {header}\n'
        ),
    )
    (repo / "sub").mkdir()
    redact.register_startup(environ={}, argv=["kestrel-release"], home=str(tmp_path / "home"), cwd=str(repo / "sub"))
    assert (
        redact.mask("a RemoteT0ken-any-shape b TokenAsTheUserName0123 c ghs-like-but-not-ghs-123 d")
        == "a **** b **** c **** d"
    )
    assert redact.mask(header) == "****"


def test_startup_reads_the_project_named_on_the_command_line_and_a_worktree(tmp_path) -> None:
    main = _git_repo(tmp_path / "main", '[remote "origin"]\n\turl = https://u:CommonDirSecret99@h/o/r\n')
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    redact.register_startup(
        environ={},
        argv=["kestrel-release", "build", "--project", str(wt)],
        home=str(tmp_path / "home"),
        cwd=str(tmp_path),
    )
    assert redact.mask("CommonDirSecret99") == "****"


def test_startup_registers_pypirc_and_home_git_credentials(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".pypirc").write_text(
        "[distutils]\nindex-servers = corp\n[corp]\nrepository = https://ci:UrlPassw0rd-x@corp.example/legacy/\n"
        f"username = deploy\npassword = {PASSWORD}\n"
    )
    (home / ".git-credentials").write_text("https://bob:CredStoreSecret7@git.example\n")
    redact.register_startup(environ={}, argv=["kestrel-release"], home=str(home), cwd=str(tmp_path))
    for secret in ("UrlPassw0rd-x", PASSWORD, b64("deploy:" + PASSWORD), "CredStoreSecret7"):
        assert redact.mask(f"[{secret}]") == "[****]"


def test_startup_masks_index_urls_in_any_variable_but_leaves_them_to_build_children(tmp_path) -> None:
    env = {
        "UV_INDEX_URL": "https://reader:IndexReadS3cret@pkgs.example/simple/",
        "TWINE_USERNAME": "deploy",
        "TWINE_PASSWORD": PASSWORD,
    }
    redact.register_startup(environ=env, argv=["kestrel-release"], home=str(tmp_path), cwd=str(tmp_path))
    assert redact.mask("IndexReadS3cret") == "****"
    assert not redact.is_credential_var("UV_INDEX_URL", env["UV_INDEX_URL"])  # a build may install from it
    assert redact.mask(f"Basic {b64('deploy:' + PASSWORD)}") == "Basic ****"
    assert redact.is_credential_var("SOME_COPY", b64("deploy:" + PASSWORD))
