"""safejson: outside JSON is bounded in size and depth, and every refusal is one ValueError that says why."""

from __future__ import annotations

import pytest

from kestrel_release.files import safejson


def test_plain_documents_pass() -> None:
    assert safejson.loads(b'{"a": [1, {"b": []}]}', "x", max_bytes=100) == {"a": [1, {"b": []}]}


@pytest.mark.parametrize("depth", [65, 1_000, 200_000])
def test_deep_nesting_is_refused_whatever_the_depth(depth) -> None:
    data = b"[" * depth + b"]" * depth
    with pytest.raises(safejson.Unusable, match="the page is nested deeper than 64 levels"):
        safejson.loads(data, "the page", max_bytes=len(data))


def test_nesting_up_to_the_bound_passes() -> None:
    assert safejson.depth(safejson.loads(b"[" * 64 + b"]" * 64, "x", max_bytes=1000)) == 64


def test_size_is_checked_before_parsing() -> None:
    with pytest.raises(safejson.Unusable, match="x is larger than 10 bytes"):
        safejson.loads(b"[" + b"1," * 10 + b"1]", "x", max_bytes=10)


@pytest.mark.parametrize("data", [b"{", b"<html>", b"\xff\xfe\x00", b""])
def test_not_json_is_the_same_error(data) -> None:
    with pytest.raises(safejson.Unusable, match="x is not valid JSON"):
        safejson.loads(data, "x", max_bytes=100)


def test_load_file_reads_no_more_than_the_bound(tmp_path) -> None:
    path = tmp_path / "m.json"
    path.write_bytes(b" " * 5000 + b"{}")
    with pytest.raises(safejson.Unusable, match="larger than 4096 bytes"):
        safejson.load_file(path, "m", max_bytes=4096)
    assert safejson.load_file(path, "m", max_bytes=6000) == {}


class _Streamed:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks, self.closed = chunks, False

    def iter_content(self, size: int):
        yield from self.chunks

    def close(self) -> None:
        self.closed = True


def test_read_body_stops_at_the_bound_and_closes() -> None:
    resp = _Streamed([b"a" * 60, b"b" * 60, b"never read"])
    with pytest.raises(safejson.Unusable, match="body is larger than 100 bytes"):
        safejson.read_body(resp, "body", max_bytes=100)
    assert resp.closed
    assert safejson.read_body(_Streamed([b"ab", b"c"]), "body", max_bytes=3) == b"abc"


@pytest.mark.parametrize("number", ["1" + "0" * 400, "1e400", "-1e999", "NaN", "Infinity", "-" + "9" * 21])
def test_a_number_no_answer_holds_is_refused(number):
    """Before: a JSON API reporting a file of 10**400 bytes was an OverflowError in the quota forecast."""
    data = f'{{"size": {number}}}'.encode()
    with pytest.raises(safejson.Unusable, match="larger than any real answer"):
        safejson.loads(data, "the answer", max_bytes=1024)
    with pytest.raises(safejson.Unusable, match="larger than any real answer"):
        safejson.check_numbers(data, "the answer")


def test_real_numbers_read_as_before():
    doc = safejson.loads(b'{"size": 18446744073709551615, "ratio": 0.5, "id": -3}', "x", max_bytes=1024)
    assert doc == {"size": 2**64 - 1, "ratio": 0.5, "id": -3}
    safejson.check_numbers(b"not json", "x")  # left to whoever parses it
