"""Exact weight bytes from safetensors headers: checked against the safetensors library on real
checkpoints written by transformers (single file and sharded), and broken files."""

import json
import struct
import subprocess
from pathlib import Path

import pytest

from tqdeploy.errors import TQError
from tqdeploy.model import load_model_facts
from tqdeploy.model.safetensors_meta import local_weight_bytes

REPO = Path(__file__).resolve().parents[1]
VLLM_PY = REPO / ".venv-vllm" / "bin" / "python"

SAVE = r"""
import sys, torch
from transformers import Qwen2Config, Qwen2ForCausalLM
from safetensors import safe_open
import glob, json
torch.manual_seed(0)
cfg = Qwen2Config(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
m = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
m.model.norm.weight.data = m.model.norm.weight.data.float()  # a second dtype in the file
out = {}
for folder, shard in zip(sys.argv[1::2], sys.argv[2::2]):  # one torch import for every checkpoint
    m.save_pretrained(folder, safe_serialization=True, max_shard_size=shard)
    per = {}
    for f in glob.glob(folder + "/*.safetensors"):
        with safe_open(f, "pt") as fh:
            for k in fh.keys():
                t = fh.get_tensor(k)
                per[str(t.dtype)] = per.get(str(t.dtype), 0) + t.numel() * t.element_size()
    out[folder] = per
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    if not VLLM_PY.exists():
        pytest.skip("needs the vLLM venv (torch, transformers, safetensors) to write real checkpoints")
    dirs = {name: (tmp_path_factory.mktemp(name), shard) for name, shard in (("single", "100MB"), ("sharded", "200KB"))}
    args = [a for d, shard in dirs.values() for a in (str(d), shard)]
    res = subprocess.run([str(VLLM_PY), "-c", SAVE, *args], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    truth = json.loads(res.stdout.strip().splitlines()[-1])
    return {name: (d, truth[str(d)]) for name, (d, _) in dirs.items()}


def test_single_file_bytes_per_dtype_equal_safetensors_library(checkpoints):
    d, truth = checkpoints["single"]
    total, per, how = local_weight_bytes(d)
    assert how == "safetensors headers"
    assert per == {"BF16": truth["torch.bfloat16"], "F32": truth["torch.float32"]}
    assert total == sum(truth.values())


def test_sharded_checkpoint_reads_every_shard(checkpoints):
    d, truth = checkpoints["sharded"]
    assert len(list(d.glob("*.safetensors"))) > 1 and (d / "model.safetensors.index.json").exists()
    facts = load_model_facts(str(d))
    assert facts.weight_bytes == sum(truth.values())
    assert facts.weight_source == "safetensors headers"


def test_index_without_shards_uses_total_size(checkpoints, tmp_path):
    d, _ = checkpoints["sharded"]
    (tmp_path / "config.json").write_text((d / "config.json").read_text())
    index = json.loads((d / "model.safetensors.index.json").read_text())
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    total, per, how = local_weight_bytes(tmp_path)
    assert (total, per, how) == (index["metadata"]["total_size"], {}, "index metadata")


def test_truncated_and_garbage_files_are_named(tmp_path):
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"\x01\x02")
    with pytest.raises(TQError, match="model.safetensors is not a safetensors file"):
        local_weight_bytes(tmp_path)
    bad.write_bytes(struct.pack("<Q", 500) + b'{"a": 1')
    with pytest.raises(TQError, match="truncated"):
        local_weight_bytes(tmp_path)
    bad.write_bytes(struct.pack("<Q", 7) + b"\xff\xfe{{{{{")
    with pytest.raises(TQError, match="corrupt safetensors header"):
        local_weight_bytes(tmp_path)
    (tmp_path / "model.safetensors.index.json").write_text("{")
    with pytest.raises(TQError, match="index.json is not valid JSON"):
        local_weight_bytes(tmp_path)


def test_an_index_in_a_hugging_face_cache_snapshot_reads_its_symlinked_shards(tmp_path):
    # models--org--name/snapshots/<commit>/ holds symlinks into ../../blobs/: the cache's own layout.
    import json as _json

    from tqdeploy.model.safetensors_meta import local_weight_bytes

    blobs = tmp_path / "blobs"
    blobs.mkdir()
    header = _json.dumps({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}}).encode()
    (blobs / "abc").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    snap = tmp_path / "snapshots" / "c0ffee"
    snap.mkdir(parents=True)
    (snap / "model-00001.safetensors").symlink_to("../../blobs/abc")
    (snap / "model.safetensors.index.json").write_text(_json.dumps({"weight_map": {"w": "model-00001.safetensors"}}))
    assert local_weight_bytes(snap) == (8, {"BF16": 8}, "safetensors headers")
