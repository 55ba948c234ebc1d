"""Private keys of every kind, and the encoded forms of a known secret, for tqdeploy.redact.

Private keys are found by their markers (PEM `-----BEGIN ... PRIVATE KEY-----`, PGP `... PRIVATE KEY BLOCK`,
PuTTY `PuTTY-User-Key-File-N:`) and, where a tail window cut the BEGIN line off, by their body: two or more
lines of base64 of key width (40-100 characters, mixed case), or base64 lines just before an END line. A
stamped log line (`EPOCH.mmm|`) keeps its stamp shape: the stamp is part of the line, not of the key.
A block is dropped whole, `[private-key dropped]` in its place.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from urllib.parse import quote, quote_plus

DROPPED = "[private-key dropped]"
_STAMP = r"(?:\d{9,11}\.\d{3}\|)?"
BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d{1,2}:")
# A line inside a key block: base64, a PEM/PGP/PuTTY header (Proc-Type:, Comment:, Private-Lines: 14), blank.
_INSIDE = re.compile(_STAMP + r"[ \t]{0,8}(?:[A-Za-z0-9+/=]{1,120}|[A-Za-z][\w-]{0,40}: [^\n]{0,200}|)[ \t]{0,8}\r?")
_END = re.compile(_STAMP + r"[ \t]{0,8}-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
BODY_RUN = re.compile(
    r"(?m)^(?:" + _STAMP + r"[A-Za-z0-9+/]{40,100}={0,2}[ \t]{0,8}\r?\n){2,}"
    r"(?:" + _STAMP + r"(?=[^\n]{0,120}[A-Z0-9+/=])[A-Za-z0-9+/]{1,100}={0,2}[ \t]{0,8}(?:\r?\n|\Z))?"
    r"(?:" + _STAMP + r"[ \t]{0,8}-----END [A-Z0-9 ]{0,40}-----[^\n]{0,8}(?:\n|\Z))?"
)
END_LINE = re.compile(r"(?m)^" + _END.pattern + r"[^\n]{0,8}$")


def _block_end(text: str, start: int) -> int:
    """Where a key block that begins at ``start`` ends: after its END line (PEM/PGP), its Private-MAC line
    (PuTTY), or the first line that cannot be part of a key."""
    pos = text.find("\n", start)
    if pos < 0:
        return len(text)
    pos += 1
    while pos < len(text):
        nl = text.find("\n", pos)
        line = text[pos : nl if nl >= 0 else len(text)]
        stop = nl + 1 if nl >= 0 else len(text)
        if _END.match(line) or line.startswith(("Private-MAC:", "Private-Hash:")):
            return stop
        if not _INSIDE.fullmatch(line):
            return pos
        pos = stop
    return len(text)


def _dropped_before_end(text: str, end: re.Match[str]) -> tuple[int, int]:
    """An END line whose BEGIN was cut off: the base64 lines above it belong to it too."""
    start = end.start()
    first = True  # the line just above END may be short; the ones above it are of key width
    while start > 0:
        prev = text.rfind("\n", 0, start - 1) + 1
        line = text[prev : start - 1]
        width = "{1,120}" if first else "{40,120}"
        if not line or not re.fullmatch(_STAMP + r"[A-Za-z0-9+/=]" + width + r"\r?", line):
            break
        start, first = prev, False
    stop = end.end() + 1 if text.startswith("\n", end.end()) else end.end()
    return start, stop


def drop_private_keys(text: str) -> tuple[str, int]:
    """The text with every private key block replaced by DROPPED, and how many were."""
    count = 0
    if "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text:
        out, pos = [], 0
        for m in BEGIN.finditer(text):
            if m.start() < pos:
                continue
            stop = _block_end(text, m.start())
            out.append(text[pos : m.start()] + DROPPED + ("\n" if text[stop - 1 : stop] == "\n" else ""))
            pos, count = stop, count + 1
        text = "".join(out) + text[pos:]
        if "-----END" in text:
            spans = [_dropped_before_end(text, e) for e in END_LINE.finditer(text)]
            for start, stop in reversed(spans):
                text = text[:start] + DROPPED + ("\n" if text[stop - 1 : stop] == "\n" else "") + text[stop:]
                count += 1
    found: list[tuple[int, int]] = []
    for m in BODY_RUN.finditer(text):
        body = m.group(0)
        if re.search("[a-z]", body) and re.search("[A-Z]", body) and re.search("[0-9+/]", body):
            found.append(m.span())
    for start, stop in reversed(found):
        text = text[:start] + DROPPED + "\n" + text[stop:]
        count += 1
    return text, count


def encodings(value: str) -> list[str]:
    """The forms a secret takes in another file: URL-encoded, base64 (standard, URL-safe, unpadded), hex,
    JSON-escaped. Only forms that differ from the value and are long enough to be unambiguous."""
    raw = value.encode("utf-8")
    forms = {
        quote(value, safe=""),
        quote_plus(value),
        quote(value, safe="/:"),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        raw.hex(),
        raw.hex().upper(),
    }
    for enc in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        forms.add(enc.decode())
        forms.add(enc.decode().rstrip("="))
    return sorted(f for f in forms if f != value and len(f) >= 6)


def decode_blob(blob: str) -> str | None:
    """A base64 word's text (printable ASCII), or None: what a Docker auth or a Basic credential holds."""
    if len(blob) % 4 or not (re.search("[a-z]", blob) and re.search("[A-Z]", blob)):
        return None
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return None
    return text if text.isprintable() and len(text) >= 3 else None
