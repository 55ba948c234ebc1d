"""tqdeploy.startcache on real files and real archives: export refuses secrets, import refuses what is unsafe or
made for something else, and a refused import leaves the volume exactly as it was (tool/tqdeploy/startcache/)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from tqdeploy.errors import TQError
from tqdeploy.startcache import compare, pack, unpack
from tqdeploy.startcache.manifest import MEMBER, RECEIPT, Entry, Manifest, parse

KEY = "tq-test-key-0123456789abcdef"
FACTS = {"vllm": "0.32.0", "torch": "2.13.0+cpu", "device": "cpu", "cpu_isa": "avx512", "model_dir": "/m"}
MODEL = {"config.json": "a" * 64, "model.safetensors": "bytes:10"}


def fill(volume: Path) -> None:
    (volume / "torch_compile_cache" / "0123456789" / "rank_0_0" / "backbone").mkdir(parents=True)
    (volume / "torch_compile_cache" / "0123456789" / "rank_0_0" / "backbone" / "cache_key_factors.json").write_text(
        '{"env": {"VLLM_USE_AOT_COMPILE": "0"}}'
    )
    (volume / "torchinductor" / "fxgraph").mkdir(parents=True)
    (volume / "torchinductor" / "fxgraph" / "graph.py").write_bytes(b"def call(args):\n    return args\n" * 50)
    (volume / "triton").mkdir()


def tree(root: Path) -> dict[str, str]:
    """Every entry under root: folders as 'dir', files by sha256, links by target."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "link:" + str(p.readlink())
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def export(volume: Path, out: Path) -> Manifest:
    manifest = pack.build_manifest(volume, dict(FACTS), dict(MODEL), {})
    pack.write_archive(volume, manifest, out)
    return manifest


@pytest.fixture
def artifact(tmp_path: Path) -> tuple[Path, Manifest]:
    src = tmp_path / "src"
    src.mkdir()
    fill(src)
    out = tmp_path / "caches.tar.xz"
    return out, export(src, out)


def fresh_volume(tmp_path: Path) -> Path:
    """A build that has not started: serve.sh made its empty cache folders."""
    volume = tmp_path / "build" / ".tqdeploy" / "cache" / "vllm"
    (volume / "triton").mkdir(parents=True)
    return volume


def test_round_trip_is_exact_and_deterministic(tmp_path, artifact):
    out, manifest = artifact
    again = tmp_path / "again.tar.xz"
    export(tmp_path / "src", again)
    assert json.loads(parse(manifest.to_json(), "m").to_json()) == json.loads(manifest.to_json())
    assert hashlib.sha256(again.read_bytes()).digest() != b"" and len(manifest.files) == 2
    volume = fresh_volume(tmp_path)
    done = unpack.extract(out, unpack.read_manifest(out), volume, [])
    assert done["files"] == 2
    got = tree(volume)
    assert got.pop(RECEIPT) and got == tree(tmp_path / "src")
    assert not list(volume.parent.glob(".vllm.import-*"))  # nothing left beside the volume


def test_same_volume_same_bytes(tmp_path, artifact):
    out, _ = artifact
    second = tmp_path / "second.tar.xz"
    pack.write_archive(tmp_path / "src", pack.build_manifest(tmp_path / "src", FACTS, MODEL, {}), second)
    first = json.loads(unpack.read_manifest(out).to_json())
    again = json.loads(unpack.read_manifest(second).to_json())
    first.pop("created"), again.pop("created")
    assert first == again


