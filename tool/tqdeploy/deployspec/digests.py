"""Base image digests kept as data (dockerfiles/base-digests.toml), pinned when a spec gives a tag only.

Precedence: the spec's own image.digest, then this table; `build --resolve-digests` replaces either
with what the registry answers. The loaded spec records where its digest came from (digest_source),
and the lock repeats it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from tqdeploy.deployspec.model import Spec
from tqdeploy.errors import TQError
from tqdeploy.resources import data_dir

DIGESTS_FILE = "base-digests.toml"
_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}\Z")


@dataclass(frozen=True)
class KnownDigest:
    ref: str
    digest: str
    read: str  # where and when it was read from a registry


def digests_path() -> Path:
    return data_dir("dockerfiles") / DIGESTS_FILE


def known_digests(path: Path | None = None) -> dict[str, KnownDigest]:
    """ref -> KnownDigest; a malformed file is a TQError naming the file and the entry."""
    path = Path(path) if path is not None else digests_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as err:
        raise TQError(f"{path}: invalid TOML: {err}", "fix the digest table (see the comment at its top)") from None
    table: dict[str, KnownDigest] = {}
    for number, entry in enumerate(data.get("image", []), start=1):
        ok = (
            isinstance(entry, dict)
            and set(entry) == {"ref", "digest", "read"}
            and all(isinstance(v, str) and v for v in entry.values())
            and _DIGEST_RE.match(entry["digest"])
        )
        if not ok:
            raise TQError(
                f'{path}: [[image]] entry {number} must have ref, digest = "sha256:<64 hex>" and read',
                "fix or remove that entry",
            )
        if entry["ref"] in table:
            raise TQError(f"{path}: {entry['ref']} is listed twice", "keep one entry per image reference")
        table[entry["ref"]] = KnownDigest(entry["ref"], entry["digest"], entry["read"])
    return table


def with_digest(spec: Spec, digest: str, source: str) -> Spec:
    """The spec with image.digest pinned, and where that digest came from (the lock repeats it)."""
    return replace(spec, image=replace(spec.image, digest=digest), digest_source=source)


def apply_known_digest(spec: Spec, table: dict[str, KnownDigest] | None = None) -> Spec:
    """The spec with image.digest from the table when it has none, and the digest's source recorded."""
    if spec.image.digest:
        return replace(spec, digest_source="spec")
    table = known_digests() if table is None else table
    known = table.get(spec.image.base)
    if known is None:
        return spec
    return with_digest(spec, known.digest, f"tqdeploy data {DIGESTS_FILE} (read from {known.read})")
