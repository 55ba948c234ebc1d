"""Write a bf16 safetensors file ourselves: the format is an 8-byte little-endian header length, a JSON header
({name: {dtype, shape, data_offsets}}, padded with spaces to 8 bytes), then the tensors' bytes back to back
(huggingface/safetensors' format description, README "Format"). The header is known before any tensor is
read, so tensors are converted and written one at a time: memory stays at one tensor, not the model.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable
from typing import BinaryIO

import numpy as np

from tqdeploy.errors import TQError

ALIGN = 8


def to_bf16(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits (uint16), rounded to nearest even as torch's .to(torch.bfloat16) does."""
    if not np.isfinite(values).all():
        raise TQError("the model holds a non-finite weight", "use the pinned GGUF")
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    return ((bits + rounding) >> 16).astype(np.uint16)


def header(shapes: Iterable[tuple[str, tuple[int, ...]]], metadata: dict[str, str]) -> bytes:
    """The length-prefixed, padded JSON header for bf16 tensors stored in the order given."""
    entries: dict[str, object] = {"__metadata__": metadata}
    offset = 0
    for name, shape in shapes:
        size = 2 * math.prod(shape)
        entries[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(entries, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % ALIGN)
    return struct.pack("<Q", len(raw)) + raw


def write_tensor(out: BinaryIO, values: np.ndarray) -> None:
    out.write(to_bf16(values).astype("<u2", copy=False).tobytes())
