"""Carries a filled cache volume from one lent GPU machine to the next (scripts/gpu/tools/startup.sh, issue 18).

A lease's first start is cold: plain vLLM's took 378-434 s on the H200, a quarter of the session's device time.
The build's cache volume holds every cache a start writes (docs/startup.md, item 1), so packing it at the end of
one lease and unpacking it before the next lease's first start turns that start into a recreated one (1.04x a
warm start on one machine), if the caches hit on another machine of the same kind: the manifest records the GPU
and driver it was filled on, so the next lease can tell a miss from a hit.

Usage: volume_carry.py pack VOLUME DEST --key-file F [--gpu TEXT] [--part-mib 15]
       volume_carry.py unpack SRC VOLUME
pack writes DEST/volume.json and DEST/cache.tar.xz.NN parts (a device call returns at most 8 files of 16 MiB,
64 MiB in all); it refuses when a file on the volume holds the API key. unpack checks every part against the
manifest and extracts with tarfile's "data" filter (no links or paths out of VOLUME) into a VOLUME that holds no
files (missing, or folders only).
Exit codes: 0 done, 2 bad input (one line naming it and the fix).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tool"))

from tqdeploy.errors import TQError, report_error  # noqa: E402

# A device call returns at most 8 files of 16 MiB, 64 MiB in all, and the working tree that travels is at most
# 64 MiB: the parts, the manifest and the run's own records must fit beside each other.
MAX_PARTS = 6
MAX_PACKED = 48 << 20
MAX_UNPACKED = 4 << 30  # bytes: the volume was 85 MB after lease 8's starts
MANIFEST = "volume.json"
SCHEMA = "tqdeploy.gpu-volume/1"


def files_holding(volume: Path, secret: bytes) -> list[str]:
    """Files under volume that hold the key, its encodings, a token variable's value or a known token form: the
    check `tqdeploy cache export` makes (tool/tqdeploy/startcache/secrets.py); links are never followed."""
    from tqdeploy.startcache.pack import walk
    from tqdeploy.startcache.secrets import files_holding as holding
    from tqdeploy.startcache.secrets import needles

    files = walk(volume)[1]
    return sorted(path for path, _why in holding(volume, files, needles(secret.decode("utf-8", "replace"))))


def pack(volume: Path, dest: Path, key_file: Path, gpu: str, part_mib: int) -> dict:
    if not volume.is_dir():
        raise TQError(f"{volume}: not a folder", "give the build's cache volume, BUILD/.tqdeploy/cache")
    try:
        secret = key_file.read_bytes().strip()
    except OSError as err:
        raise TQError(f"{key_file}: unreadable ({err.strerror})", "give the build's secrets/vllm-api-key") from err
    if not secret:
        raise TQError(f"{key_file}: empty", "give the build's secrets/vllm-api-key")
    holding = files_holding(volume, secret)
    if holding:
        raise TQError(f"{len(holding)} file(s) on the volume hold the API key: {', '.join(holding[:5])}",
                         "remove them (or the key from vLLM's environment) before carrying the volume")  # fmt: skip
    buf = io.BytesIO()
    count, unpacked = 0, 0
    with tarfile.open(fileobj=buf, mode="w:xz", preset=6) as tar:
        for root, dirs, names in os.walk(volume):
            dirs.sort()
            for name in dirs:  # empty folders too (huggingface/ before any download): the build made them
                path = Path(root, name)
                if not path.is_symlink():
                    tar.add(path, arcname=str(path.relative_to(volume)), recursive=False)
            for name in sorted(names):
                path = Path(root, name)
                if path.is_symlink() or not path.is_file():
                    continue  # only regular files travel: a link could name anything on the machine
                tar.add(path, arcname=str(path.relative_to(volume)), recursive=False)
                count, unpacked = count + 1, unpacked + path.stat().st_size
    blob = buf.getvalue()
    size = part_mib << 20
    chunks = [blob[i : i + size] for i in range(0, len(blob), size)] or [b""]
    if len(chunks) > MAX_PARTS or len(blob) > MAX_PACKED:
        raise TQError(
            f"the packed volume is {len(blob) / (1 << 20):.1f} MiB in {len(chunks)} parts of {part_mib} MiB",
            f"one call returns at most {MAX_PARTS} parts and {MAX_PACKED >> 20} MiB beside its records: carry less",
        )
    dest.mkdir(parents=True, exist_ok=True)
    parts = []
    for n, chunk in enumerate(chunks):
        name = f"cache.tar.xz.{n:02d}"
        (dest / name).write_bytes(chunk)
        parts.append({"name": name, "bytes": len(chunk), "sha256": hashlib.sha256(chunk).hexdigest()})
    manifest = {"schema": SCHEMA, "files": count, "unpacked_bytes": unpacked, "packed_bytes": len(blob),
                "gpu": gpu[:200], "parts": parts}  # fmt: skip
    tmp = dest / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    tmp.replace(dest / MANIFEST)
    return manifest


def unpack(src: Path, volume: Path) -> dict:
    try:
        manifest = json.loads((src / MANIFEST).read_text()[: 1 << 20])
        parts = manifest["parts"]
        if manifest.get("schema") != SCHEMA or not isinstance(parts, list) or not 0 < len(parts) <= MAX_PARTS:
            raise ValueError("not a volume manifest")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise TQError(f"{src / MANIFEST}: not a readable volume manifest ({err})",
                         "give the folder volume_carry.py pack wrote") from err  # fmt: skip
    if volume.is_symlink() or (volume.exists() and not volume.is_dir()):
        raise TQError(f"{volume}: not a folder", "give the build's cache volume, BUILD/.tqdeploy/cache")
    if volume.exists() and any(p.is_file() or p.is_symlink() for p in volume.rglob("*")):
        raise TQError(f"{volume}: holds files already", "unpack into a build whose cache volume has not been used")
    blob = bytearray()
    for part in parts:
        name = str(part.get("name", ""))
        if Path(name).name != name or not name.startswith("cache.tar.xz."):
            raise TQError(f"{src / MANIFEST}: part name {name!r} is not a part", "pack the volume again")
        data = (src / name).read_bytes() if (src / name).is_file() else b""
        if hashlib.sha256(data).hexdigest() != part.get("sha256"):
            raise TQError(f"{src / name}: missing or not the part the manifest names", "carry every part again")
        blob += data
    # extracted beside the volume and renamed into place: a failed unpack leaves no half-filled volume
    partial = volume.with_name(f".{volume.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(bytes(blob)), mode="r:xz") as tar:
            for member in tar:
                total += member.size
                if total > MAX_UNPACKED:
                    raise TQError(f"{src}: unpacks to over {MAX_UNPACKED >> 30} GiB", "carry a smaller volume")
                tar.extract(member, partial, filter="data")  # refuses absolute paths, '..', links out, devices
        if volume.exists():
            shutil.rmtree(volume)  # only empty folders are left there (checked above)
        partial.rename(volume)
    except (tarfile.TarError, OSError, EOFError) as err:
        raise TQError(f"{src}: the parts do not unpack ({err})", "pack the volume again") from err
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return {"files": manifest.get("files"), "unpacked_bytes": total, "gpu": manifest.get("gpu")}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="verb", required=True)
    pk = sub.add_parser("pack")
    pk.add_argument("volume", type=Path)
    pk.add_argument("dest", type=Path)
    pk.add_argument("--key-file", type=Path, required=True)
    pk.add_argument("--gpu", default="")
    pk.add_argument("--part-mib", type=int, default=15)
    up = sub.add_parser("unpack")
    up.add_argument("src", type=Path)
    up.add_argument("volume", type=Path)
    args = p.parse_args(argv)
    try:
        if args.verb == "pack":
            if not 1 <= args.part_mib <= 16:
                raise TQError(f"--part-mib {args.part_mib} is outside 1..16", "e.g. --part-mib 15")
            result = pack(args.volume, args.dest, args.key_file, args.gpu, args.part_mib)
            result = {k: result[k] for k in ("files", "unpacked_bytes", "packed_bytes")} | {
                "parts": len(result["parts"])
            }
        else:
            result = unpack(args.src, args.volume)
    except TQError as exc:
        return report_error(exc, "volume_carry")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
