"""The checks' requests, through the one client (tqdeploy.net): JSON requests and server-sent-event streams,
timed. The key goes only to the endpoint's origin, never through a redirect to another one; an answer that
echoes it has it replaced; answers are bounded in size and time."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.net import Client


@dataclass
class Reply:
    status: int  # 0: no HTTP answer at all (refused, timed out, DNS)
    body: Any = None  # parsed JSON, or the text when it was not JSON (the key replaced)
    error: str = ""  # the transport error when status is 0; a refused redirect or an oversized answer


@dataclass
class Stream:
    status: int
    events: list[Any] = field(default_factory=list)  # parsed `data:` payloads, [DONE] excluded
    done: bool = False  # the stream ended with `data: [DONE]`
    first_byte_s: float | None = None  # from sending the request to the first body line
    total_s: float = 0.0
    error: str = ""


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past json's recursion: the text as it came
        return text


def _client(url: str, key: str | None) -> Client:
    return Client(url, key, label="the endpoint URL")


def call(
    url: str,
    key: str | None,
    body: dict[str, Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 60,
) -> Reply:
    try:
        client = _client(url, key)
    except TQError as err:
        return Reply(0, error=err.message)
    answer = client.request("", body, timeout=timeout, limit=1 << 20, headers=headers)
    return Reply(answer.status, _parse(answer.text()) if answer.body else None, answer.error)


def stream(
    url: str, key: str | None, body: dict[str, Any], *, headers: dict[str, str] | None = None, timeout: float = 60
) -> Stream:
    """POST and read the SSE stream to its end, within ``timeout`` seconds in all."""
    start = time.monotonic()
    result = Stream(0)
    try:
        client = _client(url, key)
    except TQError as err:
        result.error = err.message
        return result
    with client.stream("", body, deadline=start + timeout, headers=headers) as st:
        result.status = st.status
        for line in st.lines():
            if result.first_byte_s is None:
                result.first_byte_s = time.monotonic() - start
            _take_event(line, result)
        result.error = st.error
    result.total_s = time.monotonic() - start
    return result


def _take_event(line: str, result: Stream) -> None:
    if not line.startswith("data:"):
        return
    payload = line[len("data:") :].strip()
    if payload == "[DONE]":
        result.done = True
    elif payload:
        result.events.append(_parse(payload))
