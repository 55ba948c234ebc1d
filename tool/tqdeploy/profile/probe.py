"""What tqdeploy measures itself at the end of a start: the first /health 200 and the first token of a
probe request, on the same wall clock as the stamped log (time.time())."""

from __future__ import annotations

import time
import urllib.request

from tqdeploy.profile.load import served_model, stream_one
from tqdeploy.profile.timeline import Event


def wait_healthy(base_url: str, timeout_s: float, poll_s: float = 0.25) -> float | None:
    """Wall time of the first /health 200, or None if it never came."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base_url + "/health", timeout=2) as resp:
                if resp.status == 200:
                    return time.time()
        except OSError:
            pass
        time.sleep(poll_s)
    return None


def first_token_probe(base_url: str) -> tuple[float | None, str | None]:
    """Wall time of the first streamed token of a 4-token probe completion, and the error if none came."""
    model = served_model(base_url)
    offset = time.time() - time.perf_counter()
    result = stream_one(base_url, model, [11, 12, 13, 14], 4)
    if not result["arrivals"]:
        return None, result["error"] or "no token streamed"
    return result["arrivals"][0] + offset, None


def probe_events(base_url: str, timeout_s: float) -> list[Event]:
    events: list[Event] = []
    healthy = wait_healthy(base_url, timeout_s)
    if healthy is None:
        return events
    events.append(Event("health", "first /health 200", -1, healthy, "probe"))
    token_at, _ = first_token_probe(base_url)
    if token_at is not None:
        events.append(Event("first_token", "first token", -1, token_at, "probe"))
    return events
