"""Write a spec back as commented TOML: every key, its meaning, and what is left to vLLM's defaults."""

from __future__ import annotations

import json
from typing import Any

from tqdeploy.deployspec.schema import SCHEMA


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=True)  # JSON escapes are valid TOML basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def spec_to_toml(data: dict[str, dict[str, Any]], header: list[str], notes: dict[str, str] | None = None) -> str:
    """Commented TOML for a defaults-filled spec. notes: dotted key -> why this value was chosen."""
    notes = notes or {}
    out = [f"# {line}" if line else "#" for line in header]
    for section, table in SCHEMA.items():
        if section:
            out += ["", f"[{section}]"]
        else:
            out.append("")
        for key, meta in table.items():
            dotted = f"{section}.{key}" if section else key
            out.append(f"# {meta.doc}")
            if dotted in notes:
                out.append(f"# chosen: {notes[dotted]}")
            value = data[section][key]
            if value is None:
                tail = f": {meta.unset}" if meta.unset else ": vLLM's own default applies" if section == "vllm" else ""
                out.append(f"# {key} = (unset{tail})")
            else:
                out.append(f"{key} = {toml_value(value)}")
    return "\n".join(out) + "\n"
