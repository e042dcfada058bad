"""The one call to Sigstore: does this attestation's signature verify, and was it made by `identity`?

sigstore-python checks the signing certificate against Sigstore's trust root (fetched and refreshed by TUF
over the network), the transparency log entry, and the certificate's OIDC identity and issuer; a PEP 740
attestation is first turned into the Sigstore bundle it was made from (pypi-attestations). Returns the
statement the signature covers, so the caller checks digests against signed bytes only.
"""

from __future__ import annotations

from typing import Any


class SignatureProblem(Exception):
    """The signature does not verify, the signer is another, or the trust root could not be read (`hint`)."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def verify_statement(kind: str, document: dict[str, Any], identity: str, issuer: str, offline: bool = False) -> bytes:
    """The signed in-toto statement of `document` ("pep740" or "bundle") once verified for `identity`.

    `offline`: check against the trust root sigstore-python ships (and last cached), without refreshing it
    over TUF: for a machine that cannot reach Sigstore; it would miss a key rotated since that release."""
    import json

    # Heavy (cryptography, pydantic, TUF): only when a signature is checked.
    import sigstore.errors
    from pypi_attestations import Attestation, AttestationError, ConversionError
    from sigstore.models import Bundle, InvalidBundle
    from sigstore.verify import Verifier
    from sigstore.verify.policy import Identity

    try:
        if kind == "pep740":
            bundle = Attestation.model_validate(document).to_bundle()
        else:
            bundle = Bundle.from_json(json.dumps(document))
    except (ConversionError, InvalidBundle, ValueError) as exc:
        raise SignatureProblem(f"it is not a valid Sigstore bundle ({exc})") from None
    try:
        verifier = Verifier.production(offline=offline)
    except (sigstore.errors.Error, OSError) as exc:
        raise SignatureProblem(
            f"Sigstore's trust root could not be read ({exc})",
            "run it where Sigstore is reachable, or pass --sigstore-offline (the trust root sigstore-python ships)",
        ) from None
    try:
        _, payload = verifier.verify_dsse(bundle, Identity(identity=identity, issuer=issuer))
    except (sigstore.errors.VerificationError, AttestationError) as exc:
        raise SignatureProblem(str(exc)) from None
    return payload
