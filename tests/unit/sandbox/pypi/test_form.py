"""The strict sandbox parses upload forms itself (bottle's cgi parser read wheels line by line): the same
fields and file bytes bottle would hand pypiserver, and bottle's own parser for anything not a closed form."""

from __future__ import annotations

import io
import os

import pytest
from requests_toolbelt import MultipartEncoder

from kestrel_release.sandbox.pypi import form


def _environ(body: bytes, content_type: str) -> dict:
    return {
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }


def _bottle(environ: dict) -> dict:
    """What bottle's cgi path makes of the same body: {name: str or (filename, bytes)}."""
    from pypiserver.bottle_wrapper.bottle import BaseRequest

    env = {**environ, "wsgi.input": io.BytesIO(environ["wsgi.input"].getvalue())}
    env.pop(form.BOTTLE_POST, None)
    return _flat(BaseRequest(env).POST)


def _flat(post) -> dict:
    out = {}
    for name in post:
        value = post[name]
        out[name] = value if isinstance(value, str) else (value.raw_filename, value.file.read())
    return out


@pytest.mark.parametrize("size", [0, 1, 8191, 2 * 2**20 + 3])
def test_an_upload_form_parses_as_bottle_parses_it(size):
    payload = os.urandom(size) + b"\r\n--not-the-boundary\r\n\r\n" + b"\n" * 3
    fields = [
        (":action", "file_upload"),
        ("protocol_version", "1"),
        ("name", "kestrel-kernels"),
        ("summary", "Kernels — für alle GPUs"),  # UTF-8 text
        ("description", ""),
        ("content", ("kestrel_kernels-0.1.0-py3-none-any.whl", io.BytesIO(payload), "application/octet-stream")),
    ]
    encoder = MultipartEncoder(fields)
    environ = _environ(encoder.to_string(), encoder.content_type)
    want = _bottle(environ)
    assert form.parse(environ)
    got = _flat(environ[form.BOTTLE_POST])
    assert got == want and got["content"] == ("kestrel_kernels-0.1.0-py3-none-any.whl", payload)
    assert environ["wsgi.input"].tell() == 0  # pypiserver may still read the body


@pytest.mark.parametrize(
    "body",
    [
        b'--B\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n',  # never closed
        b"no boundary at all",
        b'--B\r\nContent-Disposition: form-data; name="a"',  # headers cut
    ],
)
def test_a_body_that_is_no_closed_form_is_left_to_bottle(body):
    environ = _environ(body, "multipart/form-data; boundary=B")
    assert not form.parse(environ) and form.BOTTLE_POST not in environ


def test_other_content_types_are_left_to_bottle():
    environ = _environ(b"a=1&b=2", "application/x-www-form-urlencoded")
    assert not form.parse(environ) and form.BOTTLE_POST not in environ


def test_a_quoted_boundary_a_preamble_and_a_part_without_headers():
    body = (
        b"preamble\r\n--a b\r\n\r\nignored\r\n--a b\r\n"
        b'Content-Disposition: form-data; name="f"; filename="w.whl"\r\n\r\nBYTES\r\n--a b--\r\nepilogue'
    )
    environ = _environ(body, 'multipart/form-data; boundary="a b"')
    assert form.parse(environ)
    assert _flat(environ[form.BOTTLE_POST]) == {"f": ("w.whl", b"BYTES")}
