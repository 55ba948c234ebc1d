"""The reference: what the same checkpoint answered with an unquantized KV cache, and the fingerprint that says
which deployment it belongs to. A reference whose fingerprint differs from the server's in any field is refused
(TQ486), never used as an approximation: another vLLM release, other model files or another dtype change the
perplexity by as much as the bounds allow.

The fingerprint: the model files (name, size and sha256 of each file vLLM reads: weights, config, tokenizer),
the vLLM release the server reports (/version), the model dtype and the flags that change answers. The KV dtype
is not in it: the reference is always recorded with kv_cache_dtype auto, and checked against any.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.resources import package_data
from tqdeploy.safeio import read_bytes

SCHEMA = "tqdeploy.answers-reference/1"
REFERENCE_LIMIT = 1 << 20
# What vLLM reads from a checkpoint folder: weights, configs, tokenizer and chat template. READMEs, images and
# tqdeploy's own records (tqdeploy-*.json: the demo model's manifest, the download's) do not change an answer.
MODEL_SUFFIXES = (".safetensors", ".json", ".jinja", ".model", ".txt", ".bin", ".tiktoken")
# compared lower-cased: a model card may be readme.md or README.MD
SKIPPED_NAMES = frozenset({".tqdeploy", "readme.md", ".gitattributes"})
MAX_MODEL_FILES = 4096


def model_files_digest(model_dir: Path, cache: Path | None = None) -> dict[str, Any]:
    """{"files": {name: {"size", "sha256"}}, "sha256": one digest over them}; TQError for a folder that cannot be
    read. Regular files only (a symlink is followed only when it stays inside the folder), so nothing outside
    the model is read. ``cache``: a file of earlier digests (the build's own), reused for a file whose size and
    mtime are unchanged: hashing 55 GB of weights takes a minute, and `up` checks after every start."""
    known = _read_cache(cache)
    root = Path(model_dir).resolve()
    if not root.is_dir():
        raise TQError(f"model folder {model_dir} not found", "pass the build whose model is downloaded")
    files: dict[str, dict[str, Any]] = {}
    for path in sorted(root.iterdir()):
        skipped = path.name.lower() in SKIPPED_NAMES or path.name.startswith("tqdeploy-")
        if skipped or not path.name.endswith(MODEL_SUFFIXES):
            continue
        real = path.resolve()
        if not real.is_file() or (path.is_symlink() and root not in real.parents):
            continue
        if len(files) >= MAX_MODEL_FILES:
            raise TQError(f"model folder {model_dir} holds more than {MAX_MODEL_FILES} files", "point at the model")
        st = real.stat()
        stamp = [str(real), st.st_size, st.st_mtime_ns]
        old = known.get(path.name)
        digest = old["sha256"] if isinstance(old, dict) and old.get("stamp") == stamp else _sha256(real)
        files[path.name] = {"size": st.st_size, "sha256": digest, "stamp": stamp}
    if not files:
        raise TQError(f"model folder {model_dir} holds no model files", "pass the build whose model is downloaded")
    if cache is not None and files != known:
        atomic_write_text(cache, json.dumps(files, sort_keys=True) + "\n")
    out = {name: {"size": f["size"], "sha256": f["sha256"]} for name, f in files.items()}
    overall = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()
    return {"files": out, "sha256": overall}


def _read_cache(cache: Path | None) -> dict[str, Any]:
    """The digests recorded last time; {} when there are none or the file is not what this module writes."""
    if cache is None or not cache.is_file():
        return {}

    try:
        data = json.loads(read_bytes(cache, REFERENCE_LIMIT, "model digest cache"))
    except (TQError, ValueError):
        return {}
    ok = isinstance(data, dict) and all(
        isinstance(v, dict) and isinstance(v.get("sha256"), str) and len(v["sha256"]) == 64 for v in data.values()
    )
    return data if ok else {}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Fingerprint:
    model_sha256: str | None  # None: the model files could not be read here (a remote server)
    vllm_version: str | None
    dtype: str | None
    flags: dict[str, str] = field(default_factory=dict)  # flags that change answers, as vLLM takes them

    def to_dict(self) -> dict[str, Any]:
        return {
            "model_sha256": self.model_sha256,
            "vllm_version": self.vllm_version,
            "dtype": self.dtype,
            "flags": dict(sorted(self.flags.items())),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Fingerprint:
        if not isinstance(data, dict):
            raise ValueError("fingerprint is not an object")
        flags = data.get("flags") or {}
        if not isinstance(flags, dict) or not all(isinstance(v, str) for v in flags.values()):
            raise ValueError("fingerprint.flags is not an object of strings")
        model, version, dtype = (data.get(k) for k in ("model_sha256", "vllm_version", "dtype"))
        if not all(v is None or isinstance(v, str) for v in (model, version, dtype)):
            raise ValueError("fingerprint fields are not strings")
        return cls(model, version, dtype, {str(k): v for k, v in flags.items()})

    def differences(self, other: Fingerprint) -> dict[str, list[Any]]:
        """Each field that differs, or that either side could not establish: {field: [reference, server]}."""
        mine, theirs = self.to_dict(), other.to_dict()
        out: dict[str, list[Any]] = {}
        for name in ("model_sha256", "vllm_version", "dtype"):
            if mine[name] is None or theirs[name] is None or mine[name] != theirs[name]:
                out[name] = [mine[name], theirs[name]]
        for flag in sorted(set(self.flags) | set(other.flags)):
            if self.flags.get(flag) != other.flags.get(flag):
                out[f"flags.{flag}"] = [self.flags.get(flag), other.flags.get(flag)]
        return out


@dataclass
class Reference:
    fingerprint: Fingerprint
    text_sha256: str  # the passage the perplexity was measured on
    tokens: int  # how many of its tokens were scored
    perplexity: float
    answers: dict[str, str] = field(default_factory=dict)  # prompt id -> the greedy answer's text
    recorded_at: str = ""
    source: str = ""  # where it was loaded from (not stored)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "fingerprint": self.fingerprint.to_dict(),
            "text_sha256": self.text_sha256,
            "tokens": self.tokens,
            "perplexity": round(self.perplexity, 4),
            "answers": self.answers,
            "recorded_at": self.recorded_at,
        }

    @classmethod
    def from_dict(cls, data: Any, source: str) -> Reference:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} file")
        ppl, tokens = data.get("perplexity"), data.get("tokens")
        if isinstance(ppl, bool) or not isinstance(ppl, (int, float)) or not 1.0 <= ppl < 1e9:
            raise ValueError("perplexity is not a number >= 1")
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= 1 << 20:
            raise ValueError("tokens is not a count")
        answers = data.get("answers") or {}
        if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
            raise ValueError("answers is not an object of strings")
        text_sha = data.get("text_sha256")
        if not isinstance(text_sha, str):
            raise ValueError("text_sha256 is missing")
        return cls(
            Fingerprint.from_dict(data.get("fingerprint")),
            text_sha,
            tokens,
            float(ppl),
            {str(k)[:64]: v[:4096] for k, v in answers.items()},
            str(data.get("recorded_at", ""))[:64],
            source,
        )


def load_reference(path: Path) -> Reference:
    """A reference file, bounded and validated; TQError naming the file otherwise."""
    fix = "record one with `tqdeploy check BUILD --record-reference`, or pass another --reference"
    raw = read_bytes(path, REFERENCE_LIMIT, "reference file", follow_symlinks=True)
    try:
        data = json.loads(raw.decode("utf-8"))
        return Reference.from_dict(data, str(path))
    except (ValueError, UnicodeDecodeError) as err:
        raise TQError(f"reference {path} is not usable: {err}", fix) from None


def save_reference(ref: Reference, path: Path) -> None:
    """Written to a temp file beside it and renamed into place: never half a reference."""
    atomic_write_text(path, json.dumps(ref.to_dict(), indent=2, sort_keys=True) + "\n")


def shipped_references() -> list[Path]:
    """The references that ship with tqdeploy (the demo model's, per vLLM release)."""
    folder = package_data("tqdeploy.answers", "data") / "references"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []
