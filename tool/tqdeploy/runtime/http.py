"""Tiny HTTP client for /health and /v1/models on the deployment's own address (no proxy: it is local)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def read_key(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def get(url: str, key: str | None = None, timeout: float = 2.0) -> tuple[int | None, bytes]:
    """(status or None when nothing answered, body)."""
    request = urllib.request.Request(url)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with _OPENER.open(request, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, b""
    except (OSError, ValueError):
        return None, b""


def health(base_url: str) -> int | None:
    return get(base_url + "/health")[0]


def served_models(base_url: str, key: str | None) -> list[str] | None:
    """Model ids /v1/models lists; None when it did not answer 200 with JSON."""
    status, body = get(base_url + "/v1/models", key)
    if status != 200:
        return None
    try:
        return [m["id"] for m in json.loads(body)["data"]]
    except (ValueError, KeyError, TypeError):
        return None
