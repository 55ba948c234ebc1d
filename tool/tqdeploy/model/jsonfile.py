"""JSON from a checkpoint (config.json, model.safetensors.index.json, safetensors headers) read defensively.

Only regular files are opened (a FIFO named config.json would block a read forever), with O_NONBLOCK so the
check and the open are one step; sizes are capped; NaN/Infinity (which Python's json accepts and JSON does
not), integers past Python's digit limit and nesting deeper than any real config are one TQError naming
the file, never an internal error.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.jsonin import nesting_depth

MAX_CONFIG_BYTES = 8 << 20  # real config.json files are a few KiB; id2label-heavy ones stay under 1 MiB
MAX_INDEX_BYTES = 64 << 20  # model.safetensors.index.json of the largest checkpoints is ~ 10 MiB
MAX_DEPTH = 64  # config.json nests a few levels (text_config.rope_scaling...); 64 is generous


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def open_regular(path: Path, fix: str) -> int:
    """A read-only descriptor of a regular file (symlinks followed, as HF cache snapshots need); TQError else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise TQError(f"{path} not found", fix) from None
    except OSError as err:
        raise TQError(f"cannot read {path}: {err.strerror or err}", fix) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TQError(f"{path} is not a regular file (a FIFO, device or folder)", fix)
    os.set_blocking(fd, True)
    return fd


def read_regular(path: Path, max_bytes: int, fix: str) -> bytes:
    fd = open_regular(path, fix)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TQError(f"{path} is larger than {max_bytes >> 20} MiB: not a checkpoint's JSON file", fix)
    return data


def parse_json(data: bytes | str, where: str, fix: str) -> Any:
    """json.loads, with every way hostile text can fail it as one TQError naming `where`."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data  # not json's UTF-16/32 guessing
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise TQError(f"{where} is nested too deeply to be a checkpoint's JSON", fix) from None
    except MemoryError:
        raise TQError(f"{where} is too large to parse", fix) from None
    except (ValueError, UnicodeDecodeError) as err:  # JSONDecodeError, NaN/Infinity, over 4300-digit integers
        raise TQError(f"{where} is not valid JSON ({str(err)[:120]})", fix) from None
    if nesting_depth(value, MAX_DEPTH) > MAX_DEPTH:
        raise TQError(f"{where} nests deeper than {MAX_DEPTH} levels: not a checkpoint's JSON", fix)
    return value


def read_json_file(path: Path, max_bytes: int = MAX_CONFIG_BYTES, fix: str = "restore the checkpoint's file") -> Any:
    return parse_json(read_regular(Path(path), max_bytes, fix), str(path), fix)
