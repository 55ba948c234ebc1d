"""A Hugging Face Hub mirror on 127.0.0.1 for tests: the HTTP API huggingface_hub calls, with faults.

Serves one generated repository from a folder:
- GET /api/models/{repo}[/revision/{rev}][?blobs=true]: id, sha (commit), siblings with size,
  blobId and, for LFS files, lfs {sha256, size, pointerSize} (as huggingface_hub's ModelInfo reads).
- GET /api/models/{repo}/tree/{rev}?recursive=true: the file listing snapshot_download reads.
- GET/HEAD /{repo}/resolve/{rev}/{path}: small files directly with ETag (git blob id) and
  X-Repo-Commit; LFS files as the Hub does, a 302 carrying X-Repo-Commit, X-Linked-Etag and
  X-Linked-Size to /cdn/{sha256}/{path}, which serves the bytes with ETag and Range support.
- Errors with the Hub's X-Error-Code header (RepoNotFound, RevisionNotFound, EntryNotFound).
Faults (per repo path): status codes before success, a short copy, a flipped byte, a connection cut
halfway, the whole server process dying after N bytes, a bandwidth limit, a trickle of one byte at a time;
for the API: statuses or delays before an answer, a revision API that ignores ?blobs=true, no tree API.
Run in-process (HubMirror) or as a process (`python hubmirror.py --root DIR ...`) that can be killed.

Pytest fixtures for the download tests (import them into a test module to use them):
``repo`` (org/tiny, generated once per module) and ``clean_hub_env`` (autouse: no HF_TOKEN or
HF_ENDPOINT from the outer environment reaches a test).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

LFS_SUFFIXES = (".safetensors", ".bin", ".pth", ".pt")
CHUNK = 64 * 1024


def git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def write_safetensors(path: Path, n_bytes: int, seed: int) -> None:
    """A valid safetensors file holding one uint8 tensor of n_bytes pseudo-random bytes."""
    header = json.dumps({"w": {"dtype": "U8", "shape": [n_bytes], "data_offsets": [0, n_bytes]}}).encode()
    header += b" " * (-len(header) % 8)
    body = hashlib.shake_256(f"tqdeploy-test-{seed}".encode()).digest(n_bytes)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(header)) + header + body)


def make_repo(root: Path, shard_bytes: tuple[int, ...] = (3_000_000, 2_000_000)) -> Path:
    """A small model repository: sharded weights + index, configs, tokenizer, and files serving skips."""
    root.mkdir(parents=True, exist_ok=True)
    n = len(shard_bytes)
    shards = [f"model-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)]
    for i, (name, size) in enumerate(zip(shards, shard_bytes, strict=True)):
        write_safetensors(root / name, size, seed=i)
    weight_map = {f"layer{i}.w": s for i, s in enumerate(shards)}
    index = {"metadata": {"total_size": sum(shard_bytes)}, "weight_map": weight_map}
    files = {
        "model.safetensors.index.json": json.dumps(index, indent=2),
        "config.json": json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}, indent=2),
        "generation_config.json": json.dumps({"temperature": 0.7}),
        "tokenizer.json": json.dumps({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0}}}),
        "tokenizer_config.json": json.dumps({"chat_template": "{{ messages }}"}),
        "special_tokens_map.json": json.dumps({"eos_token": "a"}),
        "README.md": "# test model\n",
        ".gitattributes": "*.safetensors filter=lfs diff=lfs merge=lfs -text\n",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    write_safetensors(root / "consolidated.safetensors", 1000, seed=99)  # duplicate, not in the index
    (root / "pytorch_model.bin").write_bytes(b"\x80pickle" * 100)
    (root / "original").mkdir(exist_ok=True)
    (root / "original" / "consolidated.00.pth").write_bytes(b"\x80pickle" * 100)
    return root


HUB_ENV = ("HF_TOKEN", "HF_ENDPOINT")


class Repo:
    def __init__(self, repo_id: str, root: Path, tags: tuple[str, ...] = ("v1.0",)):
        self.repo_id, self.root = repo_id, Path(root)
        self.files: dict[str, dict] = {}
        for p in sorted(self.root.rglob("*")):
            if p.is_file():
                data = p.read_bytes()
                rel = p.relative_to(self.root).as_posix()
                lfs = rel.endswith(LFS_SUFFIXES)
                sha = hashlib.sha256(data).hexdigest()
                self.files[rel] = {
                    "size": len(data),
                    "sha256": sha,
                    "lfs": lfs,
                    "oid": git_oid(data),
                    "pointer": lfs_pointer(sha, len(data)) if lfs else None,
                }
        listing = "".join(f"{k} {v['oid']}\n" for k, v in self.files.items()).encode()
        self.commit = hashlib.sha1(listing).hexdigest()
        self.revisions = {"main": self.commit, self.commit: self.commit, **{t: self.commit for t in tags}}

    def tree(self) -> list[dict]:
        """The recursive listing of /api/models/{repo}/tree/{rev} (huggingface_hub RepoFile / RepoFolder)."""
        entries, folders = [], set()
        for path, f in self.files.items():
            folders.update("/".join(path.split("/")[:i]) for i in range(1, path.count("/") + 1))
            entry = {
                "type": "file",
                "path": path,
                "size": f["size"],
                "oid": git_oid(f["pointer"]) if f["lfs"] else f["oid"],
            }
            if f["lfs"]:
                entry["lfs"] = {"oid": f["sha256"], "size": f["size"], "pointerSize": len(f["pointer"])}
            entries.append(entry)
        return [{"type": "directory", "path": d, "oid": "0" * 40, "size": 0} for d in sorted(folders)] + entries

    def sibling(self, path: str, blobs: bool) -> dict:
        f = self.files[path]
        if not blobs:
            return {"rfilename": path}
        if f["lfs"]:
            return {
                "rfilename": path,
                "size": f["size"],
                "blobId": git_oid(f["pointer"]),
                "lfs": {"sha256": f["sha256"], "size": f["size"], "pointerSize": len(f["pointer"])},
            }
        return {"rfilename": path, "size": f["size"], "blobId": f["oid"]}


@dataclass
class Faults:
    status: dict[str, list[int]] = field(default_factory=dict)  # path -> statuses answered before the content
    retry_after: str | None = "0"
    short: dict[str, int] = field(default_factory=dict)  # path -> times a half-length copy is served
    flip: dict[str, int] = field(default_factory=dict)  # path -> times one byte is served flipped
    cut: dict[str, int] = field(default_factory=dict)  # path -> times the connection drops halfway
    die_after: dict[str, int] = field(default_factory=dict)  # path -> bytes after which the process exits
    bps: int | None = None  # content bandwidth limit, bytes per second
    api_status: list[int] = field(default_factory=list)  # statuses answered to API calls first
    api_delays_s: list[float] = field(default_factory=list)  # seconds the next API calls wait before answering
    ignore_blobs: bool = False  # the revision API answers siblings with names only, as if ?blobs=true were unknown
    tree_status: int | None = None  # the tree API answers this error status instead of the listing
    trickle_s: float | None = None  # content is sent one byte every trickle_s seconds
    api_edit: Callable[[dict], None] | None = None  # changes the revision API's answer (a hostile listing)
    api_endless: bool = False  # the revision API's answer is JSON that never ends
    api_trickle_s: float | None = None  # the revision API's answer is sent one byte every api_trickle_s seconds
    tree_edit: Callable[[list], None] | None = None  # changes the tree API's answer (a hostile listing)

    def take(self, table: dict[str, int], path: str) -> bool:
        if table.get(path, 0) > 0:
            table[path] -= 1
            return True
        return False


def _damaged(data: bytes, short: bool, flip: bool) -> bytes:
    """The content as the short-copy and flipped-byte faults serve it."""
    if short:
        data = data[: len(data) // 2]
    if flip:
        mutable = bytearray(data)
        mutable[len(mutable) // 2] ^= 0xFF
        data = bytes(mutable)
    return data


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args) -> None:  # quiet: requests are recorded in server.requests
        pass

    def do_HEAD(self) -> None:
        self._route(head=True)

    def do_GET(self) -> None:
        self._route(head=False)

    def _api_fault(self, path: str) -> int | None:
        """The injected status for this API call, if any, after any injected delay."""
        if not path.startswith("/api/"):
            return None
        with self.server.lock:
            faults = self.server.faults
            status = faults.api_status.pop(0) if faults.api_status else None
            delay = faults.api_delays_s.pop(0) if faults.api_delays_s else 0.0
        time.sleep(delay)
        return status

    def _route(self, head: bool) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        self.server.record(
            {
                "method": self.command,
                "path": path,
                "range": self.headers.get("Range"),
                "authorization": self.headers.get("Authorization"),
            }
        )
        repo = self.server.repo
        faults = self.server.faults
        api_fault = self._api_fault(path)
        if api_fault:
            return self._error(api_fault, "ServerError" if api_fault >= 500 else "RateLimited", "injected")
        m = re.fullmatch(r"/api/models/(.+?)/tree/([^/]+)(?:/.*)?", path)  # what snapshot_download lists
        if m:
            return self._tree(m.group(1), unquote(m.group(2)), head)
        m = re.fullmatch(r"/api/models/(.+?)(?:/revision/([^/]+))?", path)
        if m:
            if m.group(1) != repo.repo_id:
                return self._error(404, "RepoNotFound", "Repository not found")
            rev = unquote(m.group(2) or "main")
            if rev not in repo.revisions:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            blobs = parse_qs(url.query).get("blobs", ["false"])[0].lower() == "true" and not faults.ignore_blobs
            body = {
                "id": repo.repo_id,
                "sha": repo.revisions[rev],
                "private": False,
                "siblings": [repo.sibling(p, blobs) for p in repo.files],
            }
            return self._revision_answer(body, head)
        m = re.fullmatch(r"/cdn/([0-9a-f]{64})/(.+)", path)
        if m:  # same host as the API: huggingface_hub follows the redirect and reads these headers here
            return self._content(m.group(2), head, {"X-Repo-Commit": repo.commit})
        prefix = f"/{repo.repo_id}/resolve/"
        if not path.startswith(prefix):
            return self._error(404, "RepoNotFound", "Repository not found")
        rev, _, file_path = path[len(prefix) :].partition("/")
        if rev not in repo.revisions:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        f = repo.files.get(file_path)
        if f is None:
            return self._error(404, "EntryNotFound", f"{file_path} does not exist", {"X-Repo-Commit": repo.commit})
        if f["lfs"]:
            headers = {
                "Location": f"/cdn/{f['sha256']}/{file_path}",
                "X-Repo-Commit": repo.commit,
                "X-Linked-Etag": f'"{f["sha256"]}"',
                "X-Linked-Size": str(f["size"]),
                "ETag": f'"{git_oid(f["pointer"])}"',
            }
            return self._send(302, b"", headers, head)
        return self._content(file_path, head, {"X-Repo-Commit": repo.commit, "ETag": f'"{f["oid"]}"'})

    def _content(self, file_path: str, head: bool, extra: dict | None = None) -> None:
        server, f = self.server, self.server.repo.files.get(file_path)
        if f is None:
            return self._error(404, "EntryNotFound", "no such blob")
        with server.lock:
            statuses = server.faults.status.get(file_path)
            status = statuses.pop(0) if statuses and not head else None
            short = not head and server.faults.take(server.faults.short, file_path)
            flip = not head and server.faults.take(server.faults.flip, file_path)
            cut = not head and server.faults.take(server.faults.cut, file_path)
            die_after = server.faults.die_after.get(file_path) if not head else None
        if status:
            retry = {"Retry-After": server.faults.retry_after} if server.faults.retry_after is not None else {}
            return self._error(status, "Injected", f"injected HTTP {status}", retry)
        data = _damaged((server.repo.root / file_path).read_bytes(), short, flip)
        headers = {"ETag": f'"{f["sha256"] if f["lfs"] else f["oid"]}"', "Accept-Ranges": "bytes", **(extra or {})}
        start, status = 0, 200
        rng = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", "") or "")
        if rng:
            start = int(rng.group(1))
            end = int(rng.group(2)) + 1 if rng.group(2) else len(data)
            if start >= len(data):
                return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"}, head)
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
            data, status = data[start:end], 206
        self.send_response(status)
        for k, v in {**headers, "Content-Length": str(len(data))}.items():
            self.send_header(k, v)
        self.end_headers()
        if head:
            return
        limit = len(data) // 2 if cut else len(data)
        sent = 0
        while sent < limit:
            piece = data[sent : min(sent + CHUNK, limit)]
            if die_after is not None and start + sent + len(piece) >= die_after:
                self.wfile.write(piece[: max(0, die_after - start - sent)])
                self.wfile.flush()
                os._exit(3)  # the mirror dies mid-file
            piece = self._trickle(piece)
            self.wfile.write(piece)
            sent += len(piece)
            if server.faults.bps:
                time.sleep(len(piece) / server.faults.bps)
        if cut:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True

    def _tree(self, repo_id: str, rev: str, head: bool) -> None:
        repo = self.server.repo
        if repo_id != repo.repo_id:
            return self._error(404, "RepoNotFound", "Repository not found")
        if rev not in repo.revisions:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        if self.server.faults.tree_status:
            return self._error(self.server.faults.tree_status, "Injected", "no tree API here")
        tree = repo.tree()
        if self.server.faults.tree_edit:
            self.server.faults.tree_edit(tree)
        return self._send(200, json.dumps(tree).encode(), {"Content-Type": "application/json"}, head)

    def _revision_answer(self, body: dict, head: bool) -> None:
        faults = self.server.faults
        if faults.api_edit:
            faults.api_edit(body)
        if faults.api_endless or faults.api_trickle_s:
            return self._api_without_end(json.dumps(body).encode())
        return self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"}, head)

    def _api_without_end(self, body: bytes, most: int = 1 << 31) -> None:
        """An answer without Content-Length: JSON that never closes (until the client hangs up, or 2 GiB), or
        the listing a byte at a time."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        faults, sent = self.server.faults, 0
        try:
            if faults.api_trickle_s:
                for i in range(len(body)):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(faults.api_trickle_s)
                return
            self.wfile.write(b'{"siblings": [')
            piece = b'{"rfilename": "a.json"},' * 4096
            while sent < most:
                self.wfile.write(piece)
                sent += len(piece)
        except OSError:  # the client gave up: what the fault is for
            return

    def _trickle(self, piece: bytes) -> bytes:
        """With the trickle fault, one byte of the piece after a pause; else the piece."""
        if not self.server.faults.trickle_s:
            return piece
        self.wfile.flush()
        time.sleep(self.server.faults.trickle_s)
        return piece[:1]

    def _error(self, status: int, code: str, message: str, extra: dict | None = None) -> None:
        body = json.dumps({"error": message}).encode()
        self._send(
            status,
            body,
            {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json", **(extra or {})},
            self.command == "HEAD",
        )

    def _send(self, status: int, body: bytes, headers: dict, head: bool) -> None:
        self.send_response(status)
        for k, v in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, repo: Repo, faults: Faults, log_path: Path | None):
        super().__init__(addr, _Handler)
        self.repo, self.faults, self.log_path = repo, faults, log_path
        self.lock = threading.Lock()
        self.requests: list[dict] = []

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # clients hanging up is part of the tests
            super().handle_error(request, client_address)

    def record(self, entry: dict) -> None:
        with self.lock:
            self.requests.append(entry)
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry) + "\n")


class HubMirror:
    """In-process mirror on a free loopback port (or ``port``); a context manager."""

    def __init__(self, repo: Repo, faults: Faults | None = None, port: int = 0):
        self.server = _Server(("127.0.0.1", port), repo, faults or Faults(), None)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def faults(self) -> Faults:
        return self.server.faults

    @property
    def requests(self) -> list[dict]:
        with self.server.lock:
            return list(self.server.requests)

    def __enter__(self) -> HubMirror:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Repo:
    return Repo("org/tiny", make_repo(tmp_path_factory.mktemp("src")))


@pytest.fixture(autouse=True)
def clean_hub_env(monkeypatch):
    for name in HUB_ENV:
        monkeypatch.delenv(name, raising=False)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--repo-id", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--faults", default="{}", help="Faults fields as JSON")
    ap.add_argument("--log", type=Path, help="append each request as a JSON line")
    args = ap.parse_args(argv)
    faults = Faults(**json.loads(args.faults))
    server = _Server(("127.0.0.1", args.port), Repo(args.repo_id, args.root), faults, args.log)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
