"""Child process that runs `auditwheel repair` for many wheels, importing auditwheel once.

Importing auditwheel (and the ELF and policy machinery behind it) costs ~1.3 s of
its ~1.6 s per wheel; this worker pays it once per build, while the first wheel
is still compiling. It stays a child process because auditwheel sets global
state (logging, caches, cwd-relative temp dirs).

Protocol: one JSON object per line on stdin, {"argv": [...], "log": path}, where
argv is what follows `auditwheel` on a command line; for each, one line
{"code": exit code} on the stdout this process started with. While a job runs,
fds 1 and 2 point at its log, so patchelf's output lands there too.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable

from kestrel_release.adapters._auditwheel_auto import resolve_auto


def _run_one(main: Callable[[], int | None], argv: list[str], log: str) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "a", encoding="utf-8") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            # --plat auto resolved inside: its failure is this wheel's, logged (_auditwheel_auto: why not auditwheel's)
            sys.argv = ["auditwheel", *resolve_auto(argv)]
            code = main()
            code = 0 if code is None else int(code)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # a crash in auditwheel is this wheel's failure, reported with its traceback
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
    _forget_wheels()
    return code


def _forget_wheels() -> None:
    # analyze_wheel_abi is memoised on the wheel's path: a later job must never see an earlier wheel's answer.
    from auditwheel import wheel_abi

    clear = getattr(getattr(wheel_abi, "analyze_wheel_abi", None), "cache_clear", None)
    if clear is not None:
        clear()


def main() -> int:
    reply = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    from auditwheel.main import main as auditwheel_main  # the one slow import

    for line in sys.stdin:
        if line.strip():
            job = json.loads(line)
            reply.write(json.dumps({"code": _run_one(auditwheel_main, job["argv"], job["log"])}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
