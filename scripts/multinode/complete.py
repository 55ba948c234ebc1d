"""One completion through the leader of a running multi-node deployment, keyed like every tqdeploy build: the
key is read from the build's own server.api_key_file (safeio.read_key_file), sent as a Bearer token, never
printed. The tiny model's weights are random: what counts is that both pipeline stages answered.

    .venv/bin/python scripts/multinode/complete.py BUILD_DIR
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.safeio import read_key_file

MAX_ANSWER = 1 << 20


def complete(build_dir: Path, prompt: str = "Hello", max_tokens: int = 8) -> dict:
    dep = load_deployment(build_dir)
    body = {"model": dep.served_model_name, "prompt": prompt, "max_tokens": max_tokens}
    headers = {"Content-Type": "application/json"}
    if dep.api_key_file is not None:
        headers["Authorization"] = f"Bearer {read_key_file(dep.api_key_file)}"
    request = urllib.request.Request(dep.base_url + "/v1/completions", json.dumps(body).encode(), headers)
    with urllib.request.urlopen(request, timeout=120) as resp:
        return json.loads(resp.read(MAX_ANSWER))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: complete.py BUILD_DIR", file=sys.stderr)
        return 2
    answer = complete(Path(argv[0]))
    choice = answer["choices"][0]
    print(f"completion: {choice['text']!r} ({answer['usage']['completion_tokens']} tokens, {answer['model']})")
    print(f"system_fingerprint: {answer.get('system_fingerprint')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
