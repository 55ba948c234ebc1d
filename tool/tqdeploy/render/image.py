"""Container image side of `build`: resolve base digests from a registry, build through the Docker SDK.

Digests are only ever written when read from a registry here (images.get_registry_data(ref).id); on a
machine without registry access this fails with a clear message and nothing is written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tqdeploy.errors import TQError

SOURCE_DATE_EPOCH = "0"  # fixed: image metadata must not depend on when it was built


def docker_client():
    """A connected Docker SDK client, or None when no engine answers."""
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
        return client
    except Exception:
        return None


def resolve_digest(ref: str, client=None) -> str:
    client = client or docker_client()
    if client is None:
        raise TQError(
            f"cannot resolve the digest of {ref}: no Docker engine answers",
            "start dockerd (scripts/start-dockerd.sh) on a machine that reaches the registry",
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


def docker_build_command(build_dir: Path, tag: str) -> str:
    return f"docker build --build-arg SOURCE_DATE_EPOCH={SOURCE_DATE_EPOCH} -t {tag} {build_dir}"


def build_image(
    build_dir: Path,
    tag: str,
    client,
    progress: Callable[[str], None] | None = None,
    buildargs: dict[str, str] | None = None,
) -> str:
    """Build with the low-level API (decode=True streams progress lines); returns the image id."""
    progress = progress or (lambda line: print(line, file=sys.stderr))
    args = {"SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH, **(buildargs or {})}
    image_id = ""
    try:
        for chunk in client.api.build(
            path=str(build_dir), tag=tag, buildargs=args, decode=True, rm=True, forcerm=True, pull=False
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
