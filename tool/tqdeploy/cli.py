"""Command-line entry point. Thin: each command lives in tqdeploy.commands.<module> and calls the library.

vLLM's shape (vllm/entrypoints/cli/main.py): a table of command name -> module, and only the chosen command's
module is imported, at dispatch. `tqdeploy --help` lists the table's one-line summaries and `--version`
prints the version: neither imports a command module, so neither pays for what the commands import, and the
library modules can import what they use at the top. A command module exposes ``register(app)``; the table
line is the only other place a new command is named (docs/architecture.md, the `command` recipe).
"""

from __future__ import annotations

import difflib
import importlib
import sys
import textwrap
from dataclasses import dataclass
from typing import Any

import typer
from typer._click.shell_completion import CompletionItem  # typer vendors click: its completion item
from typer.core import TyperCommand, TyperGroup

from tqdeploy import __version__
from tqdeploy.clihelp import HELP_OPTION_NAMES, TQCommand, TQGroup, usage_error
from tqdeploy.errors import EXIT_INTERRUPTED, EXIT_USAGE, TQError, report_error
from tqdeploy.output import echo


@dataclass(frozen=True)
class CommandLine:
    """One line of the command table: the module under tqdeploy.commands and the summary `--help` lists.

    The summary is the first sentence of the command's own help, or its start (tests/test_cli_table.py holds
    them so), so the list can be printed without importing the command."""

    module: str
    summary: str


# The commands in the order `tqdeploy --help` lists them.
COMMANDS: dict[str, CommandLine] = {
    "doctor": CommandLine(
        "doctor", "Check the driver, GPUs, PCIe, topology, shared memory, Docker, CUDA libraries and model cache"
    ),
    "plan": CommandLine(
        "plan", "Plan KV-cache memory per dtype (vLLM's exact formulas) and recommend a --kv-cache-dtype"
    ),
    "init": CommandLine("init", "Write a commented deployment spec (defaults from the model's config and this host)"),
    "demo-model": CommandLine(
        "demo_model",
        "Fetch the pinned SmolLM2-135M-Instruct GGUF, convert it to a bf16 checkpoint once per machine, say where",
    ),
    "build": CommandLine(
        "build", "Render Dockerfile, serve.sh, compose, Kubernetes, monitoring and a lock from a spec"
    ),
    "download": CommandLine(
        "download", "Download what serving a model needs (weights, config, tokenizer), verified and resumable"
    ),
    "lint": CommandLine("lint", "Find invalid flags, false advice and risky settings"),
    "profile": CommandLine(
        "profile",
        "Where a start goes, what KV cache vLLM really built (TurboQuant in effect?), and KV usage under load",
    ),
    "connect": CommandLine("connect", "Print the settings a client needs for this deployment (never the key itself)"),
    "up": CommandLine(
        "up",
        # its help's first sentence goes on to name docs/answers.md, which a wheel user does not have
        "Start the deployment in BUILD_DIR, wait for /health and /v1/models, classify a failed start, then check"
        " its answers",
    ),
    "status": CommandLine("status", "Show the deployment's state"),
    "check": CommandLine(
        "check",
        "Probe the server's answers: perplexity of a fixed text, greedy answers asked twice, recall of a planted fact",
    ),
    "logs": CommandLine("logs", "Print the server log of BUILD_DIR's current (or last) run"),
    "down": CommandLine("down", "Stop the deployment in BUILD_DIR (its whole process group) and prove nothing is left"),
    "tune": CommandLine("tune", "Start each candidate KV dtype through the build's runtime, one at a time"),
    "cache": CommandLine(
        "cache", "Carry a build's start-up caches (compile, inductor, Triton) to another host as one artifact"
    ),
    "bundle": CommandLine(
        "bundle",
        "Collect doctor, plan, spec, state, logs, metrics, versions, GPU/kernel/Docker facts into one tar.gz",
    ),
    "explain": CommandLine(
        "explain",
        "Show what a check looks at, why it matters and how to fix it (TQ ids, false-advice FA ids, rule codes)",
    ),
}

COMMANDS_PACKAGE = "tqdeploy.commands"


def _typer_app(**settings: Any) -> typer.Typer:
    """A Typer with the settings every tqdeploy command is built under (plain help, tqdeploy's own errors)."""
    return typer.Typer(pretty_exceptions_enable=False, rich_markup_mode=None, **settings)


def load_command(name: str) -> Any:
    """The click command of table line ``name``: its module imported now, the only one a run imports."""
    module = importlib.import_module(f"{COMMANDS_PACKAGE}.{COMMANDS[name].module}")
    holder = _typer_app()
    module.register(holder)
    for info in holder.registered_commands:  # one command class for all: help, `--`, metavars (clihelp.py)
        if info.cls in (None, TyperCommand):  # typer's default: a command asked for no class of its own
            info.cls = TQCommand
    return typer.main.get_group(holder).commands[name]


class CommandTable(TQGroup):
    """The `tqdeploy` group over COMMANDS: lists, completes and suggests from the table, loads at dispatch."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return load_command(cmd_name) if cmd_name in COMMANDS else None

    def summaries(self, ctx: Any) -> list[tuple[str, str]]:
        return [(name, line.summary) for name, line in COMMANDS.items()]

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        # the summary cut as click cuts a short help: a shell's completion menu wraps nothing
        names = [
            CompletionItem(n, help=textwrap.shorten(line.summary, 45, placeholder="..."))
            for n, line in COMMANDS.items()
            if n.startswith(incomplete)
        ]
        return names + super(TyperGroup, self).shell_complete(ctx, incomplete)  # the options: click's own

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return self._click_resolve_command(ctx, args)
        except Exception as err:  # click's UsageError (vendored by typer: matched by shape) gets a did-you-mean
            unknown = bool(args) and args[0] not in COMMANDS and hasattr(err, "message")
            close = difflib.get_close_matches(args[0], list(COMMANDS)) if unknown else []
            if close:
                err.message = err.message.rstrip(".") + ". Did you mean " + ", ".join(map(repr, close)) + "?"  # type: ignore[attr-defined]
            raise


app = _typer_app(
    name="tqdeploy",
    cls=CommandTable,
    context_settings={"help_option_names": HELP_OPTION_NAMES},
    help="Deploy and diagnose vLLM with TurboQuant KV-cache quantization.",
    no_args_is_help=True,
    add_completion=True,
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


def main(argv: list[str] | None = None) -> int:
    """Run the CLI through the single error funnel; returns the process exit code.

    TQError: exit 2 (or its own code); usage errors of the command line: exit 2, one line + fix, in words;
    Ctrl-C: 130; any other exception is a bug: exit 3 (errors.EXIT_INTERNAL).
    """
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
        if type(err).__name__ == "NoArgsIsHelpError":  # `tqdeploy` alone: its help, as kubectl and docker do
            echo(err.ctx.get_help())  # type: ignore[attr-defined]
            return 0
        if callable(getattr(err, "format_message", None)) and isinstance(getattr(err, "exit_code", None), int):
            message, fix = usage_error(err)
            return report_error(TQError(message, fix, err.exit_code or EXIT_USAGE))  # type: ignore[attr-defined]
        return report_error(err)
    return result if isinstance(result, int) else 0
