"""`auditwheel repair --plat auto` resolved to an explicit tag by auditwheel's own analysis, with the libc of
the root this runs in.

auditwheel's "auto" takes the libc from the extensions' DT_NEEDED. An extension that links no libc.so.6
(one that calls only torch/CUDA; or, for a Python < 3.11, whose extensions link no libpython, one linked
with --as-needed, Debian's and Ubuntu's gcc default, that calls no libc function) leaves it unknown, and
auditwheel stops: "InvalidLibc(Error): couldn't detect libc for python extension". Here the libc is the
wheel tag's, else this root's (`Libc.detect()`), and auditwheel repairs to the tag its analysis finds.

Run on the host (adapters/_repair_many.py, _glibc_floor_child.py) and, copied into a container build's
workspace, by the image's Python (stages/build_wheels/container.py): `python FILE repair --plat auto ... WHEEL`
is `auditwheel repair ...` with the tag resolved in that root. So it imports only the standard library
and auditwheel, and takes the older auditwheel uv resolves for an image's older Python (6.4.2 for 3.9
names its errors without "Error").
"""

from __future__ import annotations

import sys
from pathlib import Path


def _auditwheel_error() -> type[Exception]:
    """auditwheel's base error class, under the name of the installed version."""
    from auditwheel import error

    names = vars(error)
    return names.get("AuditwheelError") or names["AuditwheelException"]


def best_policy(wheel: Path, exclude: list[str]) -> tuple[str, str]:
    """(the most compatible tag for `wheel`, the best tag by its symbol versions), as auditwheel analyses it."""
    from auditwheel.libc import Libc
    from auditwheel.wheel_abi import analyze_wheel_abi
    from auditwheel.wheeltools import get_wheel_architecture, get_wheel_libc

    unreadable = _auditwheel_error()
    try:
        arch = get_wheel_architecture(wheel.name)
    except unreadable:  # a tag auditwheel cannot read: let it detect
        arch = None
    try:
        libc = get_wheel_libc(wheel.name)
    except unreadable:  # linux_x86_64: this root's libc, not the extensions' DT_NEEDED (module doc)
        libc = Libc.detect()
    info = analyze_wheel_abi(libc, arch, wheel, frozenset(exclude), disable_isa_ext_check=False, allow_graft=True)
    overall = info.overall_policy
    if overall == info.policies.linux:
        overall = info.policies.lowest
    return overall.name, info.sym_policy.name


def resolve_auto(argv: list[str]) -> list[str]:
    """auditwheel's arguments (what follows `auditwheel`) with `--plat auto` replaced by the tag it resolves to."""
    if "--plat" not in argv or argv[argv.index("--plat") + 1] != "auto":
        return argv
    excludes = [argv[i + 1] for i, a in enumerate(argv) if a == "--exclude"]
    policy, _ = best_policy(Path(argv[-1]), excludes)
    print(f"kestrel-release: --plat auto resolved to {policy}", flush=True)
    out = list(argv)
    out[out.index("--plat") + 1] = policy
    return out


def main(argv: list[str]) -> int:
    """`auditwheel ARGV` with --plat auto resolved first."""
    sys.argv = ["auditwheel", *resolve_auto(argv)]
    from auditwheel.main import main as auditwheel_main

    code = auditwheel_main()
    return 0 if code is None else int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
