"""publish --target github succeeds only when GitHub holds exactly the verified bytes, and the token goes only
to the API's origin: uploads that are not what their answer says, a file changed after verify, answers that
point elsewhere, and tokens that cannot be sent, through the real CLI against the emulator's knobs.

Each failure is exit 6 with one line, leaves no public release with missing or other bytes, and a re-run once
the fault is gone completes the release.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from kestrel_release.sandbox.github.emulator import GithubEmulator
from tests.factories import build_output, make_dist, make_github_project, make_project
from tests.helpers import assert_one_line_error, run_in_process
from tests.integration.github_support import CANARY, REPO, TAG

SUMS = "SHA256SUMS"


@pytest.fixture()
def gh():
    with GithubEmulator(repos=(REPO,), token=CANARY) as emulator:
        yield emulator


@pytest.fixture()
def trap():
    """Another origin (another port of this host): whatever reaches it is logged, nothing is served."""
    with GithubEmulator(repos=(REPO,), token="ghp_" + "T" * 36) as other:
        yield other


def publish(gh, project, *extra, env=None):
    args = ["publish", "--target", "github", "--project", str(project), "--api-url", gh.api_url, *extra]
    return run_in_process(args, env={"GH_TOKEN": CANARY, "GITHUB_TOKEN": "", **(env or {})})


def published(gh, tag=TAG) -> dict[str, str]:
    return {n: hashlib.sha256(a.data).hexdigest() for n, a in gh.assets(REPO, tag).items()}


def local(out) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.iterdir())
        if p.name.endswith(".whl") or p.name in (SUMS, "release-manifest.json")
    }


def public(gh, tag=TAG) -> bool:
    try:
        return not gh.release(REPO, tag).draft
    except KeyError:
        return False


def assert_complete(gh, out, tag=TAG) -> None:
    """The public release holds exactly the local files, and its SHA256SUMS lists the wheels it holds."""
    assert public(gh, tag)
    assert published(gh, tag) == local(out)
    held = gh.assets(REPO, tag)
    listed = dict(reversed(line.split("  ")) for line in held[SUMS].data.decode().splitlines())
    assert listed == {n: hashlib.sha256(a.data).hexdigest() for n, a in held.items() if n.endswith(".whl")}


def flip_last_byte(path) -> bytes:
    data = path.read_bytes()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    return data


def test_a_wheel_changed_between_verify_and_upload_never_lands_as_the_verified_one(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    out = build_output(project, "0.1.0", gh.add_commit(REPO))
    wheel = sorted(out.glob("*.whl"))[0]
    verified = wheel.read_bytes()
    # Another process rewrites the wheel (same size) once it was verified and hashed: while the release is created.
    gh.before_request("POST", "/releases", lambda: flip_last_byte(wheel))
    raced = publish(gh, project)
    if raced.code == 0:  # a publisher that sends an immutable copy of the verified bytes: those landed
        assert hashlib.sha256(gh.assets(REPO, TAG)[wheel.name].data).digest() == hashlib.sha256(verified).digest()
    else:
        assert_one_line_error(raced, 6, wheel.name, "changed after it was verified")
        assert not public(gh)
        assert wheel.name not in gh.assets(REPO, TAG)  # the other bytes were removed from the draft
    wheel.write_bytes(verified)
    again = publish(gh, project)
    assert again.code == 0, again.output
    assert_complete(gh, out)


@pytest.mark.parametrize("fault", ["discard", "delay", "rewrite"])
def test_an_upload_github_does_not_hold_as_sent_never_makes_the_release_public(gh, tmp_path, fault) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    out = build_output(project, "0.1.0", gh.add_commit(REPO))
    {
        "discard": lambda: gh.discard_next_upload(),  # acknowledged, never stored
        "delay": lambda: gh.delay_next_upload(600),  # acknowledged, stored long after any read-back
        "rewrite": lambda: gh.rewrite_next_upload(),  # stored with other bytes, a truthful digest
    }[fault]()
    failed = publish(gh, project, "--json")
    first = sorted(out.glob("*.whl"))[0].name
    needles = {"rewrite": [first, "GitHub holds other bytes", "were sent"]}.get(
        fault, [first, "is missing", "not made public"]
    )
    assert_one_line_error(failed, 6, *needles)
    assert json.loads(failed.stdout)["error"]["exit_code"] == 6
    assert not public(gh)  # still a draft: nobody saw a release without that wheel
    gh.clear_faults()
    again = publish(gh, project)
    assert again.code == 0, again.output
    assert_complete(gh, out)


def test_the_rolling_nightly_keeps_its_assets_until_every_new_one_is_confirmed(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    build_output(project, "0.1.0", gh.add_commit(REPO))
    assert publish(gh, project).code == 0
    before = published(gh)
    out = build_output(project, "0.2.0", gh.add_commit(REPO))
    gh.discard_next_upload()
    failed = publish(gh, project)
    assert_one_line_error(failed, 6, "is missing", "not made public")
    assert {n: s for n, s in published(gh).items() if not n.startswith("kestrel-tmp-")} == before  # no swap
    gh.clear_faults()
    again = publish(gh, project)
    assert again.code == 0, again.output
    assert_complete(gh, out)


@pytest.mark.parametrize("where", ["another port", "another host"])
def test_an_upload_url_on_another_origin_gets_no_token(gh, trap, tmp_path, where) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    out = build_output(project, "0.1.0", gh.add_commit(REPO))
    origin = trap.url if where == "another port" else gh.url.replace("127.0.0.1", "127.0.0.2")
    gh.inject("foreign_upload_url", origin=origin, count=1000)
    failed = publish(gh, project)
    assert_one_line_error(failed, 6, origin, "another origin")
    assert trap.requests() == []
    assert not any("/api/uploads/" in r["path"] for r in gh.requests())
    assert not gh.state.repo(REPO).releases  # the unusable draft was removed
    gh.clear_faults()
    again = publish(gh, project)
    assert again.code == 0, again.output
    assert_complete(gh, out)


@pytest.mark.parametrize("status", [302, 307])
def test_release_reads_follow_a_redirect_on_their_origin_only(gh, trap, tmp_path, status) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    out = build_output(project, "0.1.0", gh.add_commit(REPO))
    gh.inject("redirect_get", status=status, count=1000)  # to /api/v3/_moved/... on the same origin
    followed = publish(gh, project)
    assert followed.code == 0, followed.output
    assert_complete(gh, out)
    assert any("/_moved/" in r["path"] for r in gh.requests())

    out = build_output(project, "0.2.0", gh.add_commit(REPO))
    gh.clear_faults()
    gh.inject("redirect_get", status=status, origin=trap.url, count=1000)
    refused = publish(gh, project)
    assert_one_line_error(refused, 6, "redirected", trap.url, "not followed")
    assert trap.requests() == []
    gh.clear_faults()
    again = publish(gh, project)
    assert again.code == 0, again.output
    assert_complete(gh, out)


PLAIN = "Kestrel0Plain0Token0" + "x7" * 10  # no known token shape: only registration can mask it
TOKENS = {
    "newline": PLAIN + "\n" + "S3cond" * 6,  # a two-line token file
    "CR": PLAIN[:20] + "\r" + PLAIN[20:],
    "non-Latin-1": PLAIN[:20] + "\u20ac" + PLAIN[20:],
    "non-ASCII": PLAIN[:20] + "\u00e9" + PLAIN[20:],
}


@pytest.mark.parametrize("mode", ["plain", "-v", "--json", "release preflight"])
@pytest.mark.parametrize("case", sorted(TOKENS))
def test_a_token_that_cannot_be_sent_is_one_line_and_never_printed(gh, tmp_path, case, mode) -> None:
    token = TOKENS[case]
    if mode == "release preflight":
        project = make_project(tmp_path / "kernels", pythons=("3.12",))
        make_dist(project / "dist-all", pythons=("3.12",))
        home = tmp_path / "home"
        home.mkdir()
        args = ["release", "--project", str(project), "--from", str(project / "dist-all"), "--targets", "github"]
        env = {
            "HOME": str(home),
            "GH_TOKEN": token,
            "GITHUB_TOKEN": "",
            "KESTREL_RELEASE_GITHUB_API_URL": gh.api_url,
            "KESTREL_RELEASE_GITHUB_REPO": REPO,
        }
        result = run_in_process([*args, "--yes"], env=env)
        code = 3  # release's preflight: every target's credentials before anything changes
    else:
        project = make_github_project(tmp_path / "kernels", "0.1.0")
        build_output(project, "0.1.0", gh.add_commit(REPO))
        flags = {"plain": [], "-v": [], "--json": ["--json"]}[mode]
        args = ["publish", "--target", "github", "--project", str(project), "--api-url", gh.api_url, *flags]
        result = run_in_process((["-v"] if mode == "-v" else []) + args, env={"GH_TOKEN": token, "GITHUB_TOKEN": ""})
        code = 6
    assert_one_line_error(result, code, "GH_TOKEN", "not usable")
    for piece in [PLAIN[:20], PLAIN[20:], "S3cond" * 6]:
        assert piece not in result.stdout + result.stderr, piece
    if mode == "--json":
        assert json.loads(result.stdout)["error"]["exit_code"] == 6
    assert gh.requests() == []  # nothing was sent anywhere with it
