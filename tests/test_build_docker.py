"""The rendered Dockerfile built and run on a real Docker engine.

Nothing can be pulled here, so the base image is made in the test: Debian's busybox-static (sh, wget,
httpd) plus a stand-in `vllm` executable (fixtures/build/vllm-stand-in.sh), imported with
`docker import`; the spec's image.base names it. The image is built by `tqdeploy build --image`
(Docker SDK), then its entrypoint (serve.sh) and HEALTHCHECK are watched in real containers.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parent.parent
FIX = Path(__file__).resolve().parent / "fixtures" / "build"
BASE = "tqdeploy-test/busybox-vllm:1"
API_KEY = "tq-seeded-api-key-3b9d0f21c7"
HF_TOKEN = "hf_seededTokenForTheImageTest0987"


def _docker_client():
    try:
        import docker

        client = docker.from_env(timeout=60)
        client.ping()
        return client
    except Exception:
        return None


@pytest.fixture(scope="session")
def docker_client():
    client = _docker_client()
    if client is None:
        res = subprocess.run(["bash", str(REPO / "scripts" / "start-dockerd.sh")], capture_output=True, text=True)
        client = _docker_client()
        if client is None:
            pytest.skip(f"no Docker engine could be started: {(res.stderr or res.stdout).strip()[-300:]}")
    return client


def _busybox_binary(tmp: Path) -> Path:
    """The statically linked busybox from Debian's busybox-static package (downloaded, not installed)."""

    def download():
        return subprocess.run(["apt-get", "download", "busybox-static"], cwd=tmp, capture_output=True, text=True)

    if download().returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
        res = download()
        if res.returncode != 0:
            pytest.skip(f"busybox-static not downloadable: {res.stderr.strip()[-200:]}")
    deb = next(tmp.glob("busybox-static_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "x")], check=True)
    return tmp / "x" / "bin" / "busybox"


@pytest.fixture(scope="session")
def base_image(docker_client, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("busybox")
    busybox = _busybox_binary(tmp)
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add(name, data=None, mode=0o755, kind=tarfile.REGTYPE, link=""):
            info = tarfile.TarInfo(name)
            info.mode, info.type, info.linkname, info.mtime = mode, kind, link, 0
            info.size = len(data) if data is not None else 0
            tar.addfile(info, io.BytesIO(data) if data is not None else None)

        for d in ("bin", "tmp", "etc", "usr", "usr/local", "usr/local/bin"):
            add(d, mode=0o1777 if d == "tmp" else 0o755, kind=tarfile.DIRTYPE)
        add("bin/busybox", busybox.read_bytes())
        for applet in applets:
            if applet != "busybox":
                add(f"bin/{applet}", kind=tarfile.SYMTYPE, link="busybox")
        add("usr/local/bin/vllm", (FIX / "vllm-stand-in.sh").read_bytes())
        # a keyed serve.sh runs `python3 /opt/tqdeploy/launch_vllm.py MODEL FLAGS` (the key read in-process)
        add("usr/local/bin/python3", (FIX / "vllm-stand-in.sh").read_bytes())
        add("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", mode=0o644)
    docker_client.api.import_image_from_data(buf.getvalue(), repository=BASE.split(":")[0], tag=BASE.split(":")[1])
    yield BASE
    _remove_image(docker_client, BASE)


def _remove_image(client, ref: str) -> None:
    try:
        client.images.remove(ref, force=True)
    except Exception:  # already gone; nothing of ours left to clean
        pass


@pytest.fixture(scope="session")
def built(docker_client, base_image, tmp_path_factory):
    """`tqdeploy build --image` of a spec whose base is the local test image."""
    import os

    from tqdeploy.cli import main

    work = tmp_path_factory.mktemp("dockerbuild")
    spec = (
        'schema = 1\nname = "dockertest"\n[model]\npath = "/srv/models/tiny"\nserved_name = "tiny"\n'
        '[vllm]\nversion = "0.32.0"\nmax_model_len = 512\n'
        f'[image]\nbase = "{base_image}"\n'
        '[server]\nhost = "127.0.0.1"\nport = 8000\napi_key_file = "./secrets/vllm-api-key"\n'
        '[resources]\ngpus = "all"\n'
    )
    (work / "tqdeploy.toml").write_text(spec)
    out = work / "build"
    old = os.environ.get("HF_TOKEN")
    os.environ["HF_TOKEN"] = HF_TOKEN  # seeded: must not reach the image
    try:
        import contextlib

        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["build", str(work / "tqdeploy.toml"), "--out", str(out), "--image", "--json"])
    finally:
        if old is None:
            os.environ.pop("HF_TOKEN", None)
        else:
            os.environ["HF_TOKEN"] = old
    assert code == 0, stderr.getvalue()
    result = json.loads(stdout.getvalue())
    yield {"work": work, "out": out, "result": result, "log": stdout.getvalue() + stderr.getvalue()}
    _remove_image(docker_client, result["image"]["id"])


def _model_dir(tmp_path: Path) -> Path:
    model = tmp_path / "tiny"
    model.mkdir()
    (model / "config.json").write_text("{}")
    model.chmod(0o755)
    (model / "config.json").chmod(0o644)
    return model


def _key_file(tmp_path: Path) -> Path:
    key = tmp_path / "vllm-api-key"
    key.write_text(API_KEY + "\n")
    key.chmod(0o644)
    return key


def _wait_exit(container, timeout=60) -> int:
    return container.wait(timeout=timeout)["StatusCode"]


def _health(container, want: str, timeout=40) -> str:
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        container.reload()
        status = container.attrs["State"].get("Health", {}).get("Status", "")
        if status == want:
            return status
        time.sleep(0.5)
    return status


# Keep the image's own healthcheck command; only make it fast for the test (empty test = inherit).
FAST_HEALTH = {
    "test": [],
    "interval": 500_000_000,
    "timeout": 3_000_000_000,
    "retries": 2,
    "start_period": 1_000_000,
}  # 0 would inherit the image's 20 minutes


def test_image_is_built_through_the_sdk_with_pins_labels_and_a_non_root_user(docker_client, built):
    result = built["result"]
    assert result["image"]["tag"] == f"tqdeploy/dockertest:{result['spec_sha256'][:12]}"
    assert result["image"]["id"].startswith("sha256:")
    attrs = docker_client.images.get(result["image"]["tag"]).attrs["Config"]
    assert attrs["User"] == "2000:0"
    assert attrs["Entrypoint"] == ["/opt/tqdeploy/serve.sh"]
    assert attrs["Healthcheck"]["Test"] == ["CMD", "/opt/tqdeploy/healthcheck.sh"]
    labels = attrs["Labels"]
    assert labels["io.tqdeploy.spec-sha256"] == result["spec_sha256"]
    from tqdeploy import __version__

    assert labels["io.tqdeploy.tool-version"] == __version__
    assert labels["org.opencontainers.image.base.name"] == BASE
    assert "Step 1/" in built["log"] or "FROM" in built["log"]  # progress lines from decode=True


def test_entrypoint_fails_fast_when_the_model_is_missing(docker_client, built):
    c = docker_client.containers.run(built["result"]["image"]["tag"], detach=True)
    try:
        assert _wait_exit(c) == 66
        logs = c.logs().decode()
        assert "serve.sh: exit 66 (model-missing): /models/tiny has no config.json" in logs
        assert "fix: run ./download.sh" in logs
    finally:
        c.remove(force=True)


def test_entrypoint_refuses_to_start_without_the_api_key(docker_client, built, tmp_path):
    model = _model_dir(tmp_path)
    c = docker_client.containers.run(
        built["result"]["image"]["tag"], detach=True, volumes={str(model): {"bind": "/models/tiny", "mode": "ro"}}
    )
    try:
        assert _wait_exit(c) == 67
        assert "API key file /run/secrets/vllm-api-key is missing or empty" in c.logs().decode()
    finally:
        c.remove(force=True)


def test_entrypoint_execs_vllm_with_the_key_file_only_and_turns_healthy(docker_client, built, tmp_path):
    model, key = _model_dir(tmp_path), _key_file(tmp_path)
    c = docker_client.containers.run(
        built["result"]["image"]["tag"],
        detach=True,
        environment={"TQ_BIND_HOST": "0.0.0.0"},
        volumes={
            str(model): {"bind": "/models/tiny", "mode": "ro"},
            str(key): {"bind": "/run/secrets/vllm-api-key", "mode": "ro"},
        },
        healthcheck=FAST_HEALTH,
    )
    try:
        assert _health(c, "healthy") == "healthy", c.logs().decode()
        c.reload()
        assert c.attrs["State"]["Health"]["Log"][-1]["ExitCode"] == 0
        top = c.top(ps_args="-o pid,args")  # the process list as the host sees it
        procs = " ".join(" ".join(p) for p in top["Processes"])
        assert API_KEY not in procs
        logs = c.logs().decode()
        assert API_KEY not in logs
        # the key stays out of the environment (vLLM 0.25.0 hashes VLLM_API_KEY into its compile cache):
        # launch_vllm.py reads the mounted file in-process
        assert "VLLM_API_KEY: absent" in logs and "TQ_API_KEY_FILE=/run/secrets/vllm-api-key" in logs
        argv_line = next(line for line in logs.splitlines() if line.startswith("vllm stand-in argv:"))
        assert argv_line == (
            "vllm stand-in argv: /opt/tqdeploy/launch_vllm.py /models/tiny --served-model-name tiny "
            "--tensor-parallel-size 1 --max-model-len 512 --host 0.0.0.0 --port 8000"
        )
        assert "HF_HUB_OFFLINE=1 uid=2000" in logs and "VLLM_CACHE_ROOT=/cache/vllm" in logs
        assert "TRITON_CACHE_DIR=/cache/vllm/triton CUDA_CACHE_PATH=/cache/vllm/nv-compute-cache" in logs
    finally:
        c.remove(force=True)


def test_healthcheck_turns_unhealthy_when_health_fails(docker_client, built):
    # A real HTTP server on the port that has no /health (404): the image's check must fail.
    c = docker_client.containers.run(
        built["result"]["image"]["tag"],
        detach=True,
        entrypoint=["/bin/sh", "-c"],
        command=["mkdir -p /tmp/empty && exec httpd -f -p 127.0.0.1:8000 -h /tmp/empty"],
        healthcheck=FAST_HEALTH,
    )
    try:
        assert _health(c, "unhealthy") == "unhealthy"
        c.reload()
        assert c.attrs["State"]["Health"]["Log"][-1]["ExitCode"] != 0
    finally:
        c.remove(force=True)


def test_no_seeded_secret_in_any_image_layer_or_build_output(docker_client, built):
    image = docker_client.images.get(built["result"]["image"]["tag"])
    blob = b"".join(image.save(named=True))
    outer = tarfile.open(fileobj=io.BytesIO(blob))
    seen = 0
    for member in outer.getmembers():
        if not member.isfile():
            continue
        data = outer.extractfile(member).read()
        assert API_KEY.encode() not in data and HF_TOKEN.encode() not in data, member.name
        if member.name.endswith("layer.tar"):
            seen += 1
            with tarfile.open(fileobj=io.BytesIO(data)) as layer:
                for f in layer.getmembers():
                    if f.isfile():
                        content = layer.extractfile(f).read()
                        assert API_KEY.encode() not in content and HF_TOKEN.encode() not in content, f.name
    assert seen >= 2  # the base layer and the layers the Dockerfile added
    assert API_KEY not in built["log"] and HF_TOKEN not in built["log"]
    assert json.dumps(image.attrs).find(HF_TOKEN) == -1


def test_image_build_is_refused_cleanly_when_no_engine_answers(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    code, stdout, err = run_cli("build", "--out", str(tmp_path / "b"), "--image", "--json")
    assert code == 1  # the files are written, the image asked for is not: exit 1 with the command to run
    assert (tmp_path / "b" / "Dockerfile").is_file()
    image = json.loads(stdout)["image"]
    assert image["id"] is None and image["reason"] == "no Docker engine answers here"
    assert image["command"] == (
        f"tar -C {tmp_path / 'b'} -c Dockerfile serve.sh healthcheck.sh readyprobe.py warmup.sh launch_vllm.py | "
        f"docker build --build-arg SOURCE_DATE_EPOCH=0 -t {image['tag']} -"
    )


def test_resolve_digests_fails_clearly_without_a_registry(run_cli, docker_client, tmp_path):
    code, _, err = run_cli("build", "--out", str(tmp_path / "b"), "--resolve-digests")
    assert code == 2
    assert err.startswith("tqdeploy: error: cannot resolve the digest of vllm/vllm-openai:v0.32.0 from its registry: ")
    assert "Traceback" not in err
    assert not (tmp_path / "b").exists()


class _LoopbackRegistry:
    """The part of the registry API (v2) that `docker` uses to resolve a tag to its manifest digest."""

    def __init__(self):
        import hashlib
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        config = json.dumps(
            {"architecture": "amd64", "os": "linux", "config": {}, "rootfs": {"type": "layers", "diff_ids": []}}
        ).encode()
        config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {
                    "mediaType": "application/vnd.docker.container.image.v1+json",
                    "size": len(config),
                    "digest": config_digest,
                },
                "layers": [],
            }
        ).encode()
        self.digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
        routes = {
            "/v2/": (b"{}", "application/json"),
            "/v2/tq/base/manifests/v1": (manifest, "application/vnd.docker.distribution.manifest.v2+json"),
            f"/v2/tq/base/manifests/{self.digest}": (manifest, "application/vnd.docker.distribution.manifest.v2+json"),
            f"/v2/tq/base/blobs/{config_digest}": (config, "application/octet-stream"),
        }
        digest = self.digest

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body, ctype = routes.get(self.path, (b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', "application/json"))
                self.send_response(200 if self.path in routes else 404)
                self.send_header("Docker-Distribution-API-Version", "registry/2.0")
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                if "/manifests/" in self.path:
                    self.send_header("Docker-Content-Digest", digest)
                self.end_headers()
                if self.command == "GET":
                    self.wfile.write(body)

            do_HEAD = do_GET

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_resolve_digests_pins_what_the_registry_answers(run_cli, docker_client, tmp_path):
    # Docker treats 127.0.0.0/8 registries as insecure (plain HTTP) by default: a loopback registry works.
    registry = _LoopbackRegistry()
    try:
        base = f"127.0.0.1:{registry.port}/tq/base:v1"
        spec = (
            f'name = "digest"\n[model]\npath = "/m"\nserved_name = "m"\n[vllm]\nversion = "0.32.0"\n'
            f'[image]\nbase = "{base}"\n'
        )
        (tmp_path / "s.toml").write_text(spec)
        code, stdout, err = run_cli(
            "build", str(tmp_path / "s.toml"), "--out", str(tmp_path / "b"), "--resolve-digests", "--json"
        )
        assert code == 0, err
        assert f"ARG BASE_IMAGE={base}@{registry.digest}\n" in (tmp_path / "b" / "Dockerfile").read_text()
        lock = json.loads((tmp_path / "b" / "tqdeploy.lock.json").read_text())
        assert lock["pins"]["image"] == {
            "base": base,
            "digest": registry.digest,
            "source": "registry (--resolve-digests)",
        }
        assert any(registry.digest in n and "add `digest =" in n for n in json.loads(stdout)["notes"])
        # A spec pinned to another digest: the tag moved, refused, nothing written.
        other = "sha256:" + "0" * 64
        (tmp_path / "s.toml").write_text(spec + f'digest = "{other}"\n')
        code, _, err = run_cli("build", str(tmp_path / "s.toml"), "--out", str(tmp_path / "c"), "--resolve-digests")
        assert code == 2 and f"now resolves to {registry.digest}, not the spec's image.digest {other}" in err
        assert not (tmp_path / "c").exists()
    finally:
        registry.close()
