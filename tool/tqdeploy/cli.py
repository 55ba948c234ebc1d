"""Command-line entry point. Thin: each command lives in tqdeploy.commands.<name> and calls the library.

Commands are discovered from the tqdeploy.commands package; each module exposes
``register(app)`` and an ``ORDER`` used to list them. Heavy libraries (NVML, Docker,
huggingface_hub, jinja2, vLLM) are imported inside the command bodies only, so that
``tqdeploy --help`` stays instant.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer
from typer.core import TyperCommand

from tqdeploy import __version__
from tqdeploy.clihelp import HELP_OPTION_NAMES, TQCommand, TQGroup, usage_error

app = typer.Typer(
    name="tqdeploy",
    cls=TQGroup,
    context_settings={"help_option_names": HELP_OPTION_NAMES},
    help="Deploy and diagnose vLLM with TurboQuant KV-cache quantization.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"tqdeploy {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """Deploy and diagnose vLLM with TurboQuant KV-cache quantization."""


# Modules of tqdeploy.commands that are not commands (shared option definitions).
NOT_COMMANDS = frozenset({"options"})


def _register_commands() -> None:
    import tqdeploy.commands as pkg

    names = [m.name for m in pkgutil.iter_modules(pkg.__path__) if m.name not in NOT_COMMANDS]
    modules = [importlib.import_module(f"tqdeploy.commands.{name}") for name in names]
    for module in sorted(modules, key=lambda m: (getattr(m, "ORDER", 100), m.__name__)):
        module.register(app)
    for info in app.registered_commands:  # one command class for all: help, `--`, metavars (clihelp.py)
        if info.cls in (None, TyperCommand):  # typer's default: a command asked for no class of its own
            info.cls = TQCommand


_register_commands()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI through the single error funnel; returns the process exit code.

    TQError: exit 2 (or its own code); usage errors of the command line: exit 2, one line + fix, in words;
    Ctrl-C: 130; any other exception is a bug: exit 3 (errors.EXIT_INTERNAL).
    """
    from tqdeploy.errors import EXIT_INTERRUPTED, EXIT_USAGE, TQError, report_error

    try:
        result = app(args=argv, prog_name="tqdeploy", standalone_mode=False)
    except TQError as err:
        return report_error(err)
    except KeyboardInterrupt:
        print("tqdeploy: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except typer.Abort:
        print("tqdeploy: aborted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        # click's usage errors (typer vendors click in recent releases, so match them by shape, not class)
        if callable(getattr(err, "format_message", None)) and isinstance(getattr(err, "exit_code", None), int):
            message, fix = usage_error(err)
            return report_error(TQError(message, fix, err.exit_code or EXIT_USAGE))  # type: ignore[attr-defined]
        return report_error(err)
    return result if isinstance(result, int) else 0
