"""Debian's nginx running a build's rendered nginx.conf, as a process of the test, on loopback ports.

The rendered file is a server block for the http {} context (its header says so). Two lines are rewritten
in a copy, and only these: `listen 8080;` becomes a free 127.0.0.1 port (tests bind loopback and must not
collide), and the upstream `server 127.0.0.1:8000;` becomes the test vLLM's port (the spec's port 8000 is
not where the test server runs). Everything else (buffering, timeouts, headers) is the rendered text.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from support.vllm_server import free_port

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

MAIN_CONF = """\
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
    include {dir}/site.conf;
}}
"""


@dataclass
class Nginx:
    process: subprocess.Popen
    port: int
    workdir: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def error_log(self) -> str:
        return (self.workdir / "error.log").read_text(errors="replace")


def nginx_available() -> bool:
    return Path(NGINX).exists()


def site_copy(rendered: str, upstream_port: int, listen_port: int) -> str:
    """The rendered server block with only the listen and upstream addresses changed (see module doc)."""
    text, listens = re.subn(r"^(\s*)listen 8080;$", rf"\1listen 127.0.0.1:{listen_port};", rendered, flags=re.M)
    text, upstreams = re.subn(
        r"^(\s*)server 127\.0\.0\.1:\d+;$", rf"\1server 127.0.0.1:{upstream_port};", text, flags=re.M
    )
    if (listens, upstreams) != (1, 1):
        raise AssertionError(f"nginx.conf changed shape: {listens} listen and {upstreams} upstream lines rewritten")
    return text


def start_nginx(
    rendered_conf: Path,
    upstream_port: int,
    workdir: Path,
    overrides: dict[str, str] | None = None,
    extra: str = "",
) -> Nginx:
    """Start nginx in its own process group. For negative controls only: overrides replace directive values,
    extra is inserted into the location block (a misconfigured proxy)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "tmp").mkdir(exist_ok=True)
    port = free_port()
    site = site_copy(rendered_conf.read_text(), upstream_port, port)
    for directive, value in (overrides or {}).items():
        site, n = re.subn(rf"^(\s*){directive} [^;]*;$", rf"\1{directive} {value};", site, flags=re.M)
        assert n == 1, f"{directive} is not in the rendered nginx.conf"
    if extra:
        site = site.replace("    location / {\n", "    location / {\n" + extra + "\n", 1)
    (workdir / "site.conf").write_text(site)
    conf = workdir / "nginx.conf"
    conf.write_text(MAIN_CONF.format(dir=workdir))
    subprocess.run([NGINX, "-t", "-p", str(workdir), "-c", str(conf)], check=True, capture_output=True)
    proc = subprocess.Popen(
        [NGINX, "-p", str(workdir), "-c", str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / "stderr.log", "wb"),
        start_new_session=True,
    )
    nginx = Nginx(proc, port, workdir)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with {proc.returncode}: {nginx.error_log[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return nginx
        except OSError:
            time.sleep(0.1)
    stop_nginx(nginx)
    raise RuntimeError("nginx did not listen within 20 s")


def stop_nginx(nginx: Nginx) -> None:
    try:
        pgid = os.getpgid(nginx.process.pid)
    except ProcessLookupError:
        return
    os.killpg(pgid, signal.SIGTERM)
    try:
        nginx.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(pgid, signal.SIGKILL)
        nginx.process.wait(timeout=5)
