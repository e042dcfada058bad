"""Signing a file with an OpenSSH key (`ssh-keygen -Y sign -n file`) and checking the signature back.

Why OpenSSH signatures: every machine that has git has ssh-keygen; users already hold ed25519 keys, and
`ssh-keygen -Y verify -f allowed_signers` checks them with no new tool (git signs commits the same way).
The key's passphrase, when it has one, reaches ssh-keygen alone: through an askpass script that reads
PASSPHRASE_VAR from the child's environment (never argv, never a file), and it is masked everywhere.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from kestrel_release.errors import PreflightError, UsageError, VerifyError
from kestrel_release.files import fsutil
from kestrel_release.process import proc
from kestrel_release.ui import redact

NAMESPACE = "file"  # ssh-keygen's namespace for signatures of files (what `-Y verify -n file` expects)
PASSPHRASE_VAR = "KESTREL_RELEASE_SIGN_PASSPHRASE"
SUFFIX = ".sig"
_ASKPASS = "#!/bin/sh\nprintf '%s\\n' \"$KESTREL_RELEASE_SIGN_PASSPHRASE\"\n"  # the value stays in the env


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise PreflightError(
            "sign_key is set but ssh-keygen is not on PATH", "install OpenSSH (openssh-client), or unset sign_key"
        )
    return found


def sign(path: Path, key: Path) -> Path:
    """Write `<path>.sig` (atomically, beside `path`) signed with `key`, check it back, return its path."""
    exe = _ssh_keygen()
    if not key.is_file():
        raise UsageError("sign_key names no readable file", "set sign_key to the path of an OpenSSH private key")
    passphrase = redact.register(os.environ.get(PASSPHRASE_VAR, ""))
    redact.register_env_name(PASSPHRASE_VAR)  # no other child inherits it
    with tempfile.TemporaryDirectory(prefix="kestrel-sign-") as tmp:
        work = Path(tmp)
        askpass = work / "askpass"
        askpass.write_text(_ASKPASS, encoding="utf-8")
        askpass.chmod(0o700)
        copy = work / path.name
        shutil.copyfile(path, copy)  # what is signed is these bytes, whatever happens to `path` meanwhile
        env = {"SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": os.environ.get("DISPLAY", ":0")}
        env[PASSPHRASE_VAR] = passphrase or ""
        result = proc.run([exe, "-Y", "sign", "-f", key, "-n", NAMESPACE, copy], env=env, check=False)
        if result.returncode != 0:
            raise UsageError(
                f"ssh-keygen could not sign {path.name} with the key sign_key names: "
                + _last_line(result.output).replace(str(key), "<sign_key>"),  # its path is not printed
                f"check that it is an OpenSSH private key; a key with a passphrase needs {PASSPHRASE_VAR} set",
            )
        signature = Path(str(copy) + SUFFIX).read_text(encoding="ascii")
    out = Path(str(path) + SUFFIX)
    fsutil.atomic_write_text(out, signature)
    check(path, out)
    return out


def check(path: Path, signature: Path, allowed_signers: Path | None = None, identity: str = "") -> str:
    """ssh-keygen's verdict on `signature` over `path`: with `allowed_signers` (and the signer's `identity`
    in it) `-Y verify`, else `-Y check-novalidate` (a valid signature by whichever key). Raises on failure."""
    exe = _ssh_keygen()
    argv: list[str | os.PathLike]
    if allowed_signers is not None:
        argv = [exe, "-Y", "verify", "-f", allowed_signers, "-I", identity, "-n", NAMESPACE, "-s", signature]
    else:
        argv = [exe, "-Y", "check-novalidate", "-n", NAMESPACE, "-s", signature]
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror})", "check the path") from None
    result = proc.run(argv, input=data, check=False)
    if result.returncode != 0:
        raise VerifyError(
            f"{signature.name} does not verify {path.name}: {_last_line(result.output)}",
            "sign it again (build or assemble with sign_key set), or check the allowed signers",
        )
    return _last_line(result.output)


def _last_line(output: str) -> str:
    lines = [line.strip() for line in redact.mask(output).splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
