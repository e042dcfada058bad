"""`verify WHEEL --attestation FILE`: a downloaded wheel against its PEP 740 attestation or Sigstore bundle.

The digest check is real everywhere. The signature is checked for real on a real attestation (tests/data/
attestations: Sigstore's production instance) against the trust root sigstore-python ships
(--sigstore-offline: Sigstore's online trust root cannot be reached here); the tests of our own logic around
it replace only the one Sigstore call (adapters/sigstore_check.verify_statement), never what hashes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from kestrel_release.adapters import sigstore_check
from kestrel_release.errors import UsageError
from kestrel_release.stages.verify import attestation
from tests.factories import make_wheel
from tests.helpers import ROOT, assert_one_line_error, run_cli

IDENTITY = "https://github.com/acme/kernels/.github/workflows/kernels-release.yml@refs/tags/v0.1.0"


def statement(*subjects: tuple[str, str]) -> bytes:
    return json.dumps(
        {
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": name, "digest": {"sha256": digest}} for name, digest in subjects],
            "predicateType": "https://docs.pypi.org/attestations/publish/v1",
            "predicate": None,
        }
    ).encode()


def pep740(path: Path, body: bytes) -> Path:
    """An attestation as pypi-attestations writes it (its own model), beside the wheel."""
    from pypi_attestations import Attestation, Envelope, VerificationMaterial

    doc = Attestation(
        version=1,
        verification_material=VerificationMaterial(certificate=base64.b64encode(b"cert"), transparency_entries=[{}]),
        envelope=Envelope(statement=base64.b64encode(body), signature=base64.b64encode(b"sig")),
    )
    out = path.with_name(path.name + ".publish.attestation")
    out.write_text(doc.model_dump_json())
    return out


def bundle(path: Path, *bodies: bytes) -> Path:
    """A Sigstore bundle per line, as actions/attest appends them (the DSSE part is what is read)."""
    lines = [
        json.dumps(
            {
                "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                "verificationMaterial": {},
                "dsseEnvelope": {
                    "payload": base64.b64encode(body).decode(),
                    "payloadType": "application/vnd.in-toto+json",
                    "signatures": [{"sig": base64.b64encode(b"sig").decode()}],
                },
            }
        )
        for body in bodies
    ]
    out = path / "github-release.sigstore.json"
    out.write_text("\n".join(lines) + "\n")
    return out


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tamper(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one byte
    path.write_bytes(bytes(data))


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    return make_wheel(tmp_path / "dl")


def verify(wheel: Path, *args: str):
    return run_cli(["verify", str(wheel), *args, "--json"], cwd=wheel.parent)


def findings(result) -> list[dict]:
    return [f for w in json.loads(result.stdout)["wheels"] for f in w["findings"] if f["rule"] == "attestation"]


def test_an_attested_wheel_passes_and_says_the_signer_was_not_checked(wheel: Path) -> None:
    att = pep740(wheel, statement((wheel.name, sha(wheel))))
    result = verify(wheel, "--attestation", str(att))
    assert result.code == 0, result.output
    (found,) = findings(result)
    assert found["severity"] == "warning" and "not checked (pass --identity)" in found["message"]


def test_the_same_wheel_with_one_byte_changed_fails_naming_both_digests(wheel: Path) -> None:
    attested = sha(wheel)
    att = pep740(wheel, statement((wheel.name, attested)))
    tamper(wheel)
    result = verify(wheel, "--attestation", str(att))
    assert_one_line_error(result, 5, "verify found")
    (found,) = findings(result)
    assert found["severity"] == "error"
    assert f"sha256 {sha(wheel)} is not the attested sha256 {attested}" in found["message"]


def test_an_attestation_for_another_file_fails_naming_what_it_attests(wheel: Path) -> None:
    other = wheel.name.replace("0.1.0", "0.1.1")
    att = pep740(wheel, statement((other, sha(wheel))))  # the right bytes under another name
    result = verify(wheel, "--attestation", str(att))
    assert result.code == 5
    (found,) = findings(result)
    assert f"no subject named {wheel.name} (it attests {other})" in found["message"]


def test_a_github_bundle_with_many_subjects_checks_the_one_of_the_wheels_name(wheel: Path, tmp_path: Path) -> None:
    first = statement(("SHA256SUMS", "00" * 32), (wheel.name, sha(wheel)))
    att = bundle(tmp_path, statement(("other.whl", "11" * 32)), first)
    assert verify(wheel, "--attestation", str(att)).code == 0
    tamper(wheel)
    assert "is not the attested sha256" in findings(verify(wheel, "--attestation", str(att)))[0]["message"]


@pytest.mark.parametrize(
    ("text", "why"),
    [("not json", "is not JSON"), ('{"a": 1}', "is not a PEP 740 attestation"), ('{"envelope": {}}', "does not parse")],
)
def test_a_file_that_is_no_attestation_is_one_line_exit_2(wheel: Path, tmp_path: Path, text: str, why: str) -> None:
    att = tmp_path / "x.publish.attestation"
    att.write_text(text)
    result = run_cli(["verify", str(wheel), "--attestation", str(att)], cwd=wheel.parent)
    assert_one_line_error(result, 2, f"--attestation {att}", why)


def test_identity_without_attestation_is_a_usage_error(wheel: Path) -> None:
    result = run_cli(["verify", str(wheel), "--identity", IDENTITY], cwd=wheel.parent)
    assert_one_line_error(
        result, 2, "--identity, --issuer and --sigstore-offline check an attestation's signer", "--attestation"
    )


# The signature: only Sigstore's verification call is replaced (its trust root is online).


def _signed_by(expected: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []

    def fake(kind: str, document: dict, identity: str, issuer: str, offline: bool = False) -> bytes:
        calls.append((kind, identity, issuer))
        if identity != expected:
            raise sigstore_check.SignatureProblem(f"certificate's identity is {expected}, not {identity}")
        payload = document["envelope"]["statement"] if kind == "pep740" else document["dsseEnvelope"]["payload"]
        return base64.b64decode(payload)

    monkeypatch.setattr(sigstore_check, "verify_statement", fake)
    return calls


def test_with_identity_the_signature_is_checked_after_the_digest(wheel: Path, monkeypatch) -> None:
    calls = _signed_by(IDENTITY, monkeypatch)
    statements = attestation.load(pep740(wheel, statement((wheel.name, sha(wheel)))))
    (ok,) = attestation.check(wheel, sha(wheel), statements, IDENTITY)
    assert ok.severity == "info" and f"attested by {IDENTITY}" in ok.message
    assert calls == [("pep740", IDENTITY, attestation.GITHUB_ISSUER)]
    (bad,) = attestation.check(wheel, sha(wheel), statements, IDENTITY.replace("acme", "mallory"))
    assert bad.severity == "error" and "the attestation's signature: certificate's identity is" in bad.message
    tamper(wheel)
    (digest,) = attestation.check(wheel, sha(wheel), statements, IDENTITY)
    assert "is not the attested sha256" in digest.message and len(calls) == 2  # no signature check for a wrong file


def test_a_signature_over_another_statement_fails(wheel: Path, monkeypatch) -> None:
    monkeypatch.setattr(sigstore_check, "verify_statement", lambda *a: statement((wheel.name, "00" * 32)))
    statements = attestation.load(pep740(wheel, statement((wheel.name, sha(wheel)))))
    (found,) = attestation.check(wheel, sha(wheel), statements, IDENTITY)
    assert found.severity == "error" and "the signed statement is not the one read" in found.message


def test_the_stage_hashes_the_wheel_itself(wheel: Path, tmp_path: Path) -> None:
    """Through verify's run: the digest is read again, not taken from a stored verdict of the same path."""
    from kestrel_release.stages import verify as stage
    from kestrel_release.stages.verify import pypi as verify_pypi

    att = pep740(wheel, statement((wheel.name, sha(wheel))))
    cfg = verify_pypi.standalone_config()
    attest = stage.Attested(att)
    assert stage.run(cfg, [wheel], project=False, attest=attest).ok
    tamper(wheel)
    assert not stage.run(cfg, [wheel], project=False, attest=attest).ok
    with pytest.raises(UsageError):
        stage.run(cfg, [wheel], project=False, attest=stage.Attested(tmp_path / "missing.json"))


