"""The verify benchmarks' floor: inflate every member of each wheel given and sha256 it (what checking RECORD needs)."""

import hashlib
import sys
import zipfile

for path in sys.argv[1:]:
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            digest = hashlib.sha256()
            with archive.open(info) as member:
                while chunk := member.read(1 << 20):
                    digest.update(chunk)
