"""/health, /v1/models and /metrics of a deployment on its own address, through the one client (tqdeploy.net):
the key only to that origin, no proxy for loopback, answers bounded in size and time."""

from __future__ import annotations

from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.net import Answer, Client, model_ids
from tqdeploy.net.client import METRICS_LIMIT
from tqdeploy.safeio import read_key_file


def read_key(path: Path | None) -> str | None:
    """The deployment's key from its key file (safeio's rules); None without a usable one: up's pre-flight
    (TQ413) has already said why, and a request without a key then gets the server's 401 (TQ468)."""
    if path is None:
        return None

    try:
        return read_key_file(path)
    except TQError:
        return None


def client(base_url: str, key: str | None = None) -> Client | None:
    """A client for the state's or the build's base URL; None when that is no http(s) URL (nothing to ask)."""
    try:
        return Client(base_url, key, label="base_url")
    except TQError:
        return None


def fetch(base_url: str, path: str, key: str | None = None, timeout: float = 2.0, limit: int = 1 << 20) -> Answer:
    c = client(base_url, key)
    if c is None:
        return Answer("base_url", 0, error="the base URL is not an http(s) URL with a host")
    return c.get(path, timeout=timeout, limit=limit)


def health(base_url: str, key: str | None = None) -> int | None:
    """/health's status, None when nothing answered."""
    return fetch(base_url, "/health", key).status or None


def models_answer(base_url: str, key: str | None) -> Answer:
    return fetch(base_url, "/v1/models", key, timeout=5.0)


def served_models(base_url: str, key: str | None) -> list[str] | None:
    """Model ids /v1/models lists; None when it did not answer 200 with that JSON shape."""
    return model_ids(models_answer(base_url, key))


def metrics_text(base_url: str, key: str | None = None, timeout: float = 5.0) -> str | None:
    """vLLM's /metrics text; None when it did not answer 200 within the size limit."""
    answer = fetch(base_url, "/metrics", key, timeout=timeout, limit=METRICS_LIMIT)
    return answer.text() if answer.ok else None
