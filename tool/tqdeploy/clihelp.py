"""How tqdeploy's command line behaves like the tools its users know (docker, kubectl, git, the hf CLI).

One place for all commands, instead of an edit in each: `-h` and `--help`; an unknown option refused with a
did-you-mean, also before `--`; a launch command only after `--`; help with plain metavars (TEXT, INTEGER,
PATH), the command list whole (never cut with `...`), examples and the exit codes; usage errors in the tool's
own one line + `fix:` format (errors.report_error), exit 2. cli.py installs these classes on every command.
It imports typer and the error and example modules only: `tqdeploy --help` loads it (cli.py).
"""

from __future__ import annotations

import difflib
import re
import shlex
from typing import Any

from typer.core import TyperCommand, TyperGroup

from tqdeploy.cliexamples import EXAMPLES, EXIT_CODES
from tqdeploy.errors import TQError

HELP_OPTION_NAMES = ["-h", "--help"]

# The variadic argument that holds a launch command (lint, doctor): it is taken only from after `--`.
LAUNCH_COMMAND_PARAM = "command"

# typer's type labels (`<list[str]>`, `<int range>`) as the metavars click, docker and kubectl users know.
_TYPE_LABELS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "bool": "BOOLEAN"}


def _metavar(match: re.Match[str]) -> str:
    label = match.group(1)
    inner = re.fullmatch(r"list\[(.+)\]", label)
    label = inner.group(1) if inner else label
    label = label.removesuffix(" range")
    if "|" in label:
        return "[" + label + "]"
    return _TYPE_LABELS.get(label, label.upper())


def plain_metavars(text: str) -> str:
    return re.sub(r"<([^<>]+)>(\.\.\.)?", _metavar, text)


def _write_epilog(formatter: Any, examples: list[str], note: str = "") -> None:
    if examples:
        with formatter.section("Examples"):
            for line in examples:  # as written, not rewrapped: a command to copy
                formatter.write(f"{'':>{formatter.current_indent}}{line}\n")
    if note:
        formatter.write_paragraph()
        formatter.write_text(note)
    with formatter.section("Exit codes"):
        formatter.write_dl(EXIT_CODES)


class TQCommand(TyperCommand):
    """Every tqdeploy command: plain metavars, examples and exit codes in its help, a launch command only
    after `--`."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            name, text = record
            if param.name == LAUNCH_COMMAND_PARAM and self._takes_launch_command():
                args.append(("-- COMMAND...", text))
            elif param.param_type_name == "argument":
                args.append((re.sub(r"\s*<[^<>]+>(\.\.\.)?", "", name), text))  # the name says what it is
            else:
                opts.append((plain_metavars(name), text))
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        super().format_epilog(ctx, formatter)
        _write_epilog(formatter, EXAMPLES.get(self.name or "", []))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = super().collect_usage_pieces(ctx)
        if self._takes_launch_command():
            pieces = [p for p in pieces if p.lower() not in ("[command]...", "[command...]")] + ["[-- COMMAND...]"]
        return pieces

    def _takes_launch_command(self) -> bool:
        return any(p.name == LAUNCH_COMMAND_PARAM and p.nargs == -1 for p in self.params)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not self._takes_launch_command():
            return super().parse_args(ctx, args)
        head, tail = (args[: args.index("--")], args[args.index("--") + 1 :]) if "--" in args else (args, [])
        rest = super().parse_args(ctx, head)
        before = ctx.params.get(LAUNCH_COMMAND_PARAM)
        if before:
            raise TQError(
                f"unexpected argument {before[0]!r}: tqdeploy {self.name} takes a launch command only after `--`",
                f"tqdeploy {self.name} [OPTIONS] -- {shlex.join(before)}",
            )
        ctx.params[LAUNCH_COMMAND_PARAM] = tail or None
        return rest


class TQGroup(TyperGroup):
    """The `tqdeploy` group: the command list whole (each command's first sentence, wrapped, never cut)."""

    def summaries(self, ctx: Any) -> list[tuple[str, str]]:
        """(name, first sentence of its help) of each command to list; cli.CommandTable reads its table instead."""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, first_sentence(cmd.short_help or cmd.help or "")))
        return rows

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = self.summaries(ctx)
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        super().format_epilog(ctx, formatter)
        _write_epilog(formatter, EXAMPLES[""], "Run `tqdeploy COMMAND -h` for a command's options and examples.")


