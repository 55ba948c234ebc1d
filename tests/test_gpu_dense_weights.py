"""scripts/gpu/tools/make_dense_weights.py's shapes and arguments (writing the weights needs CUDA: the H200 runs it)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "tools" / "make_dense_weights.py"
sys.path.insert(0, str(SCRIPT.parent))

import make_dense_weights as dense  # noqa: E402


def _bytes(layers: int) -> int:
    vocab = dense.CONFIG["vocab_size"]
    shards = [dense.shard_tensors(s, vocab, layers) for s in range(dense.SHARDS)]
    names = [n for shard in shards for n in shard]
    assert len(names) == len(set(names))  # each tensor in one shard
    assert sum(n.endswith("mlp.down_proj.weight") for n in names) == layers
    return 2 * sum(math.prod(shape) for shard in shards for shape in shard.values())  # bf16


def test_the_default_is_dense8w_and_32_layers_is_four_times_its_bytes():
    assert dense.parse_layers([]) == 8 and dense.config(8) == dense.CONFIG
    assert round(_bytes(8) / 1e9, 2) == 3.5  # "about 3.5 GB" (docs/startup.md)
    assert round(_bytes(32) / 1e9) == 14 and round(_bytes(32) / _bytes(8), 1) == 4.0
    assert dense.config(32)["num_hidden_layers"] == 32 and dense.parse_layers(["--layers", "32"]) == 32


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["out", "--layers", "6"], "--layers 6: give a multiple of 4 up to 64"),
        (["out", "--layers", "68"], "--layers 68: give a multiple of 4 up to 64"),
        (["out", "--layers", "x"], "give OUT_DIR [--layers N]"),
        (["--layers", "8"], "no OUT_DIR"),
    ],
)
def test_bad_arguments_are_one_line_before_any_weight_is_written(tmp_path, args, named):
    res = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert res.returncode == 1 and named in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert list(tmp_path.iterdir()) == []
