"""Ask the running demo a few questions (the `make run` demo) and print each question with its answer.

    .venv/bin/python scripts/demo_chat.py build/demo
The address, the served name and the API key file come from the build's own spec (the demo is keyed like
the default spec: `tqdeploy build` created secrets/vllm-api-key); the key is read with safeio.read_key_file,
sent as a Bearer token and never printed. The state only says whether `up` got it ready. The demo serves
SmolLM2-135M-Instruct (`tqdeploy demo-model`): questions a 135M model answers, asked greedily (temperature 0)
with a bounded answer length, so the same build gives the same answers.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

from tqdeploy.runtime import read_state
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.safeio import read_key_file

QUESTIONS = ["What is the capital of France?", "How many days are in a week?", "What is 2 + 2?"]
MAX_TOKENS = 48
REPLY_LIMIT = 1024 * 1024  # bytes of one answer read at most


def ask(opener, url: str, headers: dict[str, str], model: str, question: str) -> tuple[str, int, float]:
    body = {"model": model, "messages": [{"role": "user", "content": question}], "temperature": 0}
    body["max_tokens"] = MAX_TOKENS
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    t0 = time.monotonic()
    with opener.open(request, timeout=120) as resp:
        reply = json.loads(resp.read(REPLY_LIMIT))
    return reply["choices"][0]["message"]["content"], reply["usage"]["completion_tokens"], time.monotonic() - t0


def main(build_dir: str) -> int:
    state = read_state(Path(build_dir))
    if not state or not state.get("ready"):
        print(f"{build_dir} is not running: `tqdeploy up {build_dir}` first", file=sys.stderr)
        return 1
    dep = load_deployment(Path(build_dir))
    headers = {"Content-Type": "application/json"}
    if dep.api_key_file is not None:
        headers["Authorization"] = f"Bearer {read_key_file(dep.api_key_file)}"
    url = dep.base_url + "/v1/chat/completions"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    keyed = f", key from {dep.api_key_file}" if dep.api_key_file is not None else ", no API key"
    print(f"POST {url} (model {dep.served_model_name}{keyed}; greedy, at most {MAX_TOKENS} tokens)")
    for question in QUESTIONS:
        text, tokens, took = ask(opener, url, headers, dep.served_model_name, question)
        print(f"  Q: {question}\n  A: {text.strip()}  ({tokens} tokens, {took:.2f} s)")
    return 0


if __name__ == "__main__":
    from tqdeploy.errors import TQError

    try:
        sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/demo"))
    except TQError as err:  # a missing or bad key file: one line and the fix, as the CLI says it
        print(f"demo_chat: {err.message}\n  fix: {err.remediation}", file=sys.stderr)
        sys.exit(2)
