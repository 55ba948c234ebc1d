"""One HTTP client for talking to a deployment: connect, status, up's readiness and drain, profile, bundle.

What it guarantees, whatever the server does:
- only http(s) URLs with a host (net/urls.py check_url); a URL's user or password is never shown;
- the API key goes only to the deployment's own origin (scheme, host, port): a redirect to another origin
  is not followed (its answer says so), a same-origin one at most MAX_REDIRECTS times;
- no proxy for a loopback address (a proxy from the environment would see the key and the traffic of a
  local deployment); other hosts use the environment's proxy settings, as any HTTP client there would;
- every answer is bounded in bytes and in time (an overall deadline, not only a per-read timeout), and
  wherever the key comes back (a server that echoes request headers) it is replaced before anyone sees it;
- a failure is an Answer with status 0 and an error, never an exception: callers turn it into a finding.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from tqdeploy.net.urls import check_url, is_loopback, origin, redact_url, same_origin

KIB = 1024
MIB = 1024 * KIB
MAX_REDIRECTS = 3
JSON_LIMIT = 1 * MIB  # /v1/models, a completion, /version: kilobytes
METRICS_LIMIT = 4 * MIB  # vLLM's /metrics is tens to hundreds of KiB
LINE_LIMIT = 1 * MIB  # one server-sent event
STREAM_LIMIT = 64 * MIB
KEY_PLACEHOLDER = "<api-key>"


class RedirectRefused(Exception):
    def __init__(self, code: int, location: str):
        super().__init__(f"HTTP {code}: redirected to another origin ({redact_url(location)}); not followed")
        self.code = code


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    max_redirections = MAX_REDIRECTS  # distinct URLs
    max_repeats = MAX_REDIRECTS  # the same URL again (a loop)

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not same_origin(req.full_url, newurl):
            fp.close()
            raise RedirectRefused(code, newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


@dataclass
class Answer:
    url: str  # redacted
    status: int  # the HTTP status; 0 when no HTTP answer came (refused, timed out, unreadable)
    body: bytes = b""  # at most the limit asked for, the key replaced
    error: str = ""  # why there is no usable answer: transport, size, deadline, refused redirect

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.error

    @property
    def key_refused(self) -> bool:
        return self.status in (401, 403)

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The parsed body; None when it is not JSON, or nested past what json's recursion parses (a server
        answering 100,000 "[" once raised RecursionError through every caller)."""
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            return None

    def detail(self, chars: int = 200) -> str:
        """What to show of the answer: the error, else the start of the body (already scrubbed)."""
        return (self.error or self.text())[:chars]


