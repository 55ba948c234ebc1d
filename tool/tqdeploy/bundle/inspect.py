"""`tqdeploy bundle --inspect FILE`: what a bundle holds, whether its hashes verify, and a second scan of every
member (nested archives opened) for what the redaction must have replaced: secrets, private keys, this host's
names and users, addresses; also in base64, hex and URL-encoded form. Exit 1 names member and line."""

from __future__ import annotations

import hashlib
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from rich.console import Console

from tqdeploy.bundle.archive import TAIL_KEPT, as_text
from tqdeploy.bundle.identity import HostIdentity, this_host
from tqdeploy.bundle.manifest import parse_manifest
from tqdeploy.bundle.unpack import Budget, TooLarge, members, walk
from tqdeploy.errors import TQError, shown
from tqdeploy.redact import Redactor, scan
from tqdeploy.redact.keys import decode_blob, drop_private_keys
from tqdeploy.redact.rules import BASE64_BLOB
from tqdeploy.safeio import FileRefused, read_bytes

MAX_FINDINGS_PER_MEMBER = 20
LEAF_LINES = 32  # a span this short is scanned line by line
MAX_BUNDLE_BYTES = 256 * 1024 * 1024  # a bundle is at most 24 MiB of content; anything far larger is not one
_URL_ENCODED = re.compile(r"(?:%[0-9A-Fa-f]{2}|[\w.\-~+]){8,4096}")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){8,2048}(?![0-9A-Fa-f])")


@dataclass
class InspectResult:
    path: Path
    manifest: dict[str, Any]
    files: list[dict[str, Any]] = field(default_factory=list)  # {"path", "size", "hash_ok"}
    suspects: dict[str, dict[str, int]] = field(default_factory=dict)  # member -> kind -> count
    findings: list[dict[str, Any]] = field(default_factory=list)  # {"member", "line", "kind"}
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
            "findings": self.findings,
            "problems": self.problems,
        }

    def render(self, console: Console) -> None:
        # every name and field here comes from the bundle: each through shown(), escaped and cut
        m = self.manifest
        head = f"bundle {shown(self.path)}: tqdeploy {shown(m.get('tool_version'))}, {shown(m.get('created_at'))}"
        console.print(head, markup=False)
        for c in m.get("collectors", []):
            note = shown(c.get("reason") or c.get("error") or "")
            console.print(f"  {shown(c.get('status', '?')):8} {shown(c.get('name', '?')):11} {note}", markup=False)
        for f in self.files:
            mark = "ok" if f["hash_ok"] else "HASH MISMATCH"
            console.print(f"  {f['size']:>9}  {shown(f['path'])}  {mark}", markup=False)
        for f in self.findings:
            console.print(f"  {f['kind']} in {shown(f['member'])} line {f['line']}", markup=False)
        for p in self.problems:
            console.print(f"  problem: {shown(p, 1000)}", markup=False)
        verdict = "looks clean" if self.exit_code == 0 else "CHECK BEFORE SHARING"
        red = "redacted" if m.get("redacted") else "NOT REDACTED"
        console.print(f"{len(self.files)} file(s), {red}; second scan: {verdict}", markup=False)


def _views(text: str) -> list[tuple[str, str]]:
    """(encoding, decoded text) of the base64, hex and URL-encoded words in text that decode to text."""
    out = []
    for m in BASE64_BLOB.finditer(text):
        for blob in {m.group(0), m.group(0) + "=" * (-len(m.group(0)) % 4)}:
            decoded = decode_blob(blob)
            if decoded:
                out.append(("base64", decoded))
    for m in _HEX.finditer(text):
        try:
            decoded = bytes.fromhex(m.group(0)).decode("ascii")
        except (ValueError, UnicodeDecodeError):
            continue
        if decoded.isprintable():
            out.append(("hex", decoded))
    if "%" in text:
        for m in _URL_ENCODED.finditer(text):
            if "%" in m.group(0):
                out.append(("url-encoded", unquote(m.group(0))))
    return out


