"""`tqdeploy bundle --inspect FILE`: what a bundle holds, whether its hashes verify, and a second scan for
secret-shaped strings, so a person can check a bundle before sharing it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class InspectResult:
    path: Path
    manifest: dict[str, Any]
    files: list[dict[str, Any]] = field(default_factory=list)  # {"path", "size", "hash_ok"}
    suspects: dict[str, dict[str, int]] = field(default_factory=dict)  # path -> kind -> count
    problems: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.problems or self.suspects else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "tqdeploy.bundle-inspect/1",
            "path": str(self.path),
            "tool_version": self.manifest.get("tool_version"),
            "created_at": self.manifest.get("created_at"),
            "redacted": self.manifest.get("redacted"),
            "redactions": self.manifest.get("redactions", {}),
            "collectors": self.manifest.get("collectors", []),
            "files": self.files,
            "secret_shaped": self.suspects,
            "problems": self.problems,
        }

    def render(self, console) -> None:
        m = self.manifest
        console.print(f"bundle {self.path}: tqdeploy {m.get('tool_version')}, {m.get('created_at')}")
        for c in m.get("collectors", []):
            console.print(
                f"  {c.get('status', '?'):8} {c.get('name', '?'):11} {c.get('reason') or c.get('error') or ''}"
            )
        for f in self.files:
            mark = "ok" if f["hash_ok"] else "HASH MISMATCH"
            console.print(f"  {f['size']:>9}  {f['path']}  {mark}")
        for path, kinds in sorted(self.suspects.items()):
            console.print(f"  secret-shaped in {path}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        for p in self.problems:
            console.print(f"  problem: {p}")
        verdict = "looks clean" if self.exit_code == 0 else "CHECK BEFORE SHARING"
        red = "redacted" if m.get("redacted") else "NOT REDACTED"
        console.print(f"{len(self.files)} file(s), {red}; second scan: {verdict}")


def inspect_bundle(path: Path) -> InspectResult:
    from tqdeploy.bundle.archive import as_text, read_archive
    from tqdeploy.errors import TQError
    from tqdeploy.redact import scan

    if not path.is_file():
        raise TQError(f"bundle {path} does not exist or is not a file", "pass a file written by `tqdeploy bundle`")
    try:
        manifest, files = read_archive(path)
    except ValueError as exc:
        raise TQError(f"bundle {path} is unreadable: {exc}", "pass a file written by `tqdeploy bundle`") from None
    result = InspectResult(path, manifest if isinstance(manifest, dict) else {})
    listed = result.manifest.get("files") or {}
    for name, data in sorted(files.items()):
        want = (listed.get(name) or {}).get("sha256")
        ok = want == hashlib.sha256(data).hexdigest()
        result.files.append({"path": name, "size": len(data), "hash_ok": ok})
        if not ok:
            result.problems.append(f"{name}: not in the manifest" if want is None else f"{name}: sha256 differs")
        if name.endswith("mapping.json"):
            result.problems.append(f"{name}: a placeholder mapping inside the bundle")
        found = scan(as_text(data) or "")
        if found:
            result.suspects[name] = dict(sorted(found.items()))
    for name in sorted(set(listed) - set(files)):
        result.problems.append(f"{name}: listed in the manifest but missing")
    return result
