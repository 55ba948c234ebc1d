"""`tqdeploy cache export|import` on a real CPU vLLM: a start fills a build's cache volume, the export carries it,
a fresh build in another folder names it in its spec, `up` imports it (TQ442) and the start is warm
(tool/tqdeploy/startcache/, docs/startcache.md).

Two starts, one after the other (the artifact needs a filled volume of its own, and the proof needs a start on
the imported one). The CPU build of 0.32.0 with VLLM_USE_AOT_COMPILE=0 (serve.sh) keeps no torch_compile_cache:
its compiled graphs are inductor's (FX graph and AOTAutograd caches, C++ kernels) under TORCHINDUCTOR_CACHE_DIR,
so the hit is proven by what the start wrote there (nothing) and by the log's warm-up span
(cpu_model_runner.py "Warming up model for the compilation..." to "Warming up done.").
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from support.up_builds import assert_nothing_left, build_key, kill_leftovers, make_build, tq
from tqdeploy.profile import caches
from tqdeploy.startcache.manifest import MEMBER, parse

pytestmark = pytest.mark.vllm
_STAMP = re.compile(r"^(\d+\.\d+)\|.*cpu_model_runner\.py:\d+\] Warming up (model for the compilation|done)", re.M)


def volume(build: Path) -> Path:
    return build / ".tqdeploy" / "cache" / "vllm"


def up_down(build: Path, port: int) -> tuple[str, dict]:
    """Start the build on its own cache volume, stop it; the start's log and up's answer."""
    rc, up, output = tq("up", str(build), "--json", extra_env={"VLLM_CACHE_ROOT": str(volume(build))})
    try:
        assert rc == 0 and up is not None, output[-3000:]
    finally:
        tq("down", str(build), "--json", timeout=120)
        kill_leftovers(build)
    assert_nothing_left(build, up["pgid"], port)
    return Path(up["log_path"]).read_text(encoding="utf-8", errors="replace"), up


def warmup_seconds(log: str) -> float:
    stamps = {m.group(2): float(m.group(1)) for m in _STAMP.finditer(log)}
    return stamps["done"] - stamps["model for the compilation"]


def with_manifest(src: Path, dst: Path, change) -> Path:
    """The artifact again with its manifest changed by `change` (what another host's export would say)."""
    with tarfile.open(src, "r:xz") as tin, tarfile.open(dst, "w:xz") as tout:
        for member in tin:
            blob = tin.extractfile(member).read() if member.isreg() else None
            if member.name == MEMBER:
                raw = json.loads(blob)
                change(raw)
                blob = json.dumps(raw).encode()
                member.size = len(blob)
            tout.addfile(member, io.BytesIO(blob) if blob is not None else None)
    return dst


def test_export_then_import_into_a_fresh_build_starts_warm(tmp_path):
    first, first_port = make_build(tmp_path / "a")
    cold, _ = up_down(first, first_port)
    artifact = tmp_path / "caches.tar.xz"
    rc, exported, output = tq("cache", "export", str(first), "-o", str(artifact), "--json")
    assert rc == 0 and exported, output[-2000:]
    facts = exported["facts"]
    assert facts["device"] == "cpu" and facts["vllm"] == "0.32.0" and facts["cpu_isa"] not in ("", "none")
    with tarfile.open(artifact, "r:xz") as tar:
        manifest = parse(tar.extractfile(MEMBER).read(), str(artifact))
        assert not any(m.issym() or m.islnk() for m in tar)
    assert any(e.path.startswith("torchinductor/") for e in manifest.files)
    key = build_key(first).encode()
    with tarfile.open(artifact, "r:xz") as tar:
        assert not any(key in tar.extractfile(m).read() for m in tar if m.isreg())

    rc, _, output = tq("cache", "import", str(first), str(artifact))  # a volume a start wrote to
    assert rc == 2 and "did not import" in output and len(output.strip().splitlines()) <= 2, output

    second, second_port = make_build(tmp_path / "b")
    other_release = with_manifest(artifact, tmp_path / "v025.tar.xz", lambda m: m["facts"].update(vllm="0.25.0"))
    rc, _, output = tq("cache", "import", str(second), str(other_release))
    assert rc == 2 and "vllm: artifact '0.25.0', here '0.32.0'" in output, output
    other_model = with_manifest(
        artifact, tmp_path / "model.tar.xz", lambda m: m["model_files"].update({"config.json": "0" * 64})
    )
    rc, _, output = tq("cache", "import", str(second), str(other_model))
    assert rc == 2 and "model file config.json" in output, output
    assert not (volume(second) / "torchinductor").exists() or not any((volume(second) / "torchinductor").iterdir())

    # `up` imports what the spec names (storage.cache_artifact), before serve.sh starts: TQ442
    spec = tmp_path / "b" / "spec.toml"
    spec.write_text(spec.read_text().replace("[storage]\n", f'[storage]\ncache_artifact = "{artifact}"\n'))
    rc, _, output = tq("build", str(spec), "--out", str(second))
    assert rc == 0, output[-2000:]
    where = caches.locations(second, {"VLLM_CACHE_ROOT": str(volume(second))})
    before = caches.snapshot(where)  # as profile takes it: before `up`, which imports while it starts
    warm, up = up_down(second, second_port)
    imported = next(f for f in up["findings"] if f["id"] == "TQ442")
    assert imported["severity"] == "ok" and imported["evidence"]["files"] == len(manifest.files), imported
    assert imported["evidence"]["notes"] == ["model_dir"]  # another folder: a note, not a refusal
    rows = caches.report(before, caches.snapshot(where))
    caches.mark_imported(rows, volume(second))
    inductor = next(r for r in rows if r["cache"] == "inductor")
    assert inductor["import"] == "hit" and inductor["imported_files"] > 0 and not inductor["written_since_import"], rows
    assert warmup_seconds(warm) < warmup_seconds(cold), (warmup_seconds(warm), warmup_seconds(cold))
