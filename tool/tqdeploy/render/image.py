"""Container image side of `build`: resolve base digests from a registry, build through the Docker SDK.

Digests are only ever written when read from a registry here (images.get_registry_data(ref).id); on a
machine without registry access this fails with a clear message and nothing is written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdeploy.adaptors import docker
from tqdeploy.errors import TQError

SOURCE_DATE_EPOCH = "0"  # fixed: image metadata must not depend on when it was built


def docker_client() -> Any:
    """A connected Docker SDK client (docker.DockerClient, untyped at the adaptor), or None when no engine answers."""
    try:
        client = docker.from_env(timeout=30)
        client.ping()
        return client
    except Exception:
        return None


def resolve_digest(ref: str, client: Any = None) -> str:  # client: docker_client()'s
    client = client or docker_client()
    if client is None:
        raise TQError(
            f"cannot resolve the digest of {ref}: no Docker engine answers",
            "start the Docker engine (`sudo systemctl start docker`; `tqdeploy doctor` checks it, TQ119) on a machine "
            "that reaches the registry",
        )
    try:
        digest = client.images.get_registry_data(ref).id
    except Exception as err:  # registry unreachable, unknown tag, auth
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise TQError(
            f"cannot resolve the digest of {ref} from its registry: {first}",
            "run `tqdeploy build --resolve-digests` where the registry is reachable, "
            "or leave the digest unresolved (the lock says so)",
        ) from None
    if not (isinstance(digest, str) and digest.startswith("sha256:") and len(digest) == 71):
        raise TQError(f"the registry returned no usable digest for {ref} ({digest!r})", "try again later")
    return digest


def context_names(build_dir: Path) -> list[str]:
    """The files an image build needs: the Dockerfile and the sources of its COPY/ADD lines. Only these are
    sent to the engine, never the whole build folder (secrets/ and models/ live there too)."""
    dockerfile = Path(build_dir) / "Dockerfile"
    names = ["Dockerfile"]
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if not words or words[0].upper() not in ("COPY", "ADD") or any(w.startswith("--from") for w in words):
            continue
        for source in [w for w in words[1:] if not w.startswith("--")][:-1]:
            if source.startswith("/") or ".." in Path(source).parts or any(c in source for c in "*?[$"):
                raise TQError(f"{dockerfile}: COPY source {source!r} is not a plain file of the build", "rebuild it")
            if source not in names:
                names.append(source)
    return names


def context_tar(build_dir: Path) -> bytes:
    """A tar of context_names, with fixed owner and times so the context does not depend on the checkout."""
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in context_names(build_dir):
            info = tar.gettarinfo(str(Path(build_dir) / name), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = int(SOURCE_DATE_EPOCH)
            with open(Path(build_dir) / name, "rb") as fh:
                tar.addfile(info, fh)
    return buffer.getvalue()


def docker_build_command(build_dir: Path, tag: str) -> str:
    """The same build by hand, with the same context: only the files the Dockerfile copies (a tar on stdin)."""
    try:
        names = " ".join(context_names(build_dir))
    except (OSError, TQError):
        names = "Dockerfile serve.sh healthcheck.sh"
    return f"tar -C {build_dir} -c {names} | docker build --build-arg SOURCE_DATE_EPOCH={SOURCE_DATE_EPOCH} -t {tag} -"


def build_image(
    build_dir: Path,
    tag: str,
    client: Any,  # docker_client()'s
    progress: Callable[[str], None] | None = None,
    buildargs: dict[str, str] | None = None,
) -> str:
    """Build with the low-level API (decode=True streams progress lines); returns the image id."""
    progress = progress or (lambda line: print(line, file=sys.stderr))
    args = {"SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH, **(buildargs or {})}
    image_id = ""
    try:
        import io

        context = io.BytesIO(context_tar(build_dir))
        for chunk in client.api.build(
            fileobj=context,
            custom_context=True,
            tag=tag,
            buildargs=args,
            decode=True,
            rm=True,
            forcerm=True,
            pull=False,
        ):
            if "error" in chunk:
                detail = chunk.get("errorDetail", {}).get("message") or chunk["error"]
                raise TQError(
                    f"docker build of {tag} failed: {detail.strip()}",
                    f"fix the cause above, or build by hand: {docker_build_command(build_dir, tag)}",
                )
            line = (chunk.get("stream") or chunk.get("status") or "").rstrip()
            if line:
                progress(line)
            aux = chunk.get("aux") or {}
            if isinstance(aux, dict) and aux.get("ID"):
                image_id = aux["ID"]
    except TQError:
        raise
    except Exception as err:
        raise TQError(f"docker build of {tag} failed: {err}", docker_build_command(build_dir, tag)) from None
    if not image_id:
        image_id = client.images.get(tag).id
    return image_id
