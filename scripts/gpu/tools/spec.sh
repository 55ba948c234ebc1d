# shellcheck shell=bash
# Sourced by the GPU recording scripts: the spec of a one-GPU vLLM 0.25.0 build serving a local checkpoint on
# 127.0.0.1:18000 (the vLLM that runs on the lent H200: scripts/gpu/README.md).
# GPU_MEMORY_UTILIZATION (default 0.9): startup.sh's ab phase runs two servers on one GPU at 0.45 each.
# gpu_spec NAME MODEL MAX_MODEL_LEN EXTRA_VLLM_LINES EXTRA_ARGS [SERVER_LINES] [MODEL_LINES]
#   EXTRA_ARGS: the body of a TOML list; SERVER_LINES: more [server] keys (acceptance.sh: api_key_file);
#   MODEL_LINES: where the model comes from (default: path = "./models/MODEL"; acceptance.sh: repo + mirrors)
gpu_spec() {
  cat <<TOML
schema = 1
name = "$1"
variant = "gpu"

[model]
${7:-path = \"./models/$2\"}
served_name = "$2"

[vllm]
version = "0.25.0"
$4
max_model_len = $3
gpu_memory_utilization = ${GPU_MEMORY_UTILIZATION:-0.9}
extra_args = [$5]

[image]
base = "vllm/vllm-openai:v0.25.0"

[server]
host = "127.0.0.1"
port = 18000${6:+
$6}

[resources]
gpus = "all"
shm_size = "16g"

[storage]
models_dir = "./models"
cache_dir = "./cache"
TOML
}
