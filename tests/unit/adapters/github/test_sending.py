"""adapters/github/sending: an upload is judged by the bytes it actually sends."""

from __future__ import annotations


def test_the_upload_body_hashes_exactly_the_bytes_it_hands_out(tmp_path) -> None:
    import hashlib
    import io

    from kestrel_release.adapters.github.sending import SendingReader

    sent: list[int] = []
    reader = SendingReader(io.BytesIO(b"0123456789tail"), 10, sent.append)  # the file grew after its size was read
    body = b"".join(iter(lambda: reader.read(4), b""))
    assert (body, len(reader), reader.sent, sum(sent)) == (b"0123456789", 10, 10, 10)
    assert reader.sha256() == hashlib.sha256(b"0123456789").hexdigest()