# A real attestation: a CircleCI pipeline's PEP 740 attestation of its wheel (pypi-attestations' test assets).
REAL = ROOT / "tests" / "data" / "attestations" / "circleci_sign_publish_example-0.0.1.dev137-py3-none-any.whl"
REAL_IDENTITY = (
    "https://circleci.com/api/v2/projects/fdd9283f-e619-46af-8f9c-851f7d3e8b2b/pipeline-definitions/"
    "8e4f8ab2-8d7c-4827-9f15-de076d6d647f"
)
REAL_ISSUER = "https://oidc.circleci.com"


@pytest.fixture
def real(tmp_path: Path) -> tuple[Path, Path]:
    wheel = tmp_path / REAL.name
    wheel.write_bytes(REAL.read_bytes())
    att = tmp_path / (REAL.name + ".publish.attestation")
    att.write_bytes(Path(str(REAL) + ".publish.attestation").read_bytes())
    return wheel, att


def real_verify(wheel: Path, att: Path, identity: str = REAL_IDENTITY):
    args = ["--attestation", str(att), "--identity", identity, "--issuer", REAL_ISSUER, "--sigstore-offline"]
    return verify(wheel, *args)


def test_a_real_attestation_verifies_its_signature_and_signer_with_no_mock(real: tuple[Path, Path]) -> None:
    result = real_verify(*real)
    assert result.code == 0, result.output
    (found,) = findings(result)
    assert found["severity"] == "info" and f"attested by {REAL_IDENTITY}" in found["message"]
    assert "signature verified against the trust root sigstore-python ships" in found["message"]


def test_a_real_attestation_refuses_another_signer(real: tuple[Path, Path]) -> None:
    result = real_verify(*real, identity=REAL_IDENTITY.replace("fdd9283f", "00000000"))
    assert result.code == 5
    (found,) = findings(result)
    assert found["severity"] == "error" and "the attestation's signature:" in found["message"]


def test_the_real_wheel_with_one_byte_changed_fails(real: tuple[Path, Path]) -> None:
    wheel, att = real
    tamper(wheel)
    result = real_verify(wheel, att)
    assert result.code == 5
    assert any("is not the attested sha256" in f["message"] for f in findings(result))


def test_a_statement_edited_after_signing_fails_the_signature(real: tuple[Path, Path]) -> None:
    """The subject renamed in the statement (a wheel of another name passes the name check) breaks the
    signature: the signature covers the statement the digest was read from."""
    wheel, att = real
    doc = json.loads(att.read_text())
    body = base64.b64decode(doc["envelope"]["statement"]).replace(b"dev137", b"dev138")
    doc["envelope"]["statement"] = base64.b64encode(body).decode()
    renamed = wheel.with_name(wheel.name.replace("dev137", "dev138"))
    wheel.rename(renamed)
    att.write_text(json.dumps(doc))
    result = real_verify(renamed, att)
    assert result.code == 5
    (found,) = findings(result)
    assert "the attestation's signature:" in found["message"]
