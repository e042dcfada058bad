"""The secret scan of a binary reads its data, not its machine code: a token in .rodata is reported, bytes
that only look like one inside a large executable section are not, and an ELF whose section table cannot be
read is scanned whole."""

from __future__ import annotations

import struct

from kestrel_release.artifacts import elf
from kestrel_release.artifacts.wheel import Member
from kestrel_release.stages.verify.leaks import ContentScanner

TOKEN = b"ghp_" + b"a1B2" * 9
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4


def elf_image(sections: list[tuple[str, int, bytes]]) -> bytes:
    """An x86-64 shared object with these (name, flags, content) sections, a .shstrtab and a section table."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _, _ in sections) + b".shstrtab\0"
    body, headers, pos = b"", [bytes(64)], 64
    name_at = 1
    for name, flags, content in sections:
        headers.append(struct.pack("<IIQQQQIIQQ", name_at, 1, flags, 0, pos, len(content), 0, 0, 16, 0))
        name_at += len(name) + 1
        body += content
        pos += len(content)
    headers.append(struct.pack("<IIQQQQIIQQ", name_at, 3, 0, 0, pos, len(names), 0, 0, 1, 0))
    body += names
    shoff = 64 + len(body)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = struct.pack(
        "<16sHHIQQQIHHHHHH", ident, 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(headers), len(headers) - 1
    )
    return header + body + b"".join(headers)


def secrets_in(data: bytes) -> list[str]:
    scanner = ContentScanner()
    scanner.visit(Member("pkg/libk.so", len(data), len(data), 0), data)
    return [f.message.split(" at line")[0] for f in scanner.findings if f.rule == "secret"]


def test_a_token_in_read_only_data_is_reported():
    code = bytes(8192)
    data = elf_image([(".text", SHF_ALLOC | SHF_EXECINSTR, code), (".rodata", SHF_ALLOC, b"x=" + TOKEN + b"\0")])
    assert elf.data_spans(data) is not None
    assert secrets_in(data) == ["a GitHub token"]


def test_token_bytes_inside_a_large_code_section_are_machine_code_not_a_secret():
    code = bytes(4096) + b" " + TOKEN + b" " + bytes(4096)
    data = elf_image([(".text", SHF_ALLOC | SHF_EXECINSTR, code), (".rodata", SHF_ALLOC, b"hello\0")])
    assert secrets_in(data) == []
    start = data.index(code)
    assert all(not (lo < start + len(code) and start < hi) for lo, hi in elf.data_spans(data))


def test_a_small_code_section_is_scanned_with_its_neighbours():
    code = b" " + TOKEN + b" " + bytes(64)  # under 4 KiB: not worth cutting out
    data = elf_image([(".text", SHF_ALLOC | SHF_EXECINSTR, code)])
    assert secrets_in(data) == ["a GitHub token"]


def test_an_elf_whose_section_table_is_unreadable_is_scanned_whole():
    code = bytes(4096) + b" " + TOKEN + b" " + bytes(4096)
    data = elf_image([(".text", SHF_ALLOC | SHF_EXECINSTR, code)])
    broken = data[:40] + struct.pack("<Q", len(data) * 2) + data[48:]  # e_shoff past the end
    assert elf.data_spans(broken) is None
    assert secrets_in(broken) == ["a GitHub token"]
