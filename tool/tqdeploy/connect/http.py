"""Small HTTP client for the checks (stdlib only): JSON requests and server-sent-event streams, timed."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    status: int  # 0: no HTTP answer at all (refused, timed out, DNS)
    body: Any = None  # parsed JSON, or the text when it was not JSON
    error: str = ""  # the transport error when status is 0


@dataclass
class Stream:
    status: int
    events: list[Any] = field(default_factory=list)  # parsed `data:` payloads, [DONE] excluded
    done: bool = False  # the stream ended with `data: [DONE]`
    first_byte_s: float | None = None  # from sending the request to the first body byte
    total_s: float = 0.0
    error: str = ""


def _request(url: str, key: str | None, body: dict | None, headers: dict[str, str] | None) -> urllib.request.Request:
    h = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        h["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode("utf-8") if body is not None else None
    return urllib.request.Request(url, data=data, headers=h, method="POST" if data is not None else "GET")


def _parse(raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def call(
    url: str, key: str | None, body: dict | None = None, *, headers: dict[str, str] | None = None, timeout: float = 60
) -> Reply:
    try:
        with urllib.request.urlopen(_request(url, key, body, headers), timeout=timeout) as resp:
            return Reply(resp.status, _parse(resp.read()))
    except urllib.error.HTTPError as err:
        return Reply(err.code, _parse(err.read()))
    except (OSError, urllib.error.URLError) as err:
        return Reply(0, error=str(getattr(err, "reason", err)))


def stream(
    url: str, key: str | None, body: dict, *, headers: dict[str, str] | None = None, timeout: float = 60
) -> Stream:
    """POST and read the SSE stream to its end; timeout applies to each read, as a proxy's does."""
    start = time.monotonic()
    result = Stream(0)
    try:
        with urllib.request.urlopen(_request(url, key, body, headers), timeout=timeout) as resp:
            result.status = resp.status
            chunks = []
            while chunk := resp.read1(65536):  # returns as soon as some bytes arrived (chunked decoding included)
                if result.first_byte_s is None:
                    result.first_byte_s = time.monotonic() - start
                chunks.append(chunk)
            _take_events(b"".join(chunks), result)
    except urllib.error.HTTPError as err:
        result.status = err.code
        result.error = str(_parse(err.read()))[:300]
    except (OSError, http.client.HTTPException) as err:  # a cut stream raises IncompleteRead
        result.error = f"{type(err).__name__}: {getattr(err, 'reason', err)}"[:300]
    result.total_s = time.monotonic() - start
    return result


def _take_events(raw: bytes, result: Stream) -> None:
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            result.done = True
        elif payload:
            result.events.append(_parse(payload.encode("utf-8")))