def _socket_of(resp: Any) -> socket.socket | None:
    """The response's socket (http.client keeps it in fp.raw._sock), to give each read the time left."""
    sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def _time_left(resp: Any, deadline: float, read_timeout: float | None = None) -> None:
    """Give the next read the time left before the deadline (and at most read_timeout of silence)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the answer did not complete in time")
    sock = _socket_of(resp)
    if sock is not None:
        sock.settimeout(min(left, read_timeout) if read_timeout else left)


def _reason(err: BaseException) -> str:
    reason = getattr(err, "reason", None) or err
    return f"{type(err).__name__}: {redact_url(reason)}"[:300]


class Client:
    """Requests to one deployment origin, with its key (None: none sent)."""

    def __init__(self, base_url: str, key: str | None = None, *, label: str = "--url"):
        self.base_url = check_url(base_url, label)
        self.origin = origin(self.base_url)
        self._key = key
        proxies = urllib.request.ProxyHandler({}) if is_loopback(self.origin.host) else urllib.request.ProxyHandler()
        self._opener = urllib.request.build_opener(proxies, _SameOriginRedirects())

    @property
    def shown_url(self) -> str:
        return redact_url(self.base_url)

    @property
    def has_key(self) -> bool:
        return self._key is not None

    def scrub(self, data: bytes) -> bytes:
        """The answer with the key replaced, wherever the server put it, and a start of it at the very end
        (an answer cut at its size limit in the middle of an echoed key)."""
        if not self._key:
            return data
        key, mark = self._key.encode(), KEY_PLACEHOLDER.encode()
        data = data.replace(key, mark)
        for n in range(len(key) - 1, 3, -1):
            if data.endswith(key[:n]):
                return data[:-n] + mark
        return data

    def _request(
        self, path: str, body: dict[str, Any] | None, headers: dict[str, str] | None
    ) -> urllib.request.Request:
        h = {"Content-Type": "application/json", **(headers or {})} if body is not None else dict(headers or {})
        if self._key is not None:
            h["Authorization"] = f"Bearer {self._key}"
        data = json.dumps(body).encode("utf-8") if body is not None else None
        return urllib.request.Request(self.base_url + path, data=data, headers=h, method="POST" if data else "GET")

    def get(
        self, path: str, *, timeout: float = 10.0, limit: int = JSON_LIMIT, headers: dict[str, str] | None = None
    ) -> Answer:
        return self.request(path, None, timeout=timeout, limit=limit, headers=headers)

    def post(
        self,
        path: str,
        body: dict[str, Any],
        *,
        timeout: float = 60.0,
        limit: int = JSON_LIMIT,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        return self.request(path, body, timeout=timeout, limit=limit, headers=headers)

    def request(
        self,
        path: str,
        body: dict[str, Any] | None,
        *,
        timeout: float,
        limit: int,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        """One request, its answer read to at most ``limit`` bytes within ``timeout`` seconds overall."""
        url = redact_url(self.base_url + path)
        deadline = time.monotonic() + timeout
        try:
            with self._opener.open(self._request(path, body, headers), timeout=timeout) as resp:
                return self._read(url, resp.status, resp, limit, deadline)
        except urllib.error.HTTPError as err:
            with err:
                return self._read(url, err.code, err, limit, deadline)
        except RedirectRefused as err:
            return Answer(url, err.code, error=str(err))
        except (OSError, http.client.HTTPException, ValueError) as err:  # URLError is an OSError
            return Answer(url, 0, error=_reason(err))

    def _read(self, url: str, status: int, resp: Any, limit: int, deadline: float) -> Answer:
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                _time_left(resp, deadline)
                chunk = resp.read1(min(64 * KIB, limit + 1 - size)) if hasattr(resp, "read1") else resp.read(limit + 1)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    body = self.scrub(b"".join(chunks)[:limit])
                    return Answer(url, status, body, f"answer larger than {limit} bytes")
        except (OSError, http.client.HTTPException, ValueError) as err:
            return Answer(url, status, self.scrub(b"".join(chunks)), _reason(err))
        return Answer(url, status, self.scrub(b"".join(chunks)))

    @contextmanager
    def stream(
        self,
        path: str,
        body: dict[str, Any],
        *,
        deadline: float,
        read_timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Iterator[Stream]:
        """POST, then read the answer line by line as it arrives, until its end or the monotonic ``deadline``
        (and, with ``read_timeout``, until a silence that long): a server that sends headers and then stalls
        is given up on at whichever comes first."""
        url = redact_url(self.base_url + path)
        stream = Stream(url, 0, self)
        try:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no time left for the request")
            timeout = min(left, read_timeout) if read_timeout else left
            resp = self._opener.open(self._request(path, body, headers), timeout=timeout)
        except urllib.error.HTTPError as err:
            with err:
                answer = self._read(url, err.code, err, JSON_LIMIT, min(deadline, time.monotonic() + 10))
            stream.status, stream.error = err.code, answer.detail(300) or f"HTTP {err.code}"
            yield stream
            return
        except RedirectRefused as err:
            stream.status, stream.error = err.code, str(err)
            yield stream
            return
        except (OSError, http.client.HTTPException, ValueError) as err:
            stream.error = _reason(err)
            yield stream
            return
        with resp:
            stream.status, stream._resp, stream._deadline = resp.status, resp, deadline
            stream._read_timeout = read_timeout
            yield stream


class Stream:
    """An answer read line by line (server-sent events): status, then lines() until the end or the deadline."""

    def __init__(self, url: str, status: int, client: Client):
        self.url = url
        self.status = status
        self.error = ""
        self.stalled = False  # the stream stopped because nothing more came before the deadline
        self._client = client
        self._resp: Any = None
        self._deadline = 0.0
        self._read_timeout: float | None = None

    def lines(self) -> Iterator[str]:
        """Each line as it arrives (key scrubbed); sets ``error`` when the stream was cut, stalled or too big."""
        if self._resp is None:
            return
        total = 0
        try:
            while True:
                _time_left(self._resp, self._deadline, self._read_timeout)
                raw = self._resp.readline(LINE_LIMIT + 1)
                if not raw:
                    return
                total += len(raw)
                if len(raw) > LINE_LIMIT or total > STREAM_LIMIT:
                    self.error = f"answer line or stream larger than the limit ({LINE_LIMIT} / {STREAM_LIMIT} bytes)"
                    return
                yield self._client.scrub(raw).decode("utf-8", errors="replace").rstrip("\r\n")
        except (OSError, http.client.HTTPException, ValueError) as err:  # a cut stream raises IncompleteRead
            self.error = _reason(err)
            self.stalled = isinstance(err, TimeoutError)  # socket.timeout is TimeoutError: nothing came in time
