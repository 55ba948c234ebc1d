"""Exact weight bytes from safetensors headers, without loading a tensor.

A safetensors file starts with an 8-byte little-endian header length and a JSON header that maps
each tensor to its dtype, shape and ``data_offsets`` [start, end) in the data section
(https://github.com/huggingface/safetensors, "Format"). Summing ``end - start`` gives the exact
bytes per dtype. Sharded checkpoints list their shards in model.safetensors.index.json.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.model.jsonfile import MAX_INDEX_BYTES, open_regular, parse_json, read_json_file

MAX_HEADER_BYTES = 100 * 1024 * 1024  # the format's own limit on the header
_FIX = "re-download the file"


def _offsets(name: str, info: Any, where: str, data_bytes: int | None) -> tuple[str, int]:
    """(dtype, bytes) of one tensor entry; TQError unless data_offsets are two ints 0 <= start <= end <= data."""
    offsets = info.get("data_offsets") if isinstance(info, dict) else None
    dtype = info.get("dtype") if isinstance(info, dict) else None
    if (
        not isinstance(dtype, str)
        or not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
    ):
        raise TQError(f"{where}: tensor {name[:80]!r} has no dtype and [start, end] integer data_offsets", _FIX)
    start, end = offsets
    limit = data_bytes if data_bytes is not None else 1 << 50
    if not 0 <= start <= end <= limit:
        raise TQError(
            f"{where}: tensor {name[:80]!r} has data_offsets [{start}, {end}] outside its data "
            f"({'0..' + str(data_bytes) + ' bytes' if data_bytes is not None else 'negative or reversed'})",
            _FIX,
        )
    return dtype, end - start


def bytes_by_dtype(header: dict[str, Any], where: str, data_bytes: int | None = None) -> dict[str, int]:
    """Sum tensor bytes per dtype from a parsed header (``__metadata__`` skipped); data_bytes, when known,
    is the size of the file's data section, which every tensor must lie inside."""
    out: dict[str, int] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, size = _offsets(str(name), info, where, data_bytes)
        out[dtype] = out.get(dtype, 0) + size
    return out


def read_header(path: Path) -> tuple[dict[str, Any], int]:
    """(parsed header, size of the data section) of a local safetensors file; regular files only."""
    fd = open_regular(path, _FIX)
    try:
        with os.fdopen(fd, "rb") as fh:
            total = os.fstat(fh.fileno()).st_size
            raw = fh.read(8)
            if len(raw) < 8:
                raise TQError(f"{path} is not a safetensors file (shorter than 8 bytes)", _FIX)
            (size,) = struct.unpack("<Q", raw)
            if size > MAX_HEADER_BYTES:
                raise TQError(f"{path} is not a safetensors file (header length {size})", _FIX)
            text = fh.read(size)
    except OSError as exc:
        raise TQError(f"cannot read {path}: {exc.strerror}", "check the file's permissions") from None
    if len(text) < size:
        raise TQError(
            f"{path} is truncated (header cut short)",
            "re-download the file; a *.incomplete download was probably renamed",
        )
    try:
        header = parse_json(text, "it", _FIX)
    except TQError as err:
        raise TQError(f"{path} has a corrupt safetensors header: {err.message}", _FIX) from None
    if not isinstance(header, dict):
        raise TQError(f"{path} has a corrupt safetensors header", _FIX)
    return header, total - 8 - size


def _merge(total: dict[str, int], part: dict[str, int]) -> None:
    for k, v in part.items():
        total[k] = total.get(k, 0) + v


def _file_bytes(path: Path) -> dict[str, int]:
    header, data_bytes = read_header(path)
    return bytes_by_dtype(header, str(path), data_bytes)


def shard_paths(model_dir: Path, index: Path, data: Any) -> list[Path]:
    """The shards an index names, each inside model_dir; TQError for a weight_map that is not
    {tensor: file} or names a file outside the checkpoint folder (never opened)."""
    if not isinstance(data, dict):
        raise TQError(
            f"{index} is not a safetensors index (a JSON {type(data).__name__}, not an object with weight_map)",
            "re-download the index file",
        )
    weight_map = data.get("weight_map")
    if weight_map is None:
        return []
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise TQError(f"{index}: weight_map is not an object of tensor name -> file name", "re-download the index")
    shards = []
    for name in sorted(set(weight_map.values())):
        # By name, not by resolving: in the Hugging Face cache every file of a snapshot folder is a symlink
        # into ../../blobs/, which is the checkpoint's own layout, not an index escaping it.
        if not name or Path(name).is_absolute() or ".." in Path(name).parts or "\\" in name:
            raise TQError(
                f"{index}: weight_map names {name[:120]!r}, outside the checkpoint folder {model_dir}",
                "re-download the index; tqdeploy reads only files inside the checkpoint folder",
            )
        shards.append(model_dir / name)
    return shards


def _index_total_size(index: Path, data: dict[str, Any]) -> int | None:
    """metadata.total_size, the weights' bytes when shards are not (yet) there; None when the index has none.

    Present but not a byte count below 1 PiB (1e40, -5, "big"): an error, not a silent "size unknown".
    """
    meta = data.get("metadata")
    if meta is None:
        return None
    total = meta.get("total_size") if isinstance(meta, dict) else meta
    if total is None:
        return None
    if isinstance(total, bool) or not isinstance(total, int) or not 0 < total < 1 << 50:
        raise TQError(
            f"{index}: metadata.total_size = {repr(total)[:40]} is not a byte count (1 B..1 PiB)",
            "re-download the index file (or the missing shards, so their headers give the size)",
        )
    return total


def local_weight_bytes(model_dir: Path) -> tuple[int | None, dict[str, int], str | None]:
    """(total bytes, bytes per dtype, how it was read) for a local checkpoint folder."""
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        data = read_json_file(index, MAX_INDEX_BYTES, "re-download the index file")
        shards = shard_paths(model_dir, index, data)
        present = [s for s in shards if s.exists()]
        if shards and len(present) == len(shards):
            per: dict[str, int] = {}
            for shard in present:
                _merge(per, _file_bytes(shard))
            return sum(per.values()), per, "safetensors headers"
        total = _index_total_size(index, data)
        return (total, {}, "index metadata") if total is not None else (None, {}, None)
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        return None, {}, None
    per = {}
    for f in files:
        _merge(per, _file_bytes(f))
    return sum(per.values()), per, "safetensors headers"
