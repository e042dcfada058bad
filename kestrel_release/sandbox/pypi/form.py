"""The strict sandbox's multipart/form-data parser: an upload's fields and file, as bottle's POST holds them.

Why not bottle's own: pypiserver's bottle reads the body through cgi.FieldStorage, line by line even
inside a binary wheel: 0.25 s of CPU per 8 MiB file. A release's uploads on many connections end
together, so the sandbox parsed them one after another under the GIL and the last reply came
seconds after the last byte. This one splits the spooled body on its boundary with bytes.find.
"""

from __future__ import annotations

import io
from email.parser import BytesHeaderParser
from email.utils import collapse_rfc2231_value
from typing import Any

BOTTLE_POST = "bottle.request.post"  # where bottle's BaseRequest keeps the parsed form (it parses only once)


def _boundary(content_type: str) -> bytes | None:
    msg = BytesHeaderParser().parsebytes(b"Content-Type: " + content_type.encode("latin-1", "replace") + b"\r\n\r\n")
    if msg.get_content_type() != "multipart/form-data":
        return None
    value = msg.get_param("boundary")
    return collapse_rfc2231_value(value).encode("latin-1") if value else None


def parts(body: bytes, boundary: bytes) -> list[tuple[bytes, bytes]] | None:
    """(header block, content) of each part, or None when the body does not hold a closed multipart form."""
    delim = b"--" + boundary
    pos = body.find(delim)
    out: list[tuple[bytes, bytes]] = []
    while pos != -1:
        pos += len(delim)
        if body[pos : pos + 2] == b"--":
            return out  # the close delimiter
        eol = body.find(b"\r\n", pos)  # after the delimiter: optional whitespace, then CRLF
        if eol == -1:
            return None
        if body[eol : eol + 4] == b"\r\n\r\n":
            head, start = b"", eol + 4  # a part without headers
        else:
            end = body.find(b"\r\n\r\n", eol + 2)
            if end == -1:
                return None
            head, start = body[eol + 2 : end], end + 4
        nxt = body.find(b"\r\n" + delim, start)
        if nxt == -1:
            return None
        out.append((head, body[start:nxt]))
        pos = nxt + 2
    return None


def parse(environ: dict) -> bool:
    """Put the parsed form of the spooled body where bottle looks first; False (bottle parses) when it
    is not a well-formed multipart/form-data body."""
    from pypiserver.bottle_wrapper.bottle import FileUpload, FormsDict

    boundary = _boundary(environ.get("CONTENT_TYPE", ""))
    stream = environ["wsgi.input"]
    if not boundary:
        return False
    body = stream.read()
    stream.seek(0)
    found = parts(body, boundary)
    if found is None:
        return False
    post: Any = FormsDict()
    post.recode_unicode = False  # values are already text, as bottle's cgi path leaves them
    for head, content in found:
        headers = BytesHeaderParser().parsebytes(head + b"\r\n\r\n")
        name = headers.get_param("name", header="content-disposition")
        if name is None:
            continue
        name = collapse_rfc2231_value(name)
        filename = headers.get_param("filename", header="content-disposition")
        if filename is None:
            post[name] = content.decode("utf-8", "replace")
        else:
            post[name] = FileUpload(io.BytesIO(content), name, collapse_rfc2231_value(filename), dict(headers.items()))
    environ[BOTTLE_POST] = post
    return True
