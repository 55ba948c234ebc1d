"""Find the vLLM command inside a shell script (serve.sh, a blog snippet, a Dockerfile RUN line).

Continuation lines are joined, comments dropped, each line split with shlex (POSIX quoting),
`export VAR=value` lines remembered as environment, and the first line that starts `vllm serve`,
`python -m vllm.entrypoints...` or `docker run` (after `exec`, `nohup` or VAR=value) is the command.
Shell operators (`&&`, `|`, `;`, `&`, redirections) end it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from tqdeploy.errors import TQError
from tqdeploy.lint.command import Invocation, find_invocation

_OPERATORS = {"&&", "||", "|", ";", "&", ";;"}
# A trailing "$@" (serve.sh passes its own arguments on: a multi-node build's node flags, multinode.sh) stands for
# words only the running script has; lint checks the words it can see.
_RUN_TIME_ARGS = {"$@", "$*"}
_REDIRECT = re.compile(r"^(\d*>>?|\d*<|&>|\d*>&\d*)")


@dataclass
class ScriptCommand:
    argv: list[str]
    line: int  # 1-based line where the command starts
    env: dict[str, str] = field(default_factory=dict)  # exported before the command
    variables: dict[str, str] = field(default_factory=dict)  # every NAME=value set before it (exported or not)


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, joined text) with backslash-newline continuations joined (in one join per
    logical line: a 1 MB script continued over 40,000 lines stays linear)."""
    out: list[tuple[int, str]] = []
    parts: list[str] = []
    start = 0
    for n, raw in enumerate(text.splitlines(), start=1):
        if not parts:
            start = n
        if raw.rstrip().endswith("\\") and not raw.lstrip().startswith("#"):
            parts.append(raw.rstrip()[:-1] + " ")
            continue
        parts.append(raw)
        out.append((start, "".join(parts)))
        parts = []
    if parts:
        out.append((start, "".join(parts)))
    return out


def _split(line: str, where: int) -> list[str]:
    try:
        # `#` starts a comment only at the start of an unquoted word (a#b is one word): find it on the
        # raw words (quotes kept), then split what precedes it the POSIX way.
        raw = shlex.shlex(line, posix=False)
        raw.whitespace_split = True
        raw.commenters = ""
        words = []
        for word in raw:
            if word.startswith("#"):
                break
            words.append(word)
        return shlex.split(" ".join(words), comments=False, posix=True)
    except ValueError as exc:
        raise TQError(
            f"line {where}: cannot split the shell command ({exc})",
            "close the open quote or put the command on one line",
        ) from exc


def _cut_at_operator(tokens: list[str]) -> list[str]:
    out = []
    for tok in tokens:
        if tok in _OPERATORS or _REDIRECT.match(tok):
            break
        stripped = tok.rstrip(";")
        if stripped != tok:  # `cmd args;` glued semicolon
            out.append(stripped)
            break
        out.append(tok)
    return out


def find_command(text: str) -> ScriptCommand | None:
    env: dict[str, str] = {}
    shell_vars: dict[str, str] = {}  # `NAME=value` lines: not in the environment until exported
    for start, line in logical_lines(text):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        tokens = _split(line, start)
        if not tokens:
            continue
        if tokens[0] == "export":
            for tok in tokens[1:]:
                if "=" in tok:
                    name, value = tok.split("=", 1)
                    env[name] = value
                elif tok in shell_vars:  # `NAME=...` then `export NAME`
                    env[tok] = shell_vars[tok]
            continue
        if all(_is_assignment(tok) for tok in tokens):
            for tok in tokens:
                name, value = tok.split("=", 1)
                shell_vars[name] = value
            continue
        argv = _cut_at_operator(tokens)
        while argv and argv[-1] in _RUN_TIME_ARGS:  # words the script is called with: unknown until it runs
            argv.pop()
        inv: Invocation = find_invocation(argv)
        if inv.kind != "unknown":
            return ScriptCommand(argv=argv, line=start, env=env, variables={**shell_vars, **env})
    return None


def _is_assignment(token: str) -> bool:
    name, sep, _ = token.partition("=")
    return bool(sep) and name.isidentifier()
