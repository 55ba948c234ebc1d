"""`tune --apply`: the recommended dtype written into the build's spec and the build rebuilt through its lock.

The spec is the copy the build keeps (BUILD/tqdeploy.toml), and only while its bytes are what the lock says
tqdeploy wrote: one the user edited is refused, never overwritten. The new spec is that text with one line
changed or added (comments kept), proven by parsing it: everything else must read the same. `tqdeploy build`
then renders it into BUILD, and its guard (render/guard.py) refuses any rendered file the user changed. The
spec the user built from is not touched: the result says to set the same line there.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from tqdeploy.buildfolder import folder, own_dir, verify
from tqdeploy.errors import TQError
from tqdeploy.filenames import SPEC_FILE_NAME
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.render.build import run_build

LINE = re.compile(r'^(\s*kv_cache_dtype\s*=\s*)("[^"\n]*"|\'[^\'\n]*\')(\s*(#.*)?)$')
SECTION = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")


def set_kv_cache_dtype(text: str, dtype: str) -> str:
    """The spec text with [vllm] kv_cache_dtype = dtype; TQError when the edit cannot be proven exact."""
    lines = text.splitlines(keepends=True)
    section, header_at, done = "", None, False
    for i, line in enumerate(lines):
        m = SECTION.match(line)
        if m:
            section = m.group(1).strip()
            header_at = i if section == "vllm" else header_at
            continue
        hit = LINE.match(line.rstrip("\n"))
        if section == "vllm" and hit:
            end = "\n" if line.endswith("\n") else ""
            lines[i] = f'{hit.group(1)}"{dtype}"{hit.group(3)}{end}'
            done = True
            break
    if not done:
        if header_at is None:
            lines += ["\n[vllm]\n"]
            header_at = len(lines) - 1
        lines.insert(header_at + 1, f'kv_cache_dtype = "{dtype}"  # tqdeploy tune --apply\n')
    new = "".join(lines)
    before, after = tomllib.loads(text), _parse(new)
    before.setdefault("vllm", {})["kv_cache_dtype"] = dtype
    if after != before:
        raise TQError(
            "the build's spec sets kv_cache_dtype in a form tune cannot edit exactly",
            f'set kv_cache_dtype = "{dtype}" under [vllm] in your spec and run `tqdeploy build SPEC --out BUILD`',
        )
    return new


def _parse(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def apply(build: Path, dtype: str) -> dict[str, Any]:
    build = Path(build).resolve()
    drift = verify(build)
    if SPEC_FILE_NAME in drift["modified"] + drift["missing"]:
        raise TQError(
            f"{build / SPEC_FILE_NAME} is not what tqdeploy wrote (the lock's hash differs): --apply does not "
            "replace a file you changed",
            f'set kv_cache_dtype = "{dtype}" under [vllm] in your spec and run `tqdeploy build SPEC --out {build}`',
        )
    text = (build / SPEC_FILE_NAME).read_text(encoding="utf-8")
    previous = tomllib.loads(text).get("vllm", {}).get("kv_cache_dtype")
    if previous == dtype:
        return {"dtype": dtype, "changed": [], "summary": f"the build already runs kv_cache_dtype {dtype}"}
    spec = own_dir(build, folder(build).state_dir / "tune") / "applied.toml"
    atomic_write_text(spec, set_kv_cache_dtype(text, dtype))
    result = run_build(spec, out=build, progress=False)  # the lock's guard: refuses a changed rendered file
    changed = sorted(result.changes.get("written", []))
    summary = (
        f"kv_cache_dtype {previous or 'unset'} -> {dtype} in {build / SPEC_FILE_NAME}, build re-rendered; set the "
        "same line in the spec you build from, and restart the server (`tqdeploy down`, `tqdeploy up`)"
    )
    return {"dtype": dtype, "previous": previous, "spec": str(spec), "changed": changed, "summary": summary}