def test_links_are_left_behind_not_carried(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    fill(src)
    (src / "triton" / "passwd").symlink_to("/etc/passwd")
    manifest = export(src, tmp_path / "a.tar.xz")
    assert manifest.left_behind == ("triton/passwd",)
    assert "triton/passwd" not in {e.path for e in manifest.files}


@pytest.mark.parametrize(
    "content, why",
    [
        (KEY.encode(), "key"),
        (b'{"VLLM_API_KEY": "' + KEY.encode() + b'"}', "key"),
        (base64.b64encode(KEY.encode()), "key"),
        (b"token=hf_" + b"A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7", "token"),
        (b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n", "private key"),
    ],
)
def test_export_refuses_a_file_holding_a_secret(tmp_path, content, why):
    from tqdeploy.startcache.secrets import files_holding, needles

    src = tmp_path / "src"
    src.mkdir()
    fill(src)
    (src / "torchinductor" / "leak.json").write_bytes(content)
    manifest = pack.build_manifest(src, FACTS, MODEL, {})
    held = files_holding(src, [e.path for e in manifest.files], needles(KEY, env={}))
    assert [p for p, _ in held] == ["torchinductor/leak.json"] and why in held[0][1]


def test_export_passes_a_clean_volume(tmp_path):
    from tqdeploy.startcache.secrets import files_holding, needles

    src = tmp_path / "src"
    src.mkdir()
    fill(src)
    manifest = pack.build_manifest(src, FACTS, MODEL, {})
    assert files_holding(src, [e.path for e in manifest.files], needles(KEY, env={})) == []


def craft(out: Path, manifest: Manifest, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    """An archive with this manifest first, then exactly these members (what a hostile artifact holds)."""
    with tarfile.open(out, "w:xz") as tar:
        data = manifest.to_json()
        info = tarfile.TarInfo(MEMBER)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for info, blob in members:
            tar.addfile(info, io.BytesIO(blob) if blob is not None else None)
    return out


def reg(name: str, blob: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(blob)
    return info, blob


def one_file_manifest(path: str, blob: bytes, size: int | None = None) -> Manifest:
    return Manifest(
        FACTS, MODEL, (Entry(path, len(blob) if size is None else size, hashlib.sha256(blob).hexdigest()),), ()
    )


def _link(name: str, target: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


HOSTILE = {
    "symlink": ([_link("vllm/a.py", "/etc/passwd", tarfile.SYMTYPE)], "link"),
    "hardlink": ([_link("vllm/a.py", "/etc/passwd", tarfile.LNKTYPE)], "link"),
    "dotdot": ([reg("vllm/../escape.py", b"x = 1\n")], "leaves the volume"),
    "absolute": ([reg("/tmp/abs.py", b"x = 1\n")], "outside"),
    "oversized": ([reg("vllm/a.py", b"x = 1\n" * 1000)], "the manifest says"),
    "not listed": ([reg("vllm/a.py", b"x = 1\n"), reg("vllm/extra.py", b"y = 2\n")], "not in the manifest"),
    "other bytes": ([reg("vllm/a.py", b"y = 2\n")], "not the file"),
    "holds the key": ([reg("vllm/a.py", KEY.encode() + b"\n")], "holds"),
    "missing": ([], "missing"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_import_refuses_and_leaves_the_volume_as_it_was(tmp_path, case):
    members, why = HOSTILE[case]
    blob = KEY.encode() + b"\n" if case == "holds the key" else b"x = 1\n"
    manifest = one_file_manifest("a.py", blob)
    if case == "not listed":
        manifest = Manifest(FACTS, MODEL, manifest.files, ())
    archive = craft(tmp_path / "hostile.tar.xz", manifest, members)
    volume = fresh_volume(tmp_path)
    before = tree(volume.parent)
    with pytest.raises(TQError) as err:
        unpack.extract(archive, unpack.read_manifest(archive), volume, [KEY.encode()])
    assert why in str(err.value)
    assert tree(volume.parent) == before  # no partial folder, no half-filled volume
    assert not (tmp_path / "escape.py").exists() and not Path("/tmp/abs.py").exists()


def test_import_refuses_an_oversized_total(tmp_path, monkeypatch):
    blob = b"x = 1\n" * 10
    archive = craft(tmp_path / "big.tar.xz", one_file_manifest("a.py", blob), [reg("vllm/a.py", blob)])
    monkeypatch.setattr(unpack, "MAX_UNPACKED", 10)
    with pytest.raises(TQError, match="unpacks to over"):
        unpack.extract(archive, unpack.read_manifest(archive), fresh_volume(tmp_path), [])


def test_a_failure_late_in_the_archive_leaves_the_volume_as_it_was(tmp_path, artifact):
    """Many good members are extracted before the bad one: none of them may reach the volume."""
    out, manifest = artifact
    good = [e for e in manifest.files]
    src = tmp_path / "src"
    members = [reg("vllm/" + e.path, (src / e.path).read_bytes()) for e in good]
    bad = Manifest(FACTS, MODEL, (*good, Entry("z.py", 3, "0" * 64)), manifest.dirs)
    dirs = [(tarfile.TarInfo("vllm/" + d), None) for d in manifest.dirs]
    for info, _ in dirs:
        info.type = tarfile.DIRTYPE
    archive = craft(tmp_path / "late.tar.xz", bad, dirs + members + [reg("vllm/z.py", b"abc")])
    volume = fresh_volume(tmp_path)
    before = tree(volume.parent)
    with pytest.raises(TQError, match="not the file"):
        unpack.extract(archive, unpack.read_manifest(archive), volume, [])
    assert tree(volume.parent) == before


def test_import_refuses_a_volume_a_start_wrote_to(tmp_path, artifact):
    out, _ = artifact
    volume = fresh_volume(tmp_path)
    (volume / "triton" / "kernel.cubin").write_bytes(b"\x7fELF")
    before = tree(volume)
    with pytest.raises(TQError, match="did not import"):
        unpack.extract(out, unpack.read_manifest(out), volume, [])
    assert tree(volume) == before


def test_import_replaces_only_its_own_unchanged_import(tmp_path, artifact):
    out, manifest = artifact
    volume = fresh_volume(tmp_path)
    unpack.extract(out, manifest, volume, [])
    unpack.extract(out, manifest, volume, [])  # the same import again: every file is provably ours
    path = volume / manifest.files[0].path
    path.write_bytes(b"changed by a start")
    with pytest.raises(TQError, match="did not import"):
        unpack.extract(out, manifest, volume, [])
    assert path.read_bytes() == b"changed by a start"


def test_not_an_artifact_is_one_line(tmp_path):
    bad = tmp_path / "x.tar.xz"
    bad.write_bytes(b"not xz")
    with pytest.raises(TQError, match="not a tar.xz artifact|unreadable"):
        unpack.read_manifest(bad)
    with pytest.raises(TQError, match="not a tqdeploy.cache/1"):
        parse(b'{"schema": "other"}', "m.json")
    with pytest.raises(TQError, match="leaves the volume"):
        parse(json.dumps({"schema": "tqdeploy.cache/1", "facts": {}, "model_files": {}, "dirs": [],
                          "files": [{"path": "../x", "bytes": 1, "sha256": "0" * 64}]}).encode(), "m.json")  # fmt: skip


def test_compare_refuses_another_release_or_model_and_warns_on_a_path():
    manifest = Manifest(dict(FACTS), dict(MODEL), (), ())
    same = compare.differences(manifest, dict(FACTS), dict(MODEL))
    assert same == []
    other = compare.differences(
        manifest, FACTS | {"vllm": "0.25.0", "model_dir": "/other"}, MODEL | {"config.json": "b" * 64}
    )
    assert {d.fact: d.refuses for d in other} == {"vllm": True, "model_dir": False, "model file config.json": True}
    assert [d.fact for d in compare.refusals(other)] == ["vllm", "model file config.json"]


def test_profile_marks_what_the_import_put_in_each_cache(tmp_path, artifact):
    """profile/caches.py mark_imported: the imported inductor cache untouched by a start is an imported hit; a
    cache the start wrote into is a miss; a cache nothing was imported into says nothing."""
    from tqdeploy.profile import caches

    out, manifest = artifact
    volume = fresh_volume(tmp_path)
    unpack.extract(out, manifest, volume, [])
    where = {"inductor": volume / "torchinductor", "compile": volume / "torch_compile_cache", "xdg": volume / "xdg"}
    before = caches.snapshot(where)
    (volume / "torch_compile_cache" / "new-key").mkdir()
    (volume / "torch_compile_cache" / "new-key" / "graph.py").write_text("x = 1\n")  # a start compiled anew
    rows = caches.report(before, caches.snapshot(where))
    caches.mark_imported(rows, volume)
    got = {r["cache"]: (r["import"], r["imported_files"], r.get("written_since_import")) for r in rows}
    assert got == {"inductor": ("hit", 1, 0), "compile": ("miss", 1, 1), "xdg": (None, 0, None)}


def test_profile_judges_the_import_by_the_files_not_the_walk(tmp_path, artifact):
    """`up` imports while it starts, after profile's first walk: a cache empty before and full after is still an
    imported hit when its files are the import's, unchanged; one the start rewrote is a miss."""
    import os

    from tqdeploy.profile import caches

    out, manifest = artifact
    volume = fresh_volume(tmp_path)
    where = {"inductor": volume / "torchinductor", "compile": volume / "torch_compile_cache"}
    before = caches.snapshot(where)  # before the import
    unpack.extract(out, manifest, volume, [])
    rewritten = volume / "torch_compile_cache" / "0123456789" / "rank_0_0" / "backbone" / "cache_key_factors.json"
    future = os.stat(volume / RECEIPT).st_mtime_ns + 10**9
    os.utime(rewritten, ns=(future, future))  # a start rewrote it after the import
    rows = caches.report(before, caches.snapshot(where))
    caches.mark_imported(rows, volume)
    assert {r["cache"]: r["import"] for r in rows} == {"inductor": "hit", "compile": "miss"}


def test_profile_says_nothing_without_an_import(tmp_path):
    from tqdeploy.profile import caches

    volume = fresh_volume(tmp_path)
    rows = [{"cache": "triton", "path": str(volume / "triton"), "verdict": "hit"}]
    caches.mark_imported(rows, volume)
    assert "import" not in rows[0]


def test_driver_version_from_the_kernel_modules_line(tmp_path):
    """/proc/driver/nvidia/version as recorded on the lent H200 (tests/fixtures/hosts/h200-1gpu/host.txt)."""
    from tqdeploy.startcache.hostfacts import driver_version

    host = Path(__file__).parent / "fixtures" / "hosts" / "h200-1gpu" / "host.txt"
    line = next(x for x in host.read_text().splitlines() if x.startswith("NVRM version:"))
    (tmp_path / "version").write_text(line + "\nGCC version: gcc 13\n")
    assert driver_version(tmp_path / "version") == "580.159.04"


def test_export_never_overwrites_a_file_that_is_not_an_artifact(tmp_path, artifact):
    from tqdeploy.startcache.artifact import _may_replace

    out, _ = artifact
    _may_replace(out)  # an artifact: replaced by the next export
    _may_replace(tmp_path / "new.tar.xz")  # nothing there
    theirs = tmp_path / "notes.tar.xz"
    theirs.write_text("the user's own file")
    with pytest.raises(TQError, match="is not a cache artifact: not overwritten"):
        _may_replace(theirs)
    assert theirs.read_text() == "the user's own file"
