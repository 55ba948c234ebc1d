"""Check vLLM's own arguments against the schema of one vLLM release, the way its parser reads them.

Reproduces what FlexibleArgumentParser does before argparse (vllm/utils/argparse_utils.py):
`_` == `-` in names, `--x.y value` dotted JSON keys, `-O3`, and argparse's own rules (unique
prefixes under allow_abbrev, BooleanOptionalAction takes no value, nargs, type, choices).
"""

from __future__ import annotations

import difflib
import json
import re

from packaging.version import Version

from tqdeploy.findings import Edit, Finding, Severity
from tqdeploy.lint.parsed import Occurrence, ParsedArgs
from tqdeploy.lint.report import lint_finding
from tqdeploy.suggest import closest, use_hint
from tqdeploy.vllmfacts.schema import Option, VllmSchema, available_versions, load_schema, normalize

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _is_option_like(tok: str) -> bool:
    return tok.startswith("-") and len(tok) > 1 and not _NEGATIVE_NUMBER.match(tok)


def _human_int(value: str) -> bool:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value.strip())
    if m:  # binary suffixes take no decimals (human_readable_int)
        return not (m.group(2) in "KMGT" and "." in m.group(1))
    return re.fullmatch(r"[+-]?\d+", value.strip()) is not None


def type_problem(opt: Option, value: str) -> str | None:
    """Why vLLM's type conversion would reject value, or None."""
    if opt.nullable and value in ("", "None"):
        return None
    t = opt.type
    try:
        if t == "int":
            int(value)
        elif t == "float":
            float(value)
        elif t == "human_int" and not _human_int(value):
            return "expects an integer (suffixes k/m/g/t = 10^3.., K/M/G/T = 2^10..)"
        elif t == "human_int_or_auto" and value.strip().lower() != "auto" and not _human_int(value):
            return "expects an integer such as 32768 or 32k, or 'auto'"
        elif t == "json":
            json.loads(value)
        elif t in ("json_object", "json_or_str") and (t == "json_object" or re.match(r"(?s)^\s*{.*}\s*$", value)):
            expanded = re.sub(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b", "0", value)
            if not isinstance(json.loads(expanded), dict):
                return "expects a JSON object"
    except ValueError:
        return "expects " + {"int": "an integer", "float": "a number"}.get(t, "a JSON value")
    return None


def _choice_problem(opt: Option, value: str) -> str | None:
    if opt.choices is None or (opt.nullable and value in ("", "None")):
        return None
    probe = value.lower().replace("-", "_") if opt.type == "str_lower_underscore" else value
    if probe in {str(c) for c in opt.choices}:
        return None
    return f"invalid choice {value!r}"


MAX_SUGGESTIONS = 100  # did-you-mean (difflib, ~5 ms each) for the first unknown options; more is no typo


def _unknown_flag(schema: VllmSchema, name: str, index: int, end: int, suggest: bool = True) -> Finding:
    base = normalize(name)
    if not suggest:
        return lint_finding(
            "TQ301", Severity.ERROR, name, f"vLLM {schema.version} has no option {name}", "remove it", None, index
        )
    for other in available_versions():
        if other == schema.version:
            continue
        opt = load_schema(other).lookup(base)
        if opt is not None:
            close = difflib.get_close_matches(base, schema.names, n=1, cutoff=0.8)
            hint = f"; closest in {schema.version}: {close[0]}" if close else ""
            newer = Version(other) > Version(schema.version)
            why = f"added after {schema.version}" if newer else "removed or renamed"
            fix = (
                f"drop {name}"
                + (f" or use {close[0]}" if close else "")
                + (
                    f", or run vLLM {other} or later"
                    if newer
                    else f" (check `vllm serve --help={base[2:]}` of {schema.version})"
                )
            )
            return lint_finding(
                "TQ304",
                Severity.ERROR,
                name,
                f"{name} exists in vLLM {other} but not in vLLM {schema.version} ({why}){hint}",
                fix,
                Edit(index, end, ()),
                index,
            )
    close = difflib.get_close_matches(base, schema.names, n=3, cutoff=0.75)
    if close:
        edit = Edit(index, index + 1, (close[0],)) if "=" not in name else None
        return lint_finding(
            "TQ301",
            Severity.ERROR,
            name,
            f"vLLM {schema.version} has no option {name}; did you mean {' or '.join(close)}?",
            f"use {close[0]}",
            edit,
            index,
        )
    return lint_finding(
        "TQ301",
        Severity.ERROR,
        name,
        f"vLLM {schema.version} has no option {name}",
        f"remove it; list real options with `vllm serve --help=all` ({schema.version})",
        None,
        index,
    )


_SHELL_VAR = re.compile(r"\$(?:\{(\w+)(?::?-([^}]*))?\}|(\w+))")


def expand_shell_value(value: str, variables: dict[str, str]) -> str:
    """A script's option value with $NAME / ${NAME} / ${NAME:-default} replaced from the script's own
    assignments (a default when the script sets no value); left as written when the shell would only
    know it at run time ($(cmd), `cmd`, a variable the script never sets)."""
    if "$" not in value or "$(" in value or "`" in value:
        return value

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in variables and not is_unresolved(variables[name]):
            return variables[name]
        if m.group(2) is not None:
            return m.group(2)
        raise KeyError(name)

    try:
        return _SHELL_VAR.sub(sub, value)
    except KeyError:
        return value


def is_unresolved(value: str) -> bool:
    """A value only the shell knows at run time: not checked against types or choices."""
    return "$" in value or "`" in value


def parse_vllm_args(
    argv: list[str], start: int, end: int, schema: VllmSchema, variables: dict[str, str] | None = None
) -> ParsedArgs:
    """Walk argv[start:end] like vLLM's parser; findings for everything it would reject or warn about.
    variables: shell variables a script sets before the command (their values are checked, not $NAME)."""
    walk = _ArgWalk(argv, end, schema, variables or {})
    i = start
    while i < end:
        i = walk.step(i)
    _no_duplicate_suggestions(walk.out, walk.unknown_spans, schema)
    _duplicates(walk.out)
    return walk.out


class _ArgWalk:
    """One pass over vLLM's arguments; each method reads the token at i and returns where the next one starts."""

    def __init__(self, argv: list[str], end: int, schema: VllmSchema, variables: dict[str, str]):
        self.argv, self.end, self.schema, self.variables = argv, end, schema, variables
        self.out = ParsedArgs()
        self.unknown_spans: list[tuple[Finding, int]] = []  # unknown options and where their value ends

    def step(self, i: int) -> int:
        tok = self.argv[i]
        if tok == "--":
            return i + 1
        if not _is_option_like(tok):
            return self.positional(i, tok)
        name, has_eq, inline = tok.partition("=")
        after_o = self.optimization_level(i, tok, name, inline)
        if after_o is not None:
            return after_o
        dotted = name.startswith("--") and "." in name
        base_name = name.split(".", 1)[0] if dotted else name
        opt, ambiguous = self.resolve(i, tok, name, base_name)
        if ambiguous:
            return i + 1
        if opt is None:
            return self.unknown(i, name, bool(has_eq))
        if dotted:  # --compilation-config.mode 3: a JSON key of a dict option
            width = 1 if has_eq else 2
            value = inline if has_eq else (self.argv[i + 1] if i + 1 < self.end else "")
            self.out.occurrences.append(Occurrence(opt, name, i, i + width, [value]))
            return i + width
        if opt.is_bool:
            return self.switch(i, opt, tok, name, bool(has_eq), inline)
        return self.valued(i, opt, name, bool(has_eq), inline)

    def positional(self, i: int, tok: str) -> int:
        self.out.positionals.append((i, tok))
        if len(self.out.positionals) > 1:
            self.out.findings.append(
                lint_finding(
                    "TQ303",
                    Severity.ERROR,
                    tok,
                    f"unexpected argument {tok!r}: vLLM takes one positional (the model)",
                    "quote it or give it the flag it belongs to",
                    None,
                    i,
                )
            )
        return i + 1

    def optimization_level(self, i: int, tok: str, name: str, inline: str) -> int | None:
        """`-O 3`, `-O3`, `-Odecode`: shorthands of --optimization-level; None when tok is none of them."""
        argv, end = self.argv, self.end
        if tok == "-O" and i + 1 < end and argv[i + 1] in {"0", "1", "2", "3"}:  # `-O 3`
            opt = self.schema.lookup("--optimization-level")
            if opt:
                self.out.occurrences.append(Occurrence(opt, tok, i, i + 2, [argv[i + 1]]))
                return i + 2
        if re.match(r"^-O\d?$|^-O[a-z]", name) and name != "-O":  # -O3 / -Odecode shorthand
            opt = self.schema.lookup("--optimization-level")
            if opt:
                self.out.occurrences.append(Occurrence(opt, name, i, i + 1, [name[2:] or inline]))
            return i + 1
        return None

    def resolve(self, i: int, tok: str, name: str, base_name: str) -> tuple[Option | None, bool]:
        """The option base_name names, directly or as argparse's unique prefix (TQ307); (None, True) when
        the prefix is ambiguous."""
        schema = self.schema
        opt = schema.lookup(base_name)
        if opt is not None:
            return opt, False
        matches = schema.prefix_matches(base_name)
        dests = {o.dest for m in matches if (o := schema.lookup(m)) is not None}
        if matches and (len(matches) == 1 or len(dests) == 1):
            self.out.findings.append(
                lint_finding(
                    "TQ307",
                    Severity.WARN,
                    name,
                    f"{base_name} is an abbreviation of {matches[0]}; argparse accepts it, but it breaks "
                    "as soon as vLLM adds another option with the same prefix",
                    f"write {matches[0]}",
                    Edit(i, i + 1, (matches[0] + tok[len(base_name) :],)),
                    i,
                )
            )
            return schema.lookup(matches[0]), False
        if len(matches) > 1:
            self.out.findings.append(
                lint_finding(
                    "TQ307",
                    Severity.ERROR,
                    name,
                    f"ambiguous option {base_name}: could match {', '.join(matches[:5])}",
                    "write the full option name",
                    None,
                    i,
                )
            )
            return None, True
        return None, False

    def unknown(self, i: int, name: str, has_eq: bool) -> int:
        takes_next = not has_eq and i + 1 < self.end and not _is_option_like(self.argv[i + 1])
        span_end = i + (2 if takes_next else 1)
        suggest = len(self.unknown_spans) < MAX_SUGGESTIONS
        finding = _unknown_flag(self.schema, name, i, span_end, suggest)
        self.out.findings.append(finding)
        self.unknown_spans.append((finding, span_end))
        return span_end

    def switch(self, i: int, opt: Option, tok: str, name: str, has_eq: bool, inline: str) -> int:
        """A BooleanOptionalAction: takes no value (TQ305 when given one)."""
        if has_eq:
            low = inline.lower()
            if low in _TRUE or low in _FALSE:
                on = (low in _TRUE) != name.startswith("--no-")
                fixed = opt.long_name if on else "--no-" + opt.long_name[2:]
                fix, edit = f"write {fixed}", Edit(i, i + 1, (fixed,))
            else:
                fix, edit = f"write {opt.long_name} or --no-{opt.long_name[2:]}", None
            self.out.findings.append(
                lint_finding(
                    "TQ305",
                    Severity.ERROR,
                    name,
                    f"{name} is an on/off switch and takes no value: vLLM's parser "
                    f"rejects {tok!r} ('ignored explicit argument')",
                    fix,
                    edit,
                    i,
                )
            )
        self.out.occurrences.append(Occurrence(opt, name, i, i + 1, []))
        self.out.findings.extend(_deprecated(opt, name, i, self.schema))
        return i + 1

    def take_values(self, i: int, opt: Option, has_eq: bool, inline: str) -> tuple[list[str], int]:
        """The option's values the way argparse counts them (nargs), and where they end."""
        if has_eq:
            return [inline], i + 1
        values: list[str] = []
        j = i + 1
        count = opt.nargs if isinstance(opt.nargs, int) else 1 if opt.nargs in (None, "?") else None
        while j < self.end and (count is None or len(values) < count) and not _is_option_like(self.argv[j]):
            values.append(self.argv[j])
            j += 1
        return values, j

    def valued(self, i: int, opt: Option, name: str, has_eq: bool, inline: str) -> int:
        values, j = self.take_values(i, opt, has_eq, inline)
        values = [expand_shell_value(v, self.variables) for v in values]
        self.out.occurrences.append(Occurrence(opt, name, i, j, values))
        if opt.nargs not in ("?", "*") and not values:
            self.out.findings.append(
                lint_finding("TQ303", Severity.ERROR, name, f"{name} expects a value", f"give {name} a value", None, i)
            )
        for v in values:
            if not is_unresolved(v):  # a value the shell sets at run time is not checked
                self.out.findings.extend(self.value_findings(opt, name, v, i, j, len(values) == 1 and not has_eq))
        self.out.findings.extend(_deprecated(opt, name, i, self.schema))
        return j

    def value_findings(self, opt: Option, name: str, v: str, i: int, j: int, fixable: bool) -> list[Finding]:
        """Type (TQ303), choices (TQ302) and engine-checked values (TQ308) of one value; fixable: the value
        is argv[j - 1] alone, so a did-you-mean can replace it."""
        problem = type_problem(opt, v) or _choice_problem(opt, v)
        if problem and problem.startswith("invalid choice"):
            close = closest(v, opt.choices or ())
            shown = ", ".join(str(c) for c in opt.choices or ())
            return [
                lint_finding(
                    "TQ302",
                    Severity.ERROR,
                    name,
                    f"{problem} for {name} (vLLM {self.schema.version} accepts: {shown})",
                    use_hint(v, opt.choices or ()),
                    Edit(j - 1, j, (close,)) if close and fixable else None,
                    i,
                )
            ]
        if problem:
            return [
                lint_finding(
                    "TQ303", Severity.ERROR, name, f"{name} {problem}, got {v!r}", f"give {name} a valid value", None, i
                )
            ]
        if opt.engine_values:
            return _engine_value(opt, name, v, i, self.schema)
        return []


def _no_duplicate_suggestions(out: ParsedArgs, unknown: list[tuple[Finding, int]], schema: VllmSchema) -> None:
    """A did-you-mean whose option the command already sets would make --fix give it twice (the last
    value winning silently): the fix drops the misspelt option with its value instead."""
    given = {o.option.dest: o for o in out.occurrences}
    for finding, span_end in unknown:
        if finding.id != "TQ301" or finding.edit is None or not finding.edit.tokens:
            continue
        opt = schema.lookup(finding.edit.tokens[0])
        if opt is None or opt.dest not in given:
            continue
        finding.remediation = f"drop {finding.location}: the command already sets {given[opt.dest].name}" + (
            f" {given[opt.dest].value}" if given[opt.dest].value is not None else ""
        )
        finding.edit = Edit(finding.token, span_end, ())


def _deprecated(opt: Option, name: str, index: int, schema: VllmSchema) -> list[Finding]:
    if not opt.deprecated:
        return []
    return [
        lint_finding(
            "TQ306",
            Severity.WARN,
            name,
            f"{name} is deprecated in vLLM {schema.version}: {opt.help}",
            "follow the replacement named in vLLM's message, or drop the flag",
            None,
            index,
        )
    ]


def _engine_value(opt: Option, name: str, value: str, index: int, schema: VllmSchema) -> list[Finding]:
    ev = opt.engine_values or {}
    allowed = list(ev.get("values", []))
    match = ev.get("match")
    probe = value.upper() if match == "upper" and value.lower() != "auto" else value
    probe = value.lower() if match == "lower" else probe  # e.g. LoadConfig lowercases load_format
    if probe in allowed:
        return []
    close = difflib.get_close_matches(probe, allowed, n=1, cutoff=0.6)
    # a model-loader plugin can register a load format of its own (vllm/model_executor/model_loader/__init__.py
    # register_model_loader): a name near a built-in one is a typo, any other may be a plugin's
    plugin = opt.dest == "load_format" and not close
    return [
        lint_finding(
            "TQ308",
            Severity.WARN if plugin else Severity.ERROR,
            name,
            f"{name} {value!r} is not known to vLLM {schema.version}: the engine refuses it at "
            f"start-up ({ev.get('source', '')})" + ("; unless a loader plugin registers it" if plugin else ""),
            f"use {close[0]}" if close else f"use one of: {', '.join(allowed)}",
            None,
            index,
        )
    ]


def _duplicates(out: ParsedArgs) -> None:
    seen: dict[str, Occurrence] = {}
    for occ in out.occurrences:
        if "." in occ.name or occ.option.nargs in ("+", "*") and occ.option.action == "AppendAction":
            continue
        prev = seen.get(occ.option.dest)
        if prev is not None:
            out.findings.append(
                lint_finding(
                    "TQ309",
                    Severity.WARN,
                    occ.name,
                    f"{occ.option.long_name} is given twice; the last one wins",
                    "keep one",
                    Edit(prev.start, prev.end, ()),
                    prev.start,
                )
            )
        seen[occ.option.dest] = occ
