"""Swap two section headers of a cubin, fixing every section index that names them: `python move_note.py IN OUT N`
moves the toolkit note (`.note.nv.cuver`/`.note.nv.cuinfo`) to index N (and the section there to the note's place).

Why: in an ABI V2 cubin the top byte of e_flags is the index of that note (cuobjdump finds the toolkit version
through it), so a release build whose note sits at index 8-15 has bit 0x08000000 set: flashinfer-cubin 0.5.0's
fmhaSm100a cubins have 0x0f there and no debug info. ptxas puts the note at index 6 in a release build and further
back only behind debug sections, so this makes the release build of that layout from a plain one.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
SHDR = struct.Struct("<IIQQQQIIQQ")
SYM = struct.Struct("<IBBHQQ")
SHF_INFO_LINK, SHT_SYMTAB, SHT_RELA, SHT_REL = 0x40, 2, 4, 9


def main(src: str, dst: str, target: int) -> None:
    data = bytearray(Path(src).read_bytes())
    head = list(EHDR.unpack_from(data))
    shoff, shnum, shstrndx = head[6], head[12], head[13]
    headers = [list(SHDR.unpack_from(data, shoff + i * SHDR.size)) for i in range(shnum)]
    names = bytes(data[headers[shstrndx][4] : headers[shstrndx][4] + headers[shstrndx][5]])
    name = [names[h[0] : names.index(b"\0", h[0])].decode() for h in headers]
    note = next(i for i, n in enumerate(name) if n.startswith(".note.nv.cu"))
    assert head[7] >> 24 == note, "e_flags' top byte is not the note's index"
    swap = {note: target, target: note}
    fixed = 0
    for h in headers:  # sh_link always names a section here; sh_info does for SHF_INFO_LINK and relocations
        if h[6] in swap:
            h[6], fixed = swap[h[6]], fixed + 1
        if (h[2] & SHF_INFO_LINK or h[1] in (SHT_RELA, SHT_REL)) and h[7] in swap:
            h[7], fixed = swap[h[7]], fixed + 1
    for h in headers:
        if h[1] == SHT_SYMTAB or name[headers.index(h)].endswith("symtab"):
            for off in range(h[4], h[4] + h[5], SYM.size):
                sym = list(SYM.unpack_from(data, off))
                if sym[3] in swap:
                    sym[3], fixed = swap[sym[3]], fixed + 1
                    SYM.pack_into(data, off, *sym)
    headers[note], headers[target] = headers[target], headers[note]
    head[13] = swap.get(shstrndx, shstrndx)
    head[7] = (head[7] & 0x00FFFFFF) | (target << 24)
    EHDR.pack_into(data, 0, *head)
    for i, h in enumerate(headers):
        SHDR.pack_into(data, shoff + i * SHDR.size, *h)
    Path(dst).write_bytes(data)
    print(f"{dst}: {name[note]} moved from {note} to {target} ({name[target]} to {note}); {fixed} other references")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
