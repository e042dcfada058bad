"""`verify WHEEL --attestation FILE`: a downloaded wheel against the attestation that came with it.

Two shapes are read: a PEP 740 attestation (`<wheel>.publish.attestation`, as pypi-attestations writes it:
the in-toto statement base64 in `envelope.statement`) and a Sigstore bundle (`*.sigstore.json`, what GitHub's
artifact attestations produce: the statement base64 in `dsseEnvelope.payload`; one bundle per line when a
job appended several). The statement's subject named like the wheel must carry the wheel's sha256: that
check is ours and always runs. The signature and the signer's identity (Sigstore: certificate chain,
transparency log, OIDC identity) are checked by the sigstore library (adapters/sigstore_check.py) only when
the user names the identity they expect: without it the digest says the file is the one attested, not who
attested it, and the report says so.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kestrel_release.errors import UsageError
from kestrel_release.stages.verify.finding import Finding

RULE = "attestation"
IN_TOTO = "application/vnd.in-toto+json"
GITHUB_ISSUER = "https://token.actions.githubusercontent.com"  # GitHub Actions' OIDC issuer
_HINT = "download the wheel again from where it was published (it is not the file that was attested)"


@dataclass(frozen=True)
class Statement:
    """One signed in-toto statement: its subjects (name -> sha256) and the document it came in."""

    kind: str  # "pep740" or "bundle"
    subjects: tuple[tuple[str, str], ...]
    payload: bytes  # the statement's bytes, exactly as signed
    document: dict[str, Any]  # the whole attestation or bundle (what the signature check reads)


def load(path: Path) -> list[Statement]:
    """The statements of an attestation file; UsageError (exit 2) for a file that is neither shape."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--attestation {path}: cannot read it ({exc})", "pass the attestation file") from None
    try:
        documents = _documents(text)
    except ValueError:
        raise UsageError(
            f"--attestation {path} is not JSON",
            "pass a PEP 740 attestation (*.publish.attestation) or a Sigstore bundle (*.sigstore.json)",
        ) from None
    statements = [_statement(doc, path) for doc in documents]
    if not statements:
        raise UsageError(f"--attestation {path} is empty", "pass the attestation file that came with the wheel")
    return statements


def _documents(text: str) -> list[Any]:
    """One JSON document, or one per line (actions/attest appends a bundle per call to one file)."""
    try:
        return [json.loads(text)]
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _statement(doc: Any, path: Path) -> Statement:
    shape = "a PEP 740 attestation (*.publish.attestation) or a Sigstore bundle (*.sigstore.json)"
    if not isinstance(doc, dict):
        raise UsageError(f"--attestation {path} is not {shape}", "pass the attestation file that came with the wheel")
    try:
        if "envelope" in doc:  # PEP 740
            kind, payload = "pep740", base64.b64decode(doc["envelope"]["statement"], validate=True)
        elif "dsseEnvelope" in doc:
            envelope = doc["dsseEnvelope"]
            if envelope.get("payloadType") != IN_TOTO:
                raise UsageError(
                    f"--attestation {path}: the bundle signs a {envelope.get('payloadType')!r}, not an in-toto statement",
                    "pass the bundle of an artifact attestation",
                )
            kind, payload = "bundle", base64.b64decode(envelope["payload"], validate=True)
        else:
            raise UsageError(
                f"--attestation {path} is not {shape}", "pass the attestation file that came with the wheel"
            )
        body = json.loads(payload)
        subjects = tuple((str(s["name"]), str(s["digest"]["sha256"]).lower()) for s in body["subject"])
    except (KeyError, TypeError, ValueError, binascii.Error):
        raise UsageError(
            f"--attestation {path}: its in-toto statement does not parse (no subject with a name and a sha256)",
            "pass the attestation file unchanged, as it was downloaded",
        ) from None
    return Statement(kind, subjects, payload, doc)


def check(
    wheel: Path,
    sha256: str,
    statements: list[Statement],
    identity: str | None = None,
    issuer: str = GITHUB_ISSUER,
    offline: bool = False,
) -> list[Finding]:
    """Findings for one wheel: the subject of its name and its digest, then (with `identity`) the signature.

    `sha256` is the wheel's digest read now (never a stored verdict's)."""
    named = [(st, digest) for st in statements for name, digest in st.subjects if name == wheel.name]
    if not named:
        names = sorted({name for st in statements for name, _ in st.subjects})
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        message = f"the attestation has no subject named {wheel.name} (it attests {shown or 'nothing'})"
        return [Finding(RULE, "error", wheel.name, f"{message} — pass the attestation made for this file", _HINT)]
    matching = [st for st, digest in named if digest == sha256]
    if not matching:
        attested = named[0][1]
        message = f"sha256 {sha256} is not the attested sha256 {attested}: the file changed after it was attested"
        return [Finding(RULE, "error", wheel.name, f"{message} — {_HINT}", _HINT)]
    if not identity:
        note = "digest matches the attestation; its signature and signer were not checked (pass --identity)"
        return [Finding(RULE, "warning", wheel.name, note)]
    return _signature(wheel, matching[0], identity, issuer, offline)


def _signature(wheel: Path, statement: Statement, identity: str, issuer: str, offline: bool) -> list[Finding]:
    from kestrel_release.adapters import sigstore_check

    try:
        signed = sigstore_check.verify_statement(statement.kind, statement.document, identity, issuer, offline)
    except sigstore_check.SignatureProblem as exc:
        hint = exc.hint or "check --identity/--issuer against who published it; a signature that fails is not theirs"
        return [Finding(RULE, "error", wheel.name, f"the attestation's signature: {exc} — {hint}", hint)]
    if signed != statement.payload:  # the digest above was read from the statement the signature covers
        hint = "download the attestation again"
        return [Finding(RULE, "error", wheel.name, f"the signed statement is not the one read — {hint}", hint)]
    root = "the trust root sigstore-python ships (--sigstore-offline)" if offline else "Sigstore's current trust root"
    note = f"attested by {identity} (issuer {issuer}); signature verified against {root}"
    return [Finding(RULE, "info", wheel.name, note)]
