"""REPO@REV sources: config.json and safetensors headers from the Hub (or a mirror) without weights.

huggingface_hub reads HF_ENDPOINT once at import; the endpoint is passed explicitly here so that a
mirror set after import (or per call) is honoured. Safetensors headers come from
``HfApi.get_safetensors_metadata`` (HTTP range requests: the header only, never the tensors).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from tqdeploy.errors import TQError

_REPO_RE = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def parse_repo_ref(source: str) -> tuple[str, str]:
    repo, _, rev = source.partition("@")
    if not _REPO_RE.match(repo) or not rev or "@" in rev:
        raise TQError(
            f"model {source!r} is neither a folder nor REPO@REV",
            "pass a checkpoint folder or e.g. Qwen/Qwen3.6-27B@<commit sha or tag>",
        )
    return repo, rev


def _endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "").rstrip("/") or "https://huggingface.co"


def _unreachable(repo: str, rev: str, exc: BaseException) -> TQError:
    name = type(exc).__name__
    offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
    if "RepositoryNotFound" in name or "GatedRepo" in name:
        return TQError(
            f"{repo} is not accessible on {_endpoint()} ({name})",
            "check the repo id; for gated repos set HF_TOKEN (it is never printed)",
        )
    if "RevisionNotFound" in name:
        return TQError(
            f"revision {rev!r} of {repo} does not exist on {_endpoint()}",
            "pass a commit sha, branch or tag that exists",
        )
    if "EntryNotFound" in name and "Local" not in name:
        return TQError(f"{repo}@{rev} has no config.json", "point --model at a model repository")
    why = "HF_HUB_OFFLINE is set" if offline else f"{_endpoint()} is unreachable ({name})"
    return TQError(
        f"cannot fetch {repo}@{rev}: {why}",
        "download the checkpoint and pass its folder, or set HF_ENDPOINT to a reachable mirror",
    )


def fetch_config(repo: str, rev: str) -> dict[str, Any]:
    from huggingface_hub import hf_hub_download

    try:
        path = hf_hub_download(repo, "config.json", revision=rev, endpoint=_endpoint())
    except Exception as exc:  # huggingface_hub raises many transport types; all mean "not fetched"
        raise _unreachable(repo, rev, exc) from None
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TQError(f"config.json of {repo}@{rev} is not valid JSON ({exc})", "check the repository") from None


def fetch_weight_bytes(repo: str, rev: str) -> tuple[int | None, dict[str, int], str | None]:
    """Exact bytes per dtype from the repo's safetensors headers; (None, {}, None) when it has none."""
    from huggingface_hub import HfApi

    try:
        meta = HfApi(endpoint=_endpoint()).get_safetensors_metadata(repo, revision=rev)
    except Exception as exc:
        if "NotASafetensorsRepo" in type(exc).__name__:
            return None, {}, None
        raise _unreachable(repo, rev, exc) from None
    per: dict[str, int] = {}
    for fmeta in meta.files_metadata.values():
        for info in fmeta.tensors.values():
            start, end = info.data_offsets
            per[info.dtype] = per.get(info.dtype, 0) + int(end) - int(start)
    return sum(per.values()), per, "hub metadata"
