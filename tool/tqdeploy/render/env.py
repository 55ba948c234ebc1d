"""The jinja2 environment: sandboxed, StrictUndefined, no autoescape, fixed newline handling.

Sandboxed because templates are data an operator may edit; StrictUndefined because a missing value
must fail the build, not render an empty string into a launch script.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from tqdeploy.adaptors import jinja


def shquote(value: Any) -> str:
    """One shell word (POSIX quoting): safe for any value placed in sh scripts."""
    return shlex.quote(str(value))


def yamlstr(value: Any) -> str:
    """A YAML double-quoted scalar. JSON strings are valid YAML flow scalars."""
    return json.dumps(str(value), ensure_ascii=True)


def tojson(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True)


def make_env(search_path: list[Path]) -> jinja.SandboxedEnvironment:
    sandboxed, file_loader, strict_undefined = jinja.sandbox_classes()

    env: jinja.SandboxedEnvironment = sandboxed(
        loader=file_loader([str(p) for p in search_path]),
        undefined=strict_undefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shquote"] = shquote
    env.filters["yamlstr"] = yamlstr
    env.filters["tojson"] = tojson
    return env
