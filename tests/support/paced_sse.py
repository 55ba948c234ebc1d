"""A loopback upstream that streams chat-completion events on a clock, for nginx timeout tests.

Why not the CPU vLLM: how long its stream lasts depends on how fast the machine decodes (a stream sized for
90 s on a slow machine ran 48 s on a fast one), and a test of nginx's 60 s read timeout needs a stream that
lasts longer than 60 s and a queued request that stays silent longer than 60 s on every machine. This server
paces both with the clock and nothing else.

It behaves like vLLM started with --max-num-seqs 1, as far as a proxy can see: one sequence slot; a request
gets its 200 and event-stream headers at once (vLLM's StreamingResponse sends them before the first event),
then waits silent while another request holds the slot, then sends its `data:` events, `interval_s` apart,
and `data: [DONE]`, chunked as uvicorn sends them. The body says how many events and how far apart
(bounded: at most MAX_EVENTS, at most MAX_INTERVAL_S apart).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_EVENTS = 400
MAX_INTERVAL_S = 2.0
MAX_BODY = 64 * 1024


def _event(index: int) -> bytes:
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": f"t{index} "}}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the test prints what it measured

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_POST(self) -> None:
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        body = json.loads(self.rfile.read(length) or b"{}")
        events = max(1, min(int(body.get("events", 4)), MAX_EVENTS))
        interval = max(0.0, min(float(body.get("interval_s", 0.05)), MAX_INTERVAL_S))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            with self.server.slot:  # queued: headers sent, not a byte of body until the slot is free
                for i in range(events):
                    self._chunk(_event(i))
                    time.sleep(interval)
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")
        except OSError:
            self.close_connection = True  # the proxy gave up on this request (its read timeout): drop it


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    slot = threading.Lock()  # replaced per server in start(): one sequence slot


@dataclass
class PacedUpstream:
    server: _Server
    thread: threading.Thread

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start() -> PacedUpstream:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.slot = threading.Lock()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    return PacedUpstream(server, thread)


def stop(upstream: PacedUpstream) -> None:
    upstream.server.shutdown()
    upstream.server.server_close()
    upstream.thread.join(timeout=10)
