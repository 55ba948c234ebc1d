"""What tqdeploy measures itself at the end of a start: the first /health 200 and the first token of a
probe request, on the same wall clock as the stamped log (time.time())."""

from __future__ import annotations

import time

from tqdeploy.net import Answer, Client
from tqdeploy.profile.events import Event
from tqdeploy.profile.load import served_model, stream_one

PROBE_TIMEOUT_S = 60


def wait_healthy(client: Client, timeout_s: float, poll_s: float = 0.25) -> float | None:
    """Wall time of the first /health 200, or None if it never came."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.get("/health", timeout=2).status == 200:
            return time.time()
        time.sleep(poll_s)
    return None


def first_token_probe(client: Client) -> tuple[float | None, str | None, Answer | None]:
    """Wall time of the first streamed token of a 4-token probe completion, the error if none came, and the
    /v1/models answer when that already failed (a refused key: the caller's finding)."""
    model, answer = served_model(client)
    if model is None:
        return None, f"/v1/models: {answer.detail(120) or f'HTTP {answer.status}'}", answer
    offset = time.time() - time.perf_counter()
    result = stream_one(client, model, [11, 12, 13, 14], 4, time.monotonic() + PROBE_TIMEOUT_S)
    if not result["arrivals"]:
        return None, result["error"] or "no token streamed", None
    return result["arrivals"][0] + offset, None, None


def probe_events(client: Client, timeout_s: float) -> list[Event]:
    events: list[Event] = []
    healthy = wait_healthy(client, timeout_s)
    if healthy is None:
        return events
    events.append(Event("health", "first /health 200", -1, healthy, "probe"))
    token_at, _, _ = first_token_probe(client)
    if token_at is not None:
        events.append(Event("first_token", "first token", -1, token_at, "probe"))
    return events
