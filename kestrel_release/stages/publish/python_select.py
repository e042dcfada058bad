"""`publish --python`: upload only the wheels that install on the selected Pythons.

A `cp312-cp312` wheel serves 3.12 only; `cp310-abi3` and `py310-none` serve every Python at or above
their floor, `py3-none` every Python 3 (the verify matrix's rule, stages/verify/matrix.py).
"""

from __future__ import annotations

from pathlib import Path

from kestrel_release.errors import UsageError
from kestrel_release.ui import console


def serves(filename: str, pythons: tuple[str, ...]) -> bool:
    """True when the wheel `filename` installs on one of `pythons`."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    from kestrel_release.stages.verify.matrix import covered_by

    try:
        tags = parse_wheel_filename(filename)[3]
    except InvalidWheelFilename:
        return True  # not ours to judge here: verify names what is wrong with it
    return any(covered_by(f"{t.interpreter}-{t.abi}-{t.platform}", pythons)[0] & set(pythons) for t in tags)


def for_pythons(wheels: list[Path], pythons: tuple[str, ...]) -> tuple[list[Path], list[Path]]:
    """(wheels to upload, wheels left out); UsageError (exit 2) when none serves the selection."""
    kept = [w for w in wheels if serves(w.name, pythons)]
    left = [w for w in wheels if w not in kept]
    selected = ", ".join(pythons)
    if not kept:
        raise UsageError(
            f"no wheel for Python {selected} among {len(wheels)} wheel(s)",
            "build for that Python first, or drop --python",
        )
    if left:
        console.info(
            f"publish plan: --python {selected}: uploading {len(kept)} wheel(s), leaving out "
            f"{len(left)} for other Pythons: {', '.join(w.name for w in left)}"
        )
    return kept, left
