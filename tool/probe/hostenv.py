"""Model cache disk space, Hugging Face environment (secrets as present/absent only), mirror reach."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Mapping

MIRROR_TIMEOUT_S = 2.0


def hf_cache_dir(env: Mapping[str, str]) -> Path:
    """Where huggingface_hub caches models: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def redact_url(url: str) -> str:
    """Drop user:password@ from a URL: a mirror URL may carry credentials."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def probe_env(env: Mapping[str, str]) -> dict[str, Any]:
    # Never the token's value: only whether one is set (HF_TOKEN, or the older HUGGING_FACE_HUB_TOKEN).
    return {
        "hf_token_present": bool(env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN")),
        "hf_endpoint": redact_url(env["HF_ENDPOINT"]) if env.get("HF_ENDPOINT") else None,
        "hf_cache": str(hf_cache_dir(env)),
        "hf_hub_offline": env.get("HF_HUB_OFFLINE") or None,
    }


def probe_disk(path: Path) -> dict[str, Any]:
    """Free space on the filesystem that holds path (its nearest existing parent)."""
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    usage = shutil.disk_usage(probe)
    return {"path": str(path), "measured_at": str(probe), "free_bytes": usage.free, "total_bytes": usage.total}


def probe_mirror(endpoint: str, timeout: float = MIRROR_TIMEOUT_S) -> dict[str, Any]:
    """One HEAD request to the endpoint's root; any HTTP answer counts as reachable."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint)
    out: dict[str, Any] = {"endpoint": redact_url(endpoint), "reachable": False, "status": None, "error": ""}
    if parts.scheme not in ("http", "https") or not parts.hostname:
        out["error"] = "not an http(s) URL"
        return out
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    t0 = time.perf_counter()
    conn = conn_cls(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request("HEAD", parts.path or "/")
        out["status"] = conn.getresponse().status
        out["reachable"] = True
    except Exception as exc:  # DNS failure, refused, timeout, TLS
        out["error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        conn.close()
        out["seconds"] = round(time.perf_counter() - t0, 3)
    return out
