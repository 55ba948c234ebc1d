#!/usr/bin/env bash
# Records real vLLM start-up logs on a GPU host for the planner's calibration tests
# (tests/fixtures/vllm-logs/h200-vllm-0.25.0/dense-<dtype>-eager.log).
#
# Needs: vLLM 0.25.0 importable (PYTHONPATH), transformers + tokenizers, one free GPU.
# Model: "dense8" (Llama-style, 8 layers, 8 heads, 2 KV heads, head_dim 128, bf16) with dummy weights,
# the same shape as the recorded dense-*.log fixtures. Usage: record_kv_logs.sh OUT_DIR DTYPE...
set -u
out=${1:?usage: record_kv_logs.sh OUT_DIR DTYPE...}; shift
here=$(cd "$(dirname "$0")/../.." && pwd)
model=/tmp/dense8
python3 - "$model" "$here" <<'PY'
import json, sys
from pathlib import Path
out, repo = Path(sys.argv[1]), sys.argv[2]
sys.path.insert(0, repo + "/tests/support")
from make_tiny_model import train_tokenizer  # a locally trained BPE tokenizer (vocab 512)
out.mkdir(parents=True, exist_ok=True)
train_tokenizer(out)
(out / "config.json").write_text(json.dumps({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
    "intermediate_size": 4096, "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 2,
    "head_dim": 128, "max_position_embeddings": 32768, "vocab_size": 512, "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0, "torch_dtype": "bfloat16", "bos_token_id": 0, "eos_token_id": 0,
    "tie_word_embeddings": False}, indent=1))
PY
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1" 2>/dev/null; }
for dtype in "$@"; do
  log="$out/dense-$dtype-eager.log"
  setsid python3 -m vllm.entrypoints.openai.api_server --model "$model" --load-format dummy \
    --max-model-len 32768 --gpu-memory-utilization 0.9 --enforce-eager --kv-cache-dtype "$dtype" \
    --host 127.0.0.1 --port 18000 > "$log" 2>&1 &
  pid=$!
  t0=$(date +%s)
  while kill -0 "$pid" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt 240 ]; do
    if get http://127.0.0.1:18000/health >/dev/null; then
      echo "healthy after $(( $(date +%s) - t0 )) s" >> "$log.status"; break
    fi
    sleep 2
  done
  get http://127.0.0.1:18000/metrics > "$out/dense-$dtype-eager.metrics.txt"
  # stop the whole process group: the EngineCore child holds the GPU memory
  kill -TERM -- -"$pid" 2>/dev/null; sleep 5; kill -KILL -- -"$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  grep -h -E "KV cache|Maximum concurrency|TQ|backend" "$log" | head -8
done