class Scanner:
    """One probe Redactor for the whole bundle: what it finds in one member (a leaked key) it knows in the
    next, in every encoding."""

    def __init__(self, identity: HostIdentity) -> None:
        self.probe = Redactor(
            hostnames=identity.hostnames, usernames=identity.users, domains=identity.domains, keywords=identity.keywords
        )

    def kinds(self, text: str, path: bool = False, log: bool = False) -> dict[str, int]:
        """What a redaction would still replace in text (a member name, a log: as the bundle redacts them)."""
        found = dict(scan(text, self.probe, path, log))
        for encoding, decoded in _views(text):
            for kind, n in scan(decoded, self.probe).items():
                key = f"{kind} ({encoding})"
                found[key] = found.get(key, 0) + n
        return found

    def _locate(self, member: str, lines: list[str], lo: int, hi: int, out: list[dict[str, Any]], log: bool) -> None:
        """The findings of lines[lo:hi], halving only spans that hold one. Scanning every line on its own once
        took 53 s for a log of 4M short lines with one key at its end; halving costs about two scans of the
        whole text per finding, so the time grows with the text, not with its number of lines."""
        if len(out) >= MAX_FINDINGS_PER_MEMBER or not self.kinds("\n".join(lines[lo:hi]), log=log):
            return
        if hi - lo <= LEAF_LINES:
            for number in range(lo, hi):
                kinds = sorted(self.kinds(lines[number], log=log))
                out.extend({"member": member, "line": number + 1, "kind": k} for k in kinds)
            return
        mid = (lo + hi) // 2
        self._locate(member, lines, lo, mid, out, log)
        self._locate(member, lines, mid, hi, out, log)

    def lines(self, member: str, text: str, log: bool = False) -> list[dict[str, Any]]:
        """Where in the member: the line of each finding (a private key block: its first line)."""
        out: list[dict[str, Any]] = []
        all_lines = text.splitlines()
        self._locate(member, all_lines, 0, len(all_lines), out, log)
        del out[MAX_FINDINGS_PER_MEMBER:]
        if not out:  # a multi-line shape (a key body): the first line that differs once keys are dropped
            dropped, _ = drop_private_keys(text)
            for number, (a, b) in enumerate(zip(text.splitlines(), dropped.splitlines(), strict=False), 1):
                if a != b:
                    return [{"member": member, "line": number, "kind": "private_key"}]
            out.append({"member": member, "line": 1, "kind": "secret-shaped"})
        return out


def inspect_bundle(path: Path, identity: HostIdentity | None = None) -> InspectResult:
    if not path.is_file():
        raise TQError(f"bundle {path} does not exist or is not a file", "pass a file written by `tqdeploy bundle`")
    try:
        raw = read_bytes(path, MAX_BUNDLE_BYTES, "bundle", follow_symlinks=True)
    except FileRefused as exc:
        raise TQError(str(exc), "pass a file written by `tqdeploy bundle` (at most 256 MiB)") from None
    budget = Budget()
    try:
        top = dict(members(raw, budget)) if raw[:2] == b"\x1f\x8b" else {}
    except (TooLarge, OSError, EOFError, tarfile.TarError) as exc:
        raise TQError(f"bundle {path} is unreadable: {exc}", "pass a file written by `tqdeploy bundle`") from None
    if "manifest.json" not in top:
        raise TQError(
            f"bundle {path} is unreadable: no manifest.json in it", "pass a file written by `tqdeploy bundle`"
        )

    result = InspectResult(path, parse_manifest(top.pop("manifest.json"), str(path)))
    scanner = Scanner(identity if identity is not None else this_host())
    _verify(result, top)
    try:
        for name, data in sorted(top.items()):
            for leaf, content in walk(name, data, budget):
                _scan_member(result, scanner, leaf, content)
    except TooLarge as exc:
        result.problems.append(f"nested archives too large to inspect whole: {exc}")
    return result


def _verify(result: InspectResult, top: dict[str, bytes]) -> None:
    listed = result.manifest.get("files") or {}
    for name, data in sorted(top.items()):
        want = (listed.get(name) or {}).get("sha256")
        ok = want == hashlib.sha256(data).hexdigest()
        result.files.append({"path": name, "size": len(data), "hash_ok": ok})
        if not ok:
            result.problems.append(f"{name}: not in the manifest" if want is None else f"{name}: sha256 differs")
    for name in sorted(set(listed) - set(top)):
        result.problems.append(f"{name}: listed in the manifest but missing")


def _scan_member(result: InspectResult, scanner: Scanner, name: str, data: bytes) -> None:
    if name.rsplit("/", 1)[-1].endswith("mapping.json"):
        result.problems.append(f"{name}: a placeholder mapping inside the bundle")
    text = as_text(data)
    if text is None:
        result.problems.append(f"{name}: binary content, not scanned (a bundle holds text only)")
        return
    in_name = scanner.kinds(name, path=True)
    log = name.startswith(TAIL_KEPT)  # scanned as the bundle redacts logs (a raw hex key too)
    in_text = scanner.kinds(text, log=log)
    for kind in sorted(in_name):
        result.findings.append({"member": name, "line": 0, "kind": kind + " (member name)"})
    if in_text:
        result.findings.extend(scanner.lines(name, text, log))
    found = {k: in_name.get(k, 0) + in_text.get(k, 0) for k in {*in_name, *in_text}}
    if found:
        result.suspects[name] = dict(sorted(found.items()))
