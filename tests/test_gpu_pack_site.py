"""scripts/gpu/tools/pack_site.sh (run by the lead before a lease): a real pip install of a real wheel here, packed into
xz'd parts no larger than asked, which unpack in order into the same files; bad input refused in one line."""

from __future__ import annotations

import base64
import hashlib
import io
import lzma
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "tools" / "pack_site.sh"
PAYLOAD = os.urandom(300_000)  # incompressible: xz keeps it about this size, so it spans several parts


def make_wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel, as a build backend writes one (METADATA, WHEEL, RECORD with hashes)."""
    files = {
        "tqpacktest/__init__.py": b"VERSION = '1.0'\n",
        "tqpacktest/blob.bin": PAYLOAD,
        "tqpacktest-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tqpacktest\nVersion: 1.0\n",
        "tqpacktest-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("tqpacktest-1.0.dist-info/RECORD,,")
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "tqpacktest-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("tqpacktest-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


def pack(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHON=sys.executable)
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300)


def test_shellcheck_passes():
    shellcheck = Path(sys.executable).parent / "shellcheck"
    res = subprocess.run([str(shellcheck), "-x", str(SCRIPT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_parts_unpack_in_order_into_the_installed_files(tmp_path):
    make_wheel(tmp_path / "wheels")
    out = tmp_path / "xfer"
    res = pack(str(tmp_path / "wheels"), str(out), "100000")
    assert res.returncode == 0, res.stderr
    folders = sorted(p.name for p in out.iterdir())
    parts = sorted(out.glob("p*/site.tar.xz.*"), key=lambda p: p.name)
    assert len(parts) >= 3 and folders == [f"p{i}" for i in range(len(folders))]
    assert all(p.stat().st_size <= 100_000 for p in parts)
    # the small tail rode with the part before it: one folder less than parts, none over one part plus the tail
    assert len(folders) == len(parts) - 1 and len(list((out / folders[-1]).iterdir())) == 2
    # what the device does: every part in one folder, concatenated in name order, xz then tar
    stream = lzma.decompress(b"".join(p.read_bytes() for p in parts))
    with tarfile.open(fileobj=io.BytesIO(stream)) as tar:
        names = {m.name.removeprefix("./") for m in tar.getmembers()}
        blob = tar.extractfile("./tqpacktest/blob.bin")
        assert blob is not None and blob.read() == PAYLOAD
    assert {"tqpacktest/__init__.py", "tqpacktest-1.0.dist-info/METADATA"} <= names


def test_bad_input_is_refused_in_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    res = pack(str(tmp_path / "empty"), str(tmp_path / "out"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "no *.whl in" in res.stderr
    make_wheel(tmp_path / "wheels")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "keep.txt").write_text("mine")
    res = pack(str(tmp_path / "wheels"), str(tmp_path / "used"))
    assert res.returncode == 2 and "is not empty" in res.stderr
    assert [p.name for p in (tmp_path / "used").iterdir()] == ["keep.txt"]  # nothing written beside it
    res = pack(str(tmp_path / "wheels"), str(tmp_path / "out"), "54MB")
    assert res.returncode == 2 and "PART_BYTES 54MB" in res.stderr
    res = pack(str(tmp_path / "wheels"), str(tmp_path / "many"), "20000")  # 300 kB in 20 kB parts: 15 parts
    assert res.returncode == 2 and "at most 10" in res.stderr
    assert not (tmp_path / "many").exists()  # refused before anything was written