def first_sentence(text: str) -> str:
    """The help's first sentence (up to `; ` or `. `), whole: the list wraps it instead of cutting it."""
    first = " ".join(text.strip().split("\n\n")[0].split())
    cut = re.search(r"(?<=[a-z0-9)`'])(\.|;)\s", first)
    return first[: cut.start()] if cut else first.rstrip(".")


# typer's validation messages (pydantic's wording) as a sentence about the option
_IN_WORDS = [
    (r"valid integer", "must be a whole number"),
    (r"valid number", "must be a number"),
    (r"valid boolean", "must be true or false"),
]


def _option_range(param: Any) -> str:
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None and high is not None:
        return f"from {low} to {high}"
    if low is not None:
        return f"{low} or more"
    return f"{high} or less" if high is not None else ""


# Spellings a command took before its options were given one meaning across commands (issue 21), each with the
# option that now has that meaning there: refused like any unknown option, with the new name as the did-you-mean.
RENAMED_OPTIONS: dict[str, dict[str, str]] = {
    "connect": {"--model": "--served-model-name", "--timeout": "--request-timeout"},
    "down": {"--timeout": "--grace-period"},
    "doctor": {"-f": "--file"},
    "lint": {"-f": "--file"},
}


def _closest_options(err: Any, option: str) -> list[str]:
    """The command's option nearest the typo (click's own list is sorted by name, not by how near)."""
    command = getattr(getattr(err, "ctx", None), "command", None)
    renamed = RENAMED_OPTIONS.get(getattr(command, "name", None) or "", {}).get(option.split("=", 1)[0])
    if renamed:
        return [renamed]
    names = [n for p in getattr(command, "params", []) for n in (*p.opts, *p.secondary_opts) if n.startswith("-")]
    return difflib.get_close_matches(option, names or list(err.possibilities or []), n=1, cutoff=0.6)


def _command_path(err: Any) -> str:
    ctx = getattr(err, "ctx", None)
    return getattr(ctx, "command_path", None) or "tqdeploy"


def usage_error(err: Any) -> tuple[str, str]:
    """A click usage error (typer vendors click: matched by shape, not class) as (message, fix), in words."""
    path = _command_path(err)
    help_hint = f"`{path} -h` lists the options and shows examples"
    option = getattr(err, "option_name", None)
    if option is not None and hasattr(err, "possibilities"):  # NoSuchOption: click's difflib matches
        close = _closest_options(err, option)
        message = f"{path} has no option {option}"
        return message, (f"did you mean {' or '.join(close)}? ({help_hint})" if close else help_hint)
    param = getattr(err, "param", None)
    if param is not None and type(err).__name__ == "MissingParameter" and param.param_type_name == "argument":
        return f"{path} needs {str(param.name).upper()}", help_hint  # not click's 'check_id'
    names = "/".join(getattr(param, "opts", None) or [])
    allowed = _option_range(param) if param is not None else ""
    if names and allowed and re.search(r"greater than|less than|range", str(getattr(err, "message", ""))):
        return f"{names} must be {allowed}", f"pass {names} {allowed}"
    if names and getattr(err, "message", ""):  # BadParameter of an option: name it the way it is typed
        words = next((w for pattern, w in _IN_WORDS if re.search(pattern, err.message)), err.message)
        return f"{names.split('/')[0]} {words}", getattr(err, "remediation", None) or help_hint
    message = err.format_message() if callable(getattr(err, "format_message", None)) else str(err)
    message = " ".join(message.split())
    if "No such command" in message:
        return message, "`tqdeploy -h` lists the commands"
    return message, help_hint
