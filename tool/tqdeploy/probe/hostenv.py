"""Model cache disk space, Hugging Face environment (secrets as present/absent only), mirror reach."""

from __future__ import annotations

import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# CPython has it (urllib/request.py) but typeshed leaves it out, as it is not in the documented API.
from urllib.request import proxy_bypass_environment  # type: ignore[attr-defined]

from tqdeploy.net.urls import shown_url

MIRROR_TIMEOUT_S = 2.0


def hf_cache_dir(env: Mapping[str, str]) -> Path:
    """Where huggingface_hub caches models: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def redact_url(url: str) -> str:
    """A mirror or proxy URL with user:password@ and any ?query cut out (net.urls.shown_url, on
    tqdeploy.redact's URL pattern): never raises, also on a URL that does not parse (`http://u:p@[::1`)."""
    return shown_url(url)


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


def proxy_for(url: str, env: Mapping[str, str]) -> str | None:
    """The proxy huggingface_hub's HTTP client would use for url: <scheme>_proxy, else ALL_PROXY, unless NO_PROXY
    matches (huggingface_hub 2.4 builds an httpx2 client that takes proxies from the environment:
    httpx2/_utils.py get_environment_proxies; a proxy without a scheme is taken as http://)."""

    def get(name: str) -> str | None:
        return env.get(name.lower()) or env.get(name.upper()) or None

    parts = urlsplit(url)
    proxy = get(f"{parts.scheme}_proxy") or get("all_proxy")
    no_proxy = get("no_proxy")
    if proxy and no_proxy and parts.hostname and proxy_bypass_environment(parts.hostname, {"no": no_proxy}):
        return None
    if proxy and "://" not in proxy:
        proxy = "http://" + proxy
    return proxy


def probe_mirror(
    endpoint: str, env: Mapping[str, str] | None = None, timeout: float = MIRROR_TIMEOUT_S
) -> dict[str, Any]:
    """One HEAD request to the endpoint's root, through the proxy the environment names.

    Any HTTP answer counts as reachable; the status is kept (a proxy that cannot reach the mirror answers
    502/503/504). The whole attempt, DNS included (socket timeouts do not cover name resolution), is
    bounded by running it in a daemon thread.
    """
    parts = urlsplit(endpoint)
    proxy = proxy_for(endpoint, env or {})
    out: dict[str, Any] = {
        "endpoint": redact_url(endpoint),
        "proxy": redact_url(proxy) if proxy else None,
        "reachable": False,
        "status": None,
        "error": "",
    }
    if parts.scheme not in ("http", "https") or not parts.hostname:
        out["error"] = "not an http(s) URL"
        return out
    answer: dict[str, Any] = {}
    t0 = time.perf_counter()
    worker = threading.Thread(target=_head, args=(endpoint, proxy, timeout, answer), daemon=True)
    worker.start()
    worker.join(timeout + 0.5)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    if worker.is_alive():
        out["error"] = f"no answer within {timeout} s (name resolution or connect)"
    elif "status" in answer:
        out["status"], out["reachable"] = answer["status"], True
    else:
        out["error"] = answer.get("error", "no answer")
    return out


def _head(url: str, proxy: str | None, timeout: float, answer: dict[str, Any]) -> None:
    handler = urllib.request.ProxyHandler({"http": proxy, "https": proxy} if proxy else {})
    opener = urllib.request.build_opener(handler)
    try:
        with opener.open(urllib.request.Request(url, method="HEAD"), timeout=timeout) as resp:
            answer["status"] = resp.status
    except urllib.error.HTTPError as exc:  # an HTTP answer, e.g. 404 at the root or 502 from a proxy
        answer["status"] = exc.code
    except Exception as exc:  # DNS failure, refused, timeout, TLS
        reason = getattr(exc, "reason", exc)
        answer["error"] = f"{type(reason).__name__}: {reason}"[:300]
