"""Small real HTTP servers on 127.0.0.1 (http.server in a thread) that answer as hostile or odd servers do:
redirect elsewhere, echo the request's headers, send huge or malformed answers, stall mid-stream. Each
records the requests it received (path and headers), so a test can prove what reached it: the key or not."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# vLLM-like /metrics: the cache config info gauge and the load gauges profile reads
METRICS = (
    "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
    "# TYPE vllm:cache_config_info gauge\n"
    'vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="1024"} 1.0\n'
    "# TYPE vllm:num_requests_running gauge\n"
    'vllm:num_requests_running{engine="0",model_name="tiny"} 0.0\n'
    "# TYPE vllm:num_requests_waiting gauge\n"
    'vllm:num_requests_waiting{engine="0",model_name="tiny"} 0.0\n'
)
MODELS = {"object": "list", "data": [{"id": "tiny", "object": "model", "max_model_len": 4096}]}


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | dict | list = b""
    headers: dict[str, str] = field(default_factory=dict)
    # a streamed answer: headers first, then each chunk after its delay (seconds); None stalls for good
    chunks: list[tuple[float | None, bytes]] | None = None


Route = Callable[["Handler"], Reply]


class Handler(BaseHTTPRequestHandler):
    server: LoopbackServer  # type: ignore[assignment]
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length else b""
        self.server.seen.append(Seen(self.command, self.path, dict(self.headers.items())))
        route = self.server.routes.get(self.path.split("?")[0]) or self.server.routes.get("*")
        reply = route(self) if route else Reply(404, {"error": "not found"})
        body = reply.body
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.chunks is None:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        for delay, chunk in reply.chunks:
            if delay is None:
                self.server.stop_event.wait(120)  # stalled: until the test ends
                return
            time.sleep(delay)
            self.wfile.write(chunk)
            self.wfile.flush()

    do_GET = _serve
    do_POST = _serve


class LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, routes: dict[str, Route]):
        super().__init__(("127.0.0.1", 0), Handler)
        self.routes = routes
        self.seen: list[Seen] = []
        self.stop_event = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def authorizations(self) -> list[str]:
        return [s.headers.get("Authorization", "") for s in self.seen if s.headers.get("Authorization")]


@contextmanager
def serving(routes: dict[str, Route]) -> Iterator[LoopbackServer]:
    server = LoopbackServer(routes)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop_event.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def fixed(status: int = 200, body: bytes | str | dict | list = b"", **headers: str) -> Route:
    return lambda _h: Reply(status, body, dict(headers))


def redirect(location: str, status: int = 302) -> Route:
    return lambda _h: Reply(status, b"", {"Location": location})


def echo_headers(_h: Handler) -> Reply:
    """200 with the request's headers in the body, as a debugging proxy or a hostile server answers."""
    return Reply(200, {"echo": dict(_h.headers.items()), "choices": [1]})


def bearer_required(key: str, route: Route) -> Route:
    """vLLM's authenticate middleware, in short: 401 unless `Authorization: Bearer <key>`."""

    def guarded(h: Handler) -> Reply:
        if h.headers.get("Authorization") != f"Bearer {key}":
            return Reply(401, {"error": "Unauthorized"})
        return route(h)

    return guarded


def sse(events: list[dict], delay: float = 0.0) -> Route:
    """A completion stream of the given events, then [DONE]."""
    chunks = [(delay, f"data: {json.dumps(e)}\n\n".encode()) for e in events] + [(0.0, b"data: [DONE]\n\n")]
    return lambda _h: Reply(200, chunks=chunks)


def stalled_stream(first: dict) -> Route:
    """Headers and one event, then nothing ever again (the connection stays open)."""
    return lambda _h: Reply(200, chunks=[(0.0, f"data: {json.dumps(first)}\n\n".encode()), (None, b"")])
