"""`python -m tqdeploy` and the console script: Ctrl-C while the CLI is still importing is an interruption too.

cli.py's error funnel only covers what runs after its imports; a SIGINT during `import typer` or the
command registration would otherwise print a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130  # errors.EXIT_INTERRUPTED, repeated so this module imports nothing of the CLI


def main(argv: list[str] | None = None) -> int:
    try:
        from tqdeploy.cli import main as cli_main
    except KeyboardInterrupt:
        print("tqdeploy: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return cli_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
