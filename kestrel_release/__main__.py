"""Entry point (`python -m kestrel_release` and the console script): signals first, then the CLI.

Why here: a Ctrl-C or SIGTERM that lands while the CLI's libraries are still importing must end
as one line and exit 130 like any other interrupt, never as a traceback or a bare kill status.
Only `signal` and `sys` are imported before the handlers are in place.
"""

import signal
import sys


def _interrupt(signum, frame):  # SIGTERM behaves like Ctrl-C: clean up, exit 130
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        from kestrel_release.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:  # landed during the imports, before the CLI's own handling
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.stderr.write("error: interrupted; nothing was left half-written\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
