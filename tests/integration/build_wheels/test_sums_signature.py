"""sign_key: SHA256SUMS signed with the user's OpenSSH key (`SHA256SUMS.sig`), checked back by ssh-keygen.

Each test makes a throwaway ed25519 key; what a user runs to check the release is `ssh-keygen -Y verify`
with an allowed-signers file, so the tests run exactly that.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kestrel_release.adapters import ssh_sign
from kestrel_release.errors import VerifyError
from tests.factories import make_project
from tests.helpers import assert_one_line_error, run_cli
from tests.integration.build_wheels.test_assemble import PYTHONS, machine_output

PASSPHRASE = "correct horse battery staple"
SIGNER = "release@acme.example"


def keypair(root: Path, passphrase: str = "") -> Path:
    key = root / "keys" / "release_ed25519"
    key.parent.mkdir(parents=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", SIGNER, "-f", str(key)], check=True)
    return key


def user_verifies(sums: Path, key: Path) -> subprocess.CompletedProcess:
    """What the docs tell a user to run: their allowed-signers file holds the release's public key."""
    allowed = key.parent / "allowed_signers"
    allowed.write_text(
        f"{SIGNER} {key.with_suffix('.pub').read_text().split(' ', 2)[0]} "
        f"{key.with_suffix('.pub').read_text().split(' ', 2)[1]}\n"
    )
    with open(sums, "rb") as data:
        return subprocess.run(
            ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", SIGNER, "-n", "file", "-s", f"{sums}.sig"],
            stdin=data,
            capture_output=True,
            text=True,
        )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "kernels", pythons=PYTHONS)


def assemble(project: Path, tmp_path: Path, env: dict[str, str]):
    a = machine_output(tmp_path, "a", ("3.12",))
    b = machine_output(tmp_path, "b", ("3.13",))
    return run_cli(["assemble", str(a), str(b), "--out", str(tmp_path / "release"), "--project", str(project)], env=env)


def test_assemble_signs_the_sums_and_a_user_verifies_them(project: Path, tmp_path: Path) -> None:
    key = keypair(tmp_path)
    result = assemble(project, tmp_path, {"KESTREL_RELEASE_SIGN_KEY": str(key)})
    assert result.code == 0, result.output
    sums = tmp_path / "release" / "SHA256SUMS"
    assert (tmp_path / "release" / "SHA256SUMS.sig").read_text().startswith("-----BEGIN SSH SIGNATURE-----")
    good = user_verifies(sums, key)
    assert good.returncode == 0 and f'Good "file" signature for {SIGNER}' in good.stdout + good.stderr
    sums.write_text(sums.read_text().replace("  ", "  x", 1))  # one listed name changed
    assert user_verifies(sums, key).returncode != 0
    with pytest.raises(VerifyError, match=r"SHA256SUMS\.sig does not verify SHA256SUMS"):
        ssh_sign.check(sums, Path(f"{sums}.sig"))
    assert str(key) not in result.output


def test_without_sign_key_nothing_is_signed(project: Path, tmp_path: Path) -> None:
    assert assemble(project, tmp_path, {}).code == 0
    assert (tmp_path / "release" / "SHA256SUMS").is_file() and not (tmp_path / "release" / "SHA256SUMS.sig").exists()


def test_a_key_with_a_passphrase_signs_from_the_variable_and_never_shows_it(project: Path, tmp_path: Path) -> None:
    key = keypair(tmp_path, PASSPHRASE)
    env = {"KESTREL_RELEASE_SIGN_KEY": str(key), "KESTREL_RELEASE_SIGN_PASSPHRASE": PASSPHRASE}
    result = assemble(project, tmp_path, {**env, "KESTREL_RELEASE_DEBUG": "1"})
    assert result.code == 0, result.output
    assert user_verifies(tmp_path / "release" / "SHA256SUMS", key).returncode == 0
    assert PASSPHRASE not in result.output and PASSPHRASE not in (tmp_path / "release" / "SHA256SUMS.sig").read_text()


def test_a_missing_passphrase_or_key_is_one_line_and_writes_nothing(project: Path, tmp_path: Path) -> None:
    key = keypair(tmp_path, PASSPHRASE)
    result = assemble(project, tmp_path, {"KESTREL_RELEASE_SIGN_KEY": str(key)})
    assert_one_line_error(result, 2, "ssh-keygen could not sign SHA256SUMS", "KESTREL_RELEASE_SIGN_PASSPHRASE")
    assert str(key) not in result.output and "<sign_key>" in result.output
    assert not (tmp_path / "release").exists()
    result = assemble(project, tmp_path, {"KESTREL_RELEASE_SIGN_KEY": str(tmp_path / "nope")})
    assert_one_line_error(result, 2, "sign_key names no readable file")
    assert str(tmp_path / "nope") not in result.output


def test_the_github_release_gets_the_signature_and_refuses_one_that_does_not_match(tmp_path: Path) -> None:
    import hashlib

    from kestrel_release.output_dir import manifest
    from kestrel_release.sandbox.github.emulator import GithubEmulator
    from tests.factories import build_output, make_github_project
    from tests.integration.github_support import CANARY, REPO, TAG

    key = keypair(tmp_path)
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    with GithubEmulator(repos=(REPO,), token=CANARY) as gh:
        out = build_output(project, "0.1.0", gh.add_commit(REPO))
        sig = manifest.sign_sums(out / "SHA256SUMS", str(key), project)
        assert sig == out / "SHA256SUMS.sig"
        args = ["publish", "--target", "github", "--project", str(project), "--api-url", gh.api_url]
        env = {"GH_TOKEN": CANARY, "GITHUB_TOKEN": ""}
        result = run_cli(args, env=env, timeout=300)
        assert result.code == 0, result.output
        assets = gh.assets(REPO, TAG)
        assert hashlib.sha256(assets["SHA256SUMS.sig"].data).digest() == hashlib.sha256(sig.read_bytes()).digest()
        sig.write_text(sig.read_text().replace("U1NI", "U1NJ", 1))  # a damaged signature
        mark = len(gh.requests())
        result = run_cli(args, env=env, timeout=300)
        assert_one_line_error(result, 5, "SHA256SUMS.sig does not verify SHA256SUMS")
        assert not [r for r in gh.requests()[mark:] if r["method"] != "GET"]
