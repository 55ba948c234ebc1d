"""scripts/gpu/tools/volume_carry.py: a lease's filled cache volume packed into parts the device can return, and
unpacked into the next lease's build. Run for real on folders of real files: what arrives is what left, the API key
never leaves, and bad or hostile input is refused in one line with nothing half-written."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "tools" / "volume_carry.py"
KEY = "sk-carry-test-2f9d41c7"


def carry(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120)


def _volume(root: Path) -> Path:
    """A volume shaped like lease 8's: vLLM's compile cache, an empty huggingface folder, a larger artefact."""
    vol = root / "build" / ".tqdeploy" / "cache"
    (vol / "vllm" / "torch_compile_cache" / "fb27255fa1" / "rank_0_0").mkdir(parents=True)
    (vol / "huggingface").mkdir()
    (vol / "vllm" / "torch_compile_cache" / "fb27255fa1" / "rank_0_0" / "cache_key_factors.json").write_text(
        '{"VLLM_USE_AOT_COMPILE": "1"}\n'
    )
    (vol / "vllm" / "flashinfer.bin").write_bytes(os.urandom(2_500_000))  # incompressible: several 1 MiB parts
    (root / "key").write_text(KEY + "\n")
    return vol


def _files(vol: Path) -> dict[str, str]:
    return {
        str(p.relative_to(vol)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(vol.rglob("*"))
    }


def test_pack_then_unpack_gives_back_every_file_and_folder(tmp_path):
    vol = _volume(tmp_path)
    res = carry(
        "pack", vol, tmp_path / "out", "--key-file", tmp_path / "key", "--gpu", "NVIDIA H200, 570.1", "--part-mib", 1
    )
    assert res.returncode == 0, res.stderr
    manifest = json.loads((tmp_path / "out" / "volume.json").read_text())
    assert json.loads(res.stdout) == {"files": 2, "unpacked_bytes": manifest["unpacked_bytes"],
                                      "packed_bytes": manifest["packed_bytes"], "parts": 3}  # fmt: skip
    assert [p["name"] for p in manifest["parts"]] == ["cache.tar.xz.00", "cache.tar.xz.01", "cache.tar.xz.02"]
    assert all(p["bytes"] <= 1 << 20 for p in manifest["parts"]) and manifest["gpu"] == "NVIDIA H200, 570.1"

    target = tmp_path / "next" / ".tqdeploy" / "cache"
    (target / "vllm").mkdir(parents=True)  # a new build's volume: folders, no files yet
    res = carry("unpack", tmp_path / "out", target)
    assert res.returncode == 0, res.stderr
    assert _files(target) == _files(vol)
    assert json.loads(res.stdout)["gpu"] == "NVIDIA H200, 570.1"
    assert not list(target.parent.glob(".cache.partial"))


def test_pack_refuses_a_volume_holding_the_key_and_writes_nothing(tmp_path):
    vol = _volume(tmp_path)
    (vol / "vllm" / "leak.json").write_text(json.dumps({"VLLM_API_KEY": KEY}))
    res = carry("pack", vol, tmp_path / "out", "--key-file", tmp_path / "key")
    assert res.returncode == 2 and "1 file(s) on the volume hold the API key: vllm/leak.json" in res.stderr
    assert KEY not in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()


def test_pack_leaves_links_behind(tmp_path):
    vol = _volume(tmp_path)
    secret = tmp_path / "outside.txt"
    secret.write_text("not the volume's")
    (vol / "vllm" / "link").symlink_to(secret)
    assert carry("pack", vol, tmp_path / "out", "--key-file", tmp_path / "key").returncode == 0
    target = tmp_path / "next"
    assert carry("unpack", tmp_path / "out", target).returncode == 0
    assert not (target / "vllm" / "link").exists() and (target / "vllm" / "flashinfer.bin").is_file()


def _packed(tmp_path: Path) -> Path:
    vol = _volume(tmp_path)
    assert carry("pack", vol, tmp_path / "out", "--key-file", tmp_path / "key", "--part-mib", 1).returncode == 0
    return tmp_path / "out"


@pytest.mark.parametrize(
    ("spoil", "named"),
    [
        (lambda out: (out / "cache.tar.xz.01").write_bytes(b"changed"), "cache.tar.xz.01: missing or not the part"),
        (lambda out: (out / "cache.tar.xz.02").unlink(), "cache.tar.xz.02: missing or not the part"),
        (lambda out: (out / "volume.json").write_text("{"), "volume.json: not a readable volume manifest"),
    ],
)
def test_unpack_refuses_a_spoilt_carry_and_leaves_no_volume(tmp_path, spoil, named):
    out = _packed(tmp_path)
    spoil(out)
    target = tmp_path / "next" / "cache"
    res = carry("unpack", out, target)
    assert res.returncode == 2 and named in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert not target.exists() and not (tmp_path / "next").exists()


def test_unpack_never_writes_over_a_used_volume(tmp_path):
    out = _packed(tmp_path)
    target = tmp_path / "next"
    (target / "vllm").mkdir(parents=True)
    (target / "vllm" / "mine.bin").write_bytes(b"the operator's")
    res = carry("unpack", out, target)
    assert res.returncode == 2 and "holds files already" in res.stderr
    assert _files(target) == {"vllm": "dir", "vllm/mine.bin": hashlib.sha256(b"the operator's").hexdigest()}


def test_unpack_refuses_a_member_that_climbs_out(tmp_path):
    """A manifest can be made to match any bytes: the archive's paths are checked too (tarfile's data filter)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    blob = buf.getvalue()
    out = tmp_path / "out"
    out.mkdir()
    (out / "cache.tar.xz.00").write_bytes(blob)
    part = {"name": "cache.tar.xz.00", "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
    (out / "volume.json").write_text(json.dumps({"schema": "tqdeploy.gpu-volume/1", "parts": [part]}))
    target = tmp_path / "b" / "cache"
    res = carry("unpack", out, target)
    assert res.returncode == 2 and "do not unpack" in res.stderr, res.stderr
    assert not (tmp_path / "b" / "escaped.txt").exists() and not target.exists()
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == []


def test_pack_refuses_a_volume_too_large_for_one_call(tmp_path):
    vol = _volume(tmp_path)
    (vol / "vllm" / "big.bin").write_bytes(os.urandom(8 << 20))  # 10.4 MiB of incompressible bytes: 11 parts
    res = carry("pack", vol, tmp_path / "out", "--key-file", tmp_path / "key", "--part-mib", 1)
    assert res.returncode == 2 and "one call returns at most 6 parts and 48 MiB" in res.stderr
    assert not (tmp_path / "out" / "volume.json").exists()
