"""REPO@REV sources: config.json and safetensors headers from the Hub (or a mirror) without weights.

huggingface_hub reads HF_ENDPOINT once at import; the endpoint is passed explicitly here so that a
mirror set after import (or per call) is honoured. Safetensors headers come from
``HfApi.get_safetensors_metadata`` (HTTP range requests: the header only, never the tensors).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from tqdeploy.adaptors import hfhub
from tqdeploy.errors import TQError
from tqdeploy.idents import REVISION_RE, check_no_control
from tqdeploy.model.jsonfile import MAX_CONFIG_BYTES, parse_json, read_regular
from tqdeploy.model.safetensors_meta import bytes_by_dtype
from tqdeploy.net.urls import check_hf_endpoint_env, redact_hub_logs, shown_url

_REPO_RE = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+\Z")


def parse_repo_ref(source: str) -> tuple[str, str]:
    check_no_control("model", source, "pass a checkpoint folder or e.g. Qwen/Qwen3.6-27B@<commit sha or tag>")
    repo, _, rev = source.partition("@")
    if not _REPO_RE.match(repo) or not REVISION_RE.match(rev):
        raise TQError(
            f"model {source!r} is neither a folder nor REPO@REV",
            "pass a checkpoint folder or e.g. Qwen/Qwen3.6-27B@<commit sha or tag>",
        )
    return repo, rev


def _endpoint() -> str:
    """HF_ENDPOINT checked like a --mirror (an unparsable one is exit 2, shown without credentials)."""
    return check_hf_endpoint_env() or "https://huggingface.co"


def _shown_endpoint() -> str:
    return shown_url(_endpoint())


def _unreachable(repo: str, rev: str, exc: BaseException) -> TQError:
    name = type(exc).__name__
    offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
    if "RepositoryNotFound" in name or "GatedRepo" in name:
        return TQError(
            f"{repo} is not accessible on {_shown_endpoint()} ({name})",
            "check the repo id; for gated repos set HF_TOKEN (it is never printed)",
        )
    if "RevisionNotFound" in name:
        return TQError(
            f"revision {rev!r} of {repo} does not exist on {_shown_endpoint()}",
            "pass a commit sha, branch or tag that exists",
        )
    if "EntryNotFound" in name and "Local" not in name:
        return TQError(f"{repo}@{rev} has no config.json", "point --model at a model repository")
    why = "HF_HUB_OFFLINE is set" if offline else f"{_shown_endpoint()} is unreachable ({name})"
    return TQError(
        f"cannot fetch {repo}@{rev}: {why}",
        "download the checkpoint and pass its folder, or set HF_ENDPOINT to a reachable mirror",
    )


CONNECT_TIMEOUT_S = 5.0
_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def check_reachable(repo: str, rev: str, endpoint: str) -> None:
    """One TCP connect to the endpoint, bounded, before huggingface_hub: without a network its retries
    (1, 2, 4, 8, 8 s) print about 24 s of warnings before the same error. Skipped behind a proxy (the
    endpoint itself may be unreachable directly) and with HF_HUB_OFFLINE (the hub answers that at once)."""
    import socket
    from urllib.parse import urlsplit

    if any(os.environ.get(v) for v in _PROXY_VARS) or os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        return
    url = urlsplit(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise TQError(
            f"cannot fetch {repo}@{rev}: {_shown_endpoint()} is unreachable ({reason})",
            "download the checkpoint and pass its folder, or set HF_ENDPOINT to a reachable mirror",
        ) from None


def fetch_config(repo: str, rev: str) -> dict[str, Any]:
    endpoint = _endpoint()  # before the import: huggingface_hub parses HF_ENDPOINT when imported
    check_reachable(repo, rev, endpoint)
    redact_hub_logs()
    hfhub.disable_progress_bars()  # a bar for one small config.json is noise, and `plan --json` keeps stderr clean
    try:
        path = hfhub.hf_hub_download(repo, "config.json", revision=rev, endpoint=endpoint)
    except Exception as exc:  # huggingface_hub raises many transport types; all mean "not fetched"
        raise _unreachable(repo, rev, exc) from None

    fix = "check the repository"
    text = read_regular(Path(path), MAX_CONFIG_BYTES, fix)
    config: dict[str, Any] = parse_json(text, f"config.json of {repo}@{rev}", fix)
    return config  # build_facts refuses what is not an object (as _read_local_config's)


def fetch_weight_bytes(repo: str, rev: str) -> tuple[int | None, dict[str, int], str | None]:
    """Exact bytes per dtype from the repo's safetensors headers; (None, {}, None) when it has none."""
    endpoint = _endpoint()  # before the import: huggingface_hub parses HF_ENDPOINT when imported
    redact_hub_logs()
    try:
        meta = hfhub.safetensors_metadata(repo, revision=rev, endpoint=endpoint)
    except Exception as exc:
        if "NotASafetensorsRepo" in type(exc).__name__:
            return None, {}, None
        raise _unreachable(repo, rev, exc) from None

    per: dict[str, int] = {}
    for name, fmeta in meta.files_metadata.items():
        header = {t: {"dtype": i.dtype, "data_offsets": list(i.data_offsets)} for t, i in fmeta.tensors.items()}
        for dtype, size in bytes_by_dtype(header, f"{repo}@{rev}/{name}").items():
            per[dtype] = per.get(dtype, 0) + size
    return sum(per.values()), per, "hub metadata"
