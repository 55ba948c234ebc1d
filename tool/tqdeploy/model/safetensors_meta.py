"""Exact weight bytes from safetensors headers, without loading a tensor.

A safetensors file starts with an 8-byte little-endian header length and a JSON header that maps
each tensor to its dtype, shape and ``data_offsets`` [start, end) in the data section
(https://github.com/huggingface/safetensors, "Format"). Summing ``end - start`` gives the exact
bytes per dtype. Sharded checkpoints list their shards in model.safetensors.index.json.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError

MAX_HEADER_BYTES = 100 * 1024 * 1024  # the format's own limit on the header


def bytes_by_dtype(header: dict[str, Any], where: str) -> dict[str, int]:
    """Sum tensor bytes per dtype from a parsed header (``__metadata__`` skipped)."""
    out: dict[str, int] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            start, end = info["data_offsets"]
            dtype = str(info["dtype"])
        except (KeyError, TypeError, ValueError):
            raise TQError(f"{where}: tensor {name!r} has no dtype/data_offsets", "re-download the file") from None
        out[dtype] = out.get(dtype, 0) + int(end) - int(start)
    return out


def read_header(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                raise TQError(f"{path} is not a safetensors file (shorter than 8 bytes)", "re-download the file")
            (size,) = struct.unpack("<Q", raw)
            if size > MAX_HEADER_BYTES:
                raise TQError(f"{path} is not a safetensors file (header length {size})", "re-download the file")
            text = fh.read(size)
    except OSError as exc:
        raise TQError(f"cannot read {path}: {exc.strerror}", "check the file's permissions") from None
    if len(text) < size:
        raise TQError(
            f"{path} is truncated (header cut short)",
            "re-download the file; a *.incomplete download was probably renamed",
        )
    try:
        header = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise TQError(f"{path} has a corrupt safetensors header", "re-download the file") from None
    if not isinstance(header, dict):
        raise TQError(f"{path} has a corrupt safetensors header", "re-download the file")
    return header


def _merge(total: dict[str, int], part: dict[str, int]) -> None:
    for k, v in part.items():
        total[k] = total.get(k, 0) + v


def local_weight_bytes(model_dir: Path) -> tuple[int | None, dict[str, int], str | None]:
    """(total bytes, bytes per dtype, how it was read) for a local checkpoint folder."""
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        try:
            data = json.loads(index.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TQError(f"{index} is not valid JSON ({exc})", "re-download the index file") from None
        shards = sorted(set((data.get("weight_map") or {}).values()))
        present = [model_dir / s for s in shards if (model_dir / s).is_file()]
        if shards and len(present) == len(shards):
            per: dict[str, int] = {}
            for shard in present:
                _merge(per, bytes_by_dtype(read_header(shard), str(shard)))
            return sum(per.values()), per, "safetensors headers"
        total = (data.get("metadata") or {}).get("total_size")
        if isinstance(total, int) and total > 0:
            return total, {}, "index metadata"
        return None, {}, None
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        return None, {}, None
    per = {}
    for f in files:
        _merge(per, bytes_by_dtype(read_header(f), str(f)))
    return sum(per.values()), per, "safetensors headers"
