"""One chat completion against a running deployment (the `make run` demo): prints the request and the reply.

    .venv/bin/python scripts/demo_chat.py build/demo
The address and the served name come from the deployment's state (tqdeploy.runtime.read_state); the
tiny demo model has random weights, so its reply is gibberish: what counts is that vLLM answered.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

from tqdeploy.runtime import read_state
from tqdeploy.runtime.http import read_key


def main(build_dir: str) -> int:
    state = read_state(Path(build_dir))
    if not state or not state.get("ready"):
        print(f"{build_dir} is not running: `tqdeploy up {build_dir}` first", file=sys.stderr)
        return 1
    body = {"model": state["served_model_name"], "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 16}
    headers = {"Content-Type": "application/json"}
    key = read_key(Path(state["api_key_file"])) if state.get("api_key_file") else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = state["base_url"] + "/v1/chat/completions"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    t0 = time.monotonic()
    with opener.open(request, timeout=120) as resp:
        reply = json.load(resp)
    took = time.monotonic() - t0
    print(f"POST {url} (model {body['model']}): {body['messages'][0]['content']!r}")
    text, tokens = reply["choices"][0]["message"]["content"], reply["usage"]["completion_tokens"]
    print(f"reply in {took:.2f} s ({tokens} tokens): {text!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/demo"))
