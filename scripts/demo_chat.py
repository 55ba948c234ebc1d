"""One chat completion against a running deployment (the `make run` demo): prints the request and the reply.

    .venv/bin/python scripts/demo_chat.py build/demo
The address, the served name and the API key file come from the build's own spec (the demo is keyed like
the default spec: `tqdeploy build` created secrets/vllm-api-key); the key is read with safeio.read_key_file,
sent as a Bearer token and never printed. The state only says whether `up` got it ready. The tiny demo
model has random weights, so its reply is gibberish: what counts is that vLLM answered.
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


def main(build_dir: str) -> int:
    state = read_state(Path(build_dir))
    if not state or not state.get("ready"):
        print(f"{build_dir} is not running: `tqdeploy up {build_dir}` first", file=sys.stderr)
        return 1
    dep = load_deployment(Path(build_dir))
    body = {"model": dep.served_model_name, "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 16}
    headers = {"Content-Type": "application/json"}
    if dep.api_key_file is not None:
        headers["Authorization"] = f"Bearer {read_key_file(dep.api_key_file)}"
    url = dep.base_url + "/v1/chat/completions"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    t0 = time.monotonic()
    with opener.open(request, timeout=120) as resp:
        reply = json.load(resp)
    took = time.monotonic() - t0
    keyed = f", key from {dep.api_key_file}" if dep.api_key_file is not None else ", no API key"
    print(f"POST {url} (model {body['model']}{keyed}): {body['messages'][0]['content']!r}")
    text, tokens = reply["choices"][0]["message"]["content"], reply["usage"]["completion_tokens"]
    print(f"reply in {took:.2f} s ({tokens} tokens): {text!r}")
    return 0


if __name__ == "__main__":
    from tqdeploy.errors import TQError

    try:
        sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/demo"))
    except TQError as err:  # a missing or bad key file: one line and the fix, as the CLI says it
        print(f"demo_chat: {err.message}\n  fix: {err.remediation}", file=sys.stderr)
        sys.exit(2)
