"""What every command's help ends with: examples (runnable as written where the files exist) and the exit
codes. tests/test_docs_examples.py parses every example with the real CLI and runs those this machine can."""

from __future__ import annotations

EXIT_CODES = [
    ("0", "success, no error findings"),
    ("1", "the command ran and found errors (findings, a failed check or verification)"),
    ("2", "usage error or bad input (one line, with its fix)"),
    ("3", "a bug in tqdeploy (TQDEPLOY_DEBUG=1 adds the traceback)"),
    ("130", "interrupted (Ctrl-C)"),
]

# Runnable as written where the files exist; tests/test_docs_examples.py runs the ones this machine can.
EXAMPLES: dict[str, list[str]] = {
    "": [
        "tqdeploy doctor",
        "tqdeploy plan --model Qwen/Qwen3.6-27B@main --gpu H200",
        "tqdeploy lint -- vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc",
        "tqdeploy explain TQ101",
    ],
    "doctor": [
        "tqdeploy doctor",
        "tqdeploy doctor --json --fail-on warn",
        "tqdeploy doctor --snapshot-out host.json",
        "tqdeploy doctor --model /models/Qwen3.6-27B --file serve.sh",
        "tqdeploy doctor --model /models/Qwen3.6-27B -- vllm serve /models/Qwen3.6-27B --tensor-parallel-size 2",
    ],
    "plan": [
        "tqdeploy plan --model /models/Qwen3.6-27B --gpu H200 --gpus 2",
        "tqdeploy plan --model Qwen/Qwen3.6-27B@main --snapshot host.json --max-model-len 65536",
        "tqdeploy plan --model /models/Qwen3.6-27B --gpu H100-SXM --kv-cache-dtype turboquant_4bit_nc --json",
    ],
    "init": ["tqdeploy init --model Qwen/Qwen3.6-27B@main", "tqdeploy build"],
    "build": [
        "tqdeploy build tqdeploy.toml --out build",
        "tqdeploy build",
        "tqdeploy build --embedded tiny-cpu-demo --out build/demo",
        "tqdeploy build --check build",
    ],
    "demo-model": ["tqdeploy demo-model", "tqdeploy demo-model --to build/demo/models/smollm2 --json"],
    "download": [
        "tqdeploy download Qwen/Qwen3.6-27B@main --to models/Qwen--Qwen3.6-27B",
        "tqdeploy download --spec tqdeploy.toml --offline",
        "tqdeploy download --verify models/Qwen--Qwen3.6-27B",
    ],
    "lint": [
        "tqdeploy lint -- vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc",
        "tqdeploy lint --file serve.sh --json",
        "tqdeploy lint --fix -- vllm serve M --kv-cache-dtype turboquant4",
    ],
    "profile": ["tqdeploy profile build/demo --start warm", "tqdeploy profile --log vllm.log --json"],
    "connect": ["tqdeploy connect openai build", "tqdeploy connect claude-code build --check"],
    "up": ["tqdeploy up build/demo --python .venv-vllm/bin/python", "tqdeploy up build --json"],
    "status": ["tqdeploy status build/demo", "tqdeploy status build --json"],
    "check": [
        "tqdeploy check build/demo",
        "tqdeploy check --url http://127.0.0.1:8000 --api-key-file key --json",
        "tqdeploy check build/demo --record-reference",
    ],
    "tune": [
        "tqdeploy tune build/demo",
        "tqdeploy tune build/demo --dtypes auto,fp8 --concurrency 1,8,max --ttft-p99 2 --itl-p99 0.1 --json",
        "tqdeploy tune build/demo --apply",
    ],
    "logs": ["tqdeploy logs build/demo --since 5m", "tqdeploy logs build -f"],
    "down": ["tqdeploy down build/demo", "tqdeploy down build --grace-period 30 --json"],
    # `tqdeploy cache`'s subcommands (commands/cache.py): the help looks them up by their own name
    "export": ["tqdeploy cache export build/demo -o startcache.tar.xz", "tqdeploy cache export build/demo --json"],
    "import": [
        "tqdeploy cache import build/node2 startcache.tar.xz",
        "tqdeploy cache import build/node2 a.tar.xz --force",
    ],
    "bundle": ["tqdeploy bundle build -o bundle.tar.gz", "tqdeploy bundle --inspect bundle.tar.gz"],
    "explain": ["tqdeploy explain TQ101", "tqdeploy explain TQ302 --json"],
}
