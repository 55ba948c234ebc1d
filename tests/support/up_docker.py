"""A local image standing in for the vllm-cpu image, for the docker runtime of `tqdeploy up`.

Nothing can be pulled or pip-installed in a build here, so: Debian's busybox-static (downloaded with
apt-get, not installed) as the root file system, the stand-in `python3` (fixtures/up/python3-vllm-stand-in.sh),
and the serve.sh + healthcheck.sh that `tqdeploy build` rendered, as the rendered Dockerfile places them
(/opt/tqdeploy/, ENTRYPOINT serve.sh, user 2000).
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "up"


def docker_client():
    try:
        import docker

        client = docker.from_env(timeout=60)
        client.ping()
        return client
    except Exception:
        return None


def busybox_binary(tmp: Path) -> Path:
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


def stand_in_image(client, tmp: Path, build_dir: Path, tag: str) -> str:
    """Import the image from a tar (no base to pull): busybox, the stand-in python3, the rendered scripts."""
    busybox = busybox_binary(tmp)
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add(name, data=None, mode=0o755, kind=tarfile.REGTYPE, link=""):
            info = tarfile.TarInfo(name)
            info.mode, info.type, info.linkname, info.mtime = mode, kind, link, 0
            info.size = len(data) if data is not None else 0
            tar.addfile(info, io.BytesIO(data) if data is not None else None)

        for d in ("bin", "tmp", "etc", "usr", "usr/local", "usr/local/bin", "opt", "opt/tqdeploy", "cache", "models"):
            add(d, mode=0o1777 if d in ("tmp", "cache") else 0o755, kind=tarfile.DIRTYPE)
        add("bin/busybox", busybox.read_bytes())
        for applet in applets:
            if applet != "busybox":
                add(f"bin/{applet}", kind=tarfile.SYMTYPE, link="busybox")
        add("usr/local/bin/python3", (FIX / "python3-vllm-stand-in.sh").read_bytes())
        add("opt/tqdeploy/serve.sh", (build_dir / "serve.sh").read_bytes())
        add("opt/tqdeploy/healthcheck.sh", (build_dir / "healthcheck.sh").read_bytes())
        add("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nvllm:x:2000:0::/tmp:/bin/sh\n", mode=0o644)
    repo, version = tag.split(":")
    changes = [
        'ENTRYPOINT ["/opt/tqdeploy/serve.sh"]',
        "USER 2000:0",
        "ENV PATH=/usr/local/bin:/bin HOME=/tmp VLLM_CACHE_ROOT=/cache/vllm HF_HOME=/cache/huggingface",
    ]
    client.api.import_image_from_data(buf.getvalue(), repository=repo, tag=version, changes=changes)
    return tag
