"""No file that holds a secret leaves the volume (the volume carry's rule, scripts/gpu/tools/volume_carry.py).

vLLM 0.25.0 hashes every VLLM_* variable, VLLM_API_KEY included, into the compile key and writes them to
cache_key_factors.json on the volume (0.32.0 ignores VLLM_API_KEY: vllm/envs.py compile_factors); serve.sh
keeps the key out of the environment, but a volume filled by another launcher may still hold it. So every file
is scanned for: the build's key and its encodings (redact/keys.py encodings: URL, base64, hex, JSON), the values
of the token variables set here (HF_TOKEN...), and the token formats and private-key markers the redactor knows
(redact/rules.py TOKENS, redact/keys.py BEGIN). Files are read whole: the caches are small artefacts (459 files,
89 MB after an H200 start) and the total is bounded by pack.MAX_UNPACKED.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from tqdeploy.redact.keys import BEGIN, encodings
from tqdeploy.redact.rules import TOKENS

TOKEN_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "NGC_API_KEY", "OPENAI_API_KEY")


def needles(key: str | None, env: dict[str, str] | None = None) -> list[bytes]:
    """The literal secrets to look for: the build's key and the token variables of this environment, each with
    its encodings."""
    env = dict(os.environ) if env is None else env
    values = [v.strip() for v in [key or "", *(env.get(n, "") for n in TOKEN_ENV)] if v and len(v.strip()) >= 8]
    out: set[bytes] = set()
    for v in values:
        out.add(v.encode("utf-8"))
        out.update(form.encode("utf-8") for form in encodings(v))
    return sorted(out)


def holds_secret(data: bytes, literals: Iterable[bytes]) -> str | None:
    """Why data is refused ("the build's key", "a token"...), or None."""
    if any(lit in data for lit in literals):
        return "the build's key or a token variable's value"
    text = data.decode("latin-1")
    if BEGIN.search(text):
        return "a private key"
    if TOKENS.search(text):
        return "a token of a known issuer (hf_, ghp_, sk-, AKIA...)"
    return None


def files_holding(root: Path, rels: Iterable[str], literals: list[bytes]) -> list[tuple[str, str]]:
    """(path, why) for each file under root (relative paths given) that holds a secret."""
    found = []
    for rel in rels:
        why = holds_secret((root / rel).read_bytes(), literals)
        if why:
            found.append((rel, why))
    return found
