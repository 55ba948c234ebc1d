"""profile's cache report on real folders and real builds: where each start-up cache lives (the build's serve.sh
or the library's default), hit / miss / absent from before and after, TQ439 off the volume, TQ441 for a volume
filled by another build; and the rendered warmup.sh run for real against a stand-in server on loopback."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from support.vllm_server import free_port
from tqdeploy.deployspec import load_spec
from tqdeploy.profile import caches
from tqdeploy.render import render_files, write_build
from tqdeploy.render.caches import FINGERPRINT_FILE, START_CACHES, moved_caches


def _build(tmp_path: Path, embedded: str = "tiny-cpu-demo") -> Path:
    out = tmp_path / "build"
    write_build(out, render_files(load_spec(embedded=embedded)))
    return out


def _env(tmp_path: Path) -> dict[str, str]:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    return {"HOME": str(home), "TMPDIR": str(tmp), "USER": "svc"}


def test_a_build_of_this_tqdeploy_keeps_every_movable_cache_under_vllm_cache_root(tmp_path):
    build = _build(tmp_path)
    where = caches.locations(build, _env(tmp_path))
    root = build.resolve() / ".tqdeploy" / "cache" / "vllm"
    for c in START_CACHES:
        if c.env or c.subdir:
            assert where[c.key] == root / c.subdir, c.key
    assert where["inductor_pch"] == tmp_path / "tmp" / "torchinductor_svc" / "precompiled_headers"
    serve = (build / "serve.sh").read_text()
    for c in moved_caches():  # the table and the rendered script agree
        assert f'export {c.env}="${{{c.env}:-$VLLM_CACHE_ROOT/{c.subdir}}}"' in serve


def test_an_older_build_and_an_operator_override_point_outside_and_are_reported(tmp_path):
    build = _build(tmp_path)
    serve = build / "serve.sh"  # as rendered before serve.sh moved the caches
    serve.write_text("".join(line for line in serve.read_text().splitlines(True) if "$VLLM_CACHE_ROOT/" not in line))
    env = _env(tmp_path) | {"CUDA_CACHE_PATH": str(tmp_path / "nv")}
    where = caches.locations(build, env)
    assert where["triton"] == tmp_path / "home" / ".triton" / "cache"
    assert where["inductor"] == tmp_path / "tmp" / "torchinductor_svc"
    assert where["flashinfer_jit"] == tmp_path / "home" / ".cache" / "flashinfer"
    assert where["cute_dsl"] == tmp_path / "tmp" / "svc" / "cutlass_python_cache"
    assert where["cuda_compute"] == tmp_path / "nv"  # the environment's own value wins, as in serve.sh
    before = caches.snapshot(where)
    (where["triton"] / "abc").mkdir(parents=True)
    (where["triton"] / "abc" / "kernel.cubin").write_bytes(b"\0" * 4096)
    (where["compile"] / "h").mkdir(parents=True)
    (where["compile"] / "h" / "graph.py").write_text("x")
    after = caches.snapshot(where)
    verdicts = {r["cache"]: r["verdict"] for r in caches.report(before, after)}
    assert verdicts["triton"] == verdicts["compile"] == "miss" and verdicts["flashinfer_jit"] == "absent"
    found = caches.cache_findings(build, where, after)
    assert [(f.id, f.severity.value, f.evidence["cache"]) for f in found] == [("TQ439", "warn", "triton")]
    assert "TRITON_CACHE_DIR" in found[0].remediation and found[0].evidence["bytes"] == 4096


def test_hit_when_nothing_was_written_and_links_are_not_followed(tmp_path):
    folder = tmp_path / "cache"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "f").write_bytes(b"12345")
    big = tmp_path / "elsewhere"
    big.mkdir()
    (big / "huge").write_bytes(b"\0" * 100_000)
    (folder / "link").symlink_to(big, target_is_directory=True)
    before = caches.walk(folder, time.monotonic() + 5)
    assert (before.files, before.bytes) == (1, 5)  # the linked folder is not walked
    after = caches.walk(folder, time.monotonic() + 5)
    assert caches.verdict(before, after) == "hit"
    os.utime(folder / "a" / "f", (time.time() + 10, time.time() + 10))
    assert caches.verdict(before, caches.walk(folder, time.monotonic() + 5)) == "miss"
    assert caches.verdict(before, caches.walk(tmp_path / "none", time.monotonic() + 5)) == "absent"


def test_the_walk_is_bounded(tmp_path, monkeypatch):
    for i in range(30):
        (tmp_path / f"f{i}").write_text("x")
    monkeypatch.setattr(caches, "MAX_ENTRIES", 10)
    state = caches.walk(tmp_path, time.monotonic() + 5)
    assert state.truncated and state.files <= 10
    assert caches.verdict(state, state) == "unknown"


def test_a_cold_start_counts_what_it_removed_as_empty(tmp_path):
    build = _build(tmp_path)
    where = caches.locations(build, _env(tmp_path))
    (where["triton"]).mkdir(parents=True)
    (where["triton"] / "k").write_text("x")
    cleared = caches.cleared(caches.snapshot(where), build / ".tqdeploy" / "cache" / "vllm")
    assert not cleared["triton"].exists and cleared["inductor_pch"].path.endswith("precompiled_headers")


def _fingerprint_file(build: Path, sha: str) -> Path:
    root = build / ".tqdeploy" / "cache" / "vllm"
    root.mkdir(parents=True, exist_ok=True)
    path = root / FINGERPRINT_FILE
    path.write_text(json.dumps({"schema": "tqdeploy.cache-fingerprint/1", "sha256": sha, "gpu": "NVIDIA H200"}))
    return root


def test_a_volume_filled_for_another_build_is_tq441(tmp_path):
    build = _build(tmp_path)
    lock = json.loads((build / "tqdeploy.lock.json").read_text())
    wanted = lock["cache_fingerprint"]["sha256"]
    root = _fingerprint_file(build, "0" * 64)
    found = caches.fingerprint_finding(build, root)
    assert found is not None and found.id == "TQ441" and found.evidence["build_fingerprint"] == wanted
    assert found.evidence["gpu"] == "NVIDIA H200"
    _fingerprint_file(build, wanted)
    assert caches.fingerprint_finding(build, root) is None
    (root / FINGERPRINT_FILE).unlink()
    assert caches.fingerprint_finding(build, root) is None  # nothing recorded: nothing claimed
    (root / FINGERPRINT_FILE).symlink_to(tmp_path / "x")  # not followed (safeio)
    (tmp_path / "x").write_text(json.dumps({"sha256": "1" * 64}))
    assert caches.fingerprint_finding(build, root) is None


def test_the_fingerprint_follows_what_the_caches_depend_on():
    from tqdeploy.deployspec.command import vllm_command
    from tqdeploy.render.fingerprint import cache_fingerprint

    spec = load_spec(embedded="tiny-cpu-demo")
    first = cache_fingerprint(spec, vllm_command(spec))
    spec = dataclasses.replace(spec, vllm=dataclasses.replace(spec.vllm, max_model_len=256))
    second = cache_fingerprint(spec, vllm_command(spec))
    assert first.sha256 != second.sha256 and "--max-model-len" in second.factors["flags"]
    assert first.factors["vllm_version"] == spec.vllm_version


# A stand-in for vLLM at the adapter boundary: serve.sh execs `python3 -m vllm.entrypoints.openai.api_server ...`;
# this python3 serves /health on the --port it is given (after a delay) until SIGTERM, or exits at once.
_STUB = textwrap.dedent(
    """\
    #!{python}
    import http.server, os, sys, time
    if os.environ.get("STUB_FAIL"):
        sys.exit(3)
    port = int(sys.argv[sys.argv.index("--port") + 1])
    time.sleep(float(os.environ.get("STUB_DELAY", "0")))
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
        def log_message(self, *a):
            pass
    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
    """
)


def _warmup(tmp_path: Path, **extra: str) -> tuple[subprocess.CompletedProcess, Path, Path]:
    from tqdeploy.deployspec.load import embedded_spec_path

    port = free_port()
    spec_file = tmp_path / "tqdeploy.toml"
    spec_file.write_text(embedded_spec_path("tiny-cpu-demo").read_text().replace("port = 8000", f"port = {port}"))
    build = tmp_path / "build"
    write_build(build, render_files(load_spec(spec_file)))
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(_STUB.format(python=sys.executable))
    (bin_dir / "python3").chmod(0o755)
    cache = tmp_path / "cache" / "vllm"
    key = tmp_path / "key"
    key.write_text("tq-warmup-test-key\n")
    env = {
        "TQ_API_KEY_FILE": str(key),  # the demo is keyed: serve.sh checks the file, the stand-in never reads it
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TQ_MODEL_DIR": str(model),
        "VLLM_CACHE_ROOT": str(cache),
        "HF_HOME": str(tmp_path / "cache" / "hf"),
        **extra,
    }
    res = subprocess.run(["sh", str(build / "warmup.sh")], capture_output=True, text=True, env=env, timeout=120)
    return res, build, cache


def test_warmup_waits_for_health_records_the_builds_fingerprint_and_stops_the_server(tmp_path):
    res, build, cache = _warmup(tmp_path, STUB_DELAY="1")
    assert res.returncode == 0, res.stderr
    recorded = json.loads((cache / FINGERPRINT_FILE).read_text())
    lock = json.loads((build / "tqdeploy.lock.json").read_text())
    assert recorded["sha256"] == lock["cache_fingerprint"]["sha256"] and recorded["seconds_to_ready"] >= 1
    assert "ready after" in res.stdout
    assert caches.fingerprint_finding(build, cache) is None
    for c in moved_caches():  # serve.sh made every cache folder on the volume
        assert (cache / c.subdir).is_dir(), c.subdir
    leftover = subprocess.run(["pgrep", "-f", str(tmp_path / "bin" / "python3")], capture_output=True, text=True)
    assert leftover.stdout.strip() == ""  # the server was stopped


def test_warmup_fails_and_records_nothing_when_the_server_dies(tmp_path):
    res, _, cache = _warmup(tmp_path, STUB_FAIL="1")
    assert res.returncode == 1 and "exited with status 3 before it was ready" in res.stderr
    assert not (cache / FINGERPRINT_FILE).exists()


@pytest.mark.parametrize("embedded", ["qwen36-27b-tq"])
def test_the_k8s_warmup_job_runs_warmup_sh_with_the_deployments_volumes(tmp_path, embedded):
    import yaml

    build = _build(tmp_path, embedded)
    job = yaml.safe_load((build / "k8s" / "warmup-job.yaml").read_text())
    dep = yaml.safe_load((build / "k8s" / "deployment.yaml").read_text())
    pod, dpod = job["spec"]["template"]["spec"], dep["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["containers"][0]["command"] == ["/opt/tqdeploy/warmup.sh"]
    assert pod["volumes"] == dpod["volumes"]
    assert pod["containers"][0]["volumeMounts"] == dpod["containers"][0]["volumeMounts"]
    assert pod["containers"][0]["resources"] == dpod["containers"][0]["resources"]
    assert "ports" not in pod["containers"][0] and "startupProbe" not in pod["containers"][0]
    lock = json.loads((build / "tqdeploy.lock.json").read_text())
    assert job["metadata"]["annotations"]["tqdeploy.io/cache-fingerprint"] == lock["cache_fingerprint"]["sha256"]
    compose = yaml.safe_load((build / "compose.yaml").read_text())["services"]
    warm, main = compose[f"{embedded}-warmup"], compose[embedded]
    assert warm["profiles"] == ["warmup"] and warm["entrypoint"] == ["/opt/tqdeploy/warmup.sh"]
    assert warm["volumes"] == main["volumes"] and "ports" not in warm and warm["deploy"] == main["deploy"]


@pytest.mark.parametrize("run,low,high", [("bf16-cold", 90.0, 97.0), ("bf16-warm", 6.0, 10.0)])
def test_the_silent_stretch_after_graph_capture_is_a_named_phase(run, low, high):
    """The recorded H200 0.25.0 runs print nothing between "Graph capturing finished" and "Kernel JIT monitor
    activated" (warmup_kernels, the dummy sampler run): 93.7 s cold, 8.1 s warm, now a phase of its own."""
    from tqdeploy.profile.timeline import build_timeline

    log = Path(__file__).parent / "fixtures" / "gpu-runs" / "h200-vllm-0.25.0" / run / "server.log"
    phases = {p.name: p.seconds for p in build_timeline(log.read_text(errors="replace")).phases}
    assert low <= phases["post-capture warm-up (silent)"] <= high, phases
    assert phases["engine warm-up"] < 2.0  # what is left of "init engine" after it
