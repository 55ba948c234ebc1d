"""Read a spec file: TOML syntax errors as file:line, unknown keys named, types checked, defaults filled.

Everything wrong with a file is reported as one TQError line naming the file, the line and the key,
with the fix on the next line; no traceback, and nothing is written by the caller.
"""

from __future__ import annotations

import copy
import difflib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdeploy.deployspec.model import SpecData
from tqdeploy.deployspec.schema import SCHEMA, accepts, type_name
from tqdeploy.errors import TQError
from tqdeploy.resources import package_data

DEFAULT_SPEC_NAME = "qwen36-27b-tq"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec: where (dotted key), what, and how to fix it."""

    key: str
    message: str
    fix: str = ""


# Where a wheel user finds every key of the spec: the file `tqdeploy init` writes lists each with a comment.
KEYS_HINT = "`tqdeploy init --out FILE` writes a spec with every key, each explained"


def _defaults_dir() -> Path:
    return package_data("tqdeploy.deployspec", "defaults")


def embedded_spec_names() -> list[str]:
    return sorted(p.stem for p in _defaults_dir().glob("*.toml"))


def embedded_spec_path(name: str) -> Path:
    path = _defaults_dir() / f"{name}.toml"
    if not path.is_file():
        raise TQError(f"no embedded spec named {name!r}", f"use one of: {', '.join(embedded_spec_names())}")
    return path


def key_line(text: str, dotted: str) -> int | None:
    """1-based line of `key =` inside `[section]` (or of the section header), for error messages."""
    section, _, key = dotted.rpartition(".")
    current = ""
    header_line = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = re.match(r"^\[\[?\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]", stripped)  # [table] or [[array]]
        if header:
            current = header.group(1).strip("\"' ")
            if current == dotted:
                return number
            if current == section:
                header_line = number
            continue
        match = re.match(r"^([A-Za-z0-9_.\-\"']+)\s*=", stripped)
        if not match:
            continue
        name = match.group(1).strip("\"'")
        full = f"{current}.{name}" if current else name
        if full == dotted:
            return number
    return header_line


def _toml_error(source: str, err: tomllib.TOMLDecodeError) -> TQError:
    text = str(err)
    where = re.search(r"\(at line (\d+), column (\d+)\)", text)
    msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", text).strip()
    msg = msg if len(msg) <= 200 else msg[:200] + "..."  # tomllib quotes whole keys, which can be long
    if where:
        loc = f"{source}:{where.group(1)}:{where.group(2)}"
    else:
        loc = source
    return TQError(f"{loc}: invalid TOML: {msg}", f"fix the syntax at that line ({KEYS_HINT})")


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_shape(raw: dict[str, Any]) -> list[Problem]:
    """Unknown sections/keys and wrong types, named by dotted key."""
    problems: list[Problem] = []
    sections = [s for s in SCHEMA if s]
    for name, value in raw.items():
        if isinstance(value, dict):
            if name not in SCHEMA or not name:
                problems.append(
                    Problem(
                        name,
                        f"unknown section [{name}]{_did_you_mean(name, sections)}",
                        f"known sections: {', '.join(sections)}",
                    )
                )
                continue
            table = SCHEMA[name]
            for key, item in value.items():
                dotted = f"{name}.{key}"
                if key not in table:
                    problems.append(
                        Problem(
                            dotted,
                            f"unknown key {dotted!r}{_did_you_mean(key, list(table))}",
                            f"keys of [{name}]: {', '.join(table)}",
                        )
                    )
                elif not accepts(table[key], item):
                    problems.append(
                        Problem(
                            dotted,
                            f"{dotted} must be {type_name(table[key].type)}, got {type(item).__name__} {item!r}",
                            f"set {dotted} to {type_name(table[key].type)} ({KEYS_HINT})",
                        )
                    )
        elif name in sections:  # `model = 5` or [[model]]: the section's name, but not one table
            shape = "an array of tables [[...]]" if isinstance(value, list) else f"{type(value).__name__} {value!r}"
            problems.append(
                Problem(
                    name,
                    f"{name} must be one table [{name}], got {shape}",
                    f"write its keys under a single [{name}] header",
                )
            )
        elif name in SCHEMA[""]:
            if not accepts(SCHEMA[""][name], value):
                problems.append(Problem(name, f"{name} must be {type_name(SCHEMA[''][name].type)}, got {value!r}"))
        else:
            problems.append(
                Problem(
                    name,
                    f"unknown key {name!r}{_did_you_mean(name, list(SCHEMA['']) + sections)}",
                    f"top-level keys: {', '.join(SCHEMA[''])}",
                )
            )
    return problems


def with_defaults(raw: dict[str, Any]) -> SpecData:
    """Every section and key present; absent keys take the schema default."""
    data: SpecData = {}
    for section, table in SCHEMA.items():
        given = raw if section == "" else raw.get(section, {})
        data[section] = {
            k: copy.deepcopy(given[k]) if k in given else copy.deepcopy(d.default) for k, d in table.items()
        }
    for key in ("gpu_memory_utilization",):  # TOML ints where floats are meant
        if isinstance(data["vllm"].get(key), int):
            data["vllm"][key] = float(data["vllm"][key])
    return data


def raise_problems(problems: list[Problem], source: str, text: str | None) -> None:
    """One line for the first problem (file:line when known) and a count of the rest."""
    if not problems:
        return
    first = problems[0]
    line = key_line(text, first.key) if text else None
    loc = f"{source}:{line}" if line else source
    more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
    raise TQError(f"{loc}: {first.message}{more}", first.fix or KEYS_HINT)


# A spec is a few KiB. The caps keep the worst TOML to well under a second: 64 KiB in all, 4096 characters
# a line, and at most 32 dots outside strings and comments on a line, since tomllib's Flags.set walks the
# whole dotted key for every part (quadratic: 15 keys of 2000 parts took 10 s) and nests recursively.
MAX_SPEC_BYTES = 64 * 1024
MAX_LINE_CHARS = 4096
MAX_KEY_DOTS = 32


def _bare_dots(line: str) -> int:
    """Dots on a line outside quoted strings and before a comment (the dots of dotted keys and floats)."""
    dots, quote = 0, ""
    for char in line:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#":
            break
        elif char == ".":
            dots += 1
    return dots


def check_spec_text(text: str, source: str) -> None:
    """The size, BOM and line-length checks made before the text reaches tomllib."""
    if text.startswith("\ufeff"):
        raise TQError(
            f"{source}:1:1: the file starts with a UTF-8 byte order mark (BOM), which TOML does not allow",
            "save the spec as UTF-8 without BOM (e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' FILE`)",
        )
    if len(text) > MAX_SPEC_BYTES:
        raise TQError(
            f"{source}: {len(text)} characters is not a deployment spec (at most {MAX_SPEC_BYTES // 1024} KiB)",
            "pass the tqdeploy.toml that `tqdeploy init` writes",
        )
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) > MAX_LINE_CHARS:
            raise TQError(
                f"{source}:{number}: line of {len(line)} characters (at most {MAX_LINE_CHARS})",
                "split the value over several lines or shorten it",
            )
        if _bare_dots(line) > MAX_KEY_DOTS:
            raise TQError(
                f"{source}:{number}: a key of more than {MAX_KEY_DOTS} dotted parts is not a spec key",
                "write keys under their [section] header, as `tqdeploy init` writes them",
            )


def parse_spec_text(text: str, source: str) -> SpecData:
    check_spec_text(text, source)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _toml_error(source, err) from None
    except (RecursionError, MemoryError):
        raise TQError(f"{source}: nested too deeply to be a deployment spec", KEYS_HINT) from None
    raise_problems(check_shape(raw), source, text)
    return with_defaults(raw)


def read_spec_file(path: str | Path) -> tuple[str, str]:
    """(text, source label) of a spec file, with a clear error for a missing or unreadable file."""
    p = Path(path)
    try:
        if p.exists() and not p.is_file():
            raise IsADirectoryError(21, "not a regular file (a folder, FIFO or device)")
        with open(p, "rb") as fh:
            data = fh.read(MAX_SPEC_BYTES * 4 + 1)  # UTF-8 of at most 64 Ki characters; more is refused
    except FileNotFoundError:
        raise TQError(
            f"spec file {p} not found", "pass an existing file, or run `tqdeploy init` to write one"
        ) from None
    except (IsADirectoryError, PermissionError) as err:
        raise TQError(f"cannot read spec file {p}: {err.strerror}", "pass a readable tqdeploy.toml") from None
    if len(data) > MAX_SPEC_BYTES * 4:
        raise TQError(f"{p} is larger than a deployment spec (at most 64 KiB)", "pass a tqdeploy.toml")
    try:
        return data.decode("utf-8"), str(p)
    except UnicodeDecodeError:
        raise TQError(f"{p}: not UTF-8 text", "save the spec as UTF-8") from None
