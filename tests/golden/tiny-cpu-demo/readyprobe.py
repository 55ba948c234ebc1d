# Rendered by tqdeploy 0.1.0 from spec tiny-cpu-demo
# (spec sha256 675a31358f523a7dfcd373efec9fad3f88825c38626cc421ed7ec24366f9246f).
"""Readiness: one real completion from the server, not only GET /health.

vLLM's /health answers 200 while a wedged engine cannot serve (vLLM issues #36960, #39863). This sends a bounded
request through the whole path, API key check included: POST /v1/completions for the served model, max_tokens 1,
greedy, and passes only when the answer is HTTP 200 with a completion in it. Exit 0 ready, 1 not ready; one line on
stderr says why, never the key. Standard library only: vLLM's images have python3.

Usage: python3 readyprobe.py [--port N] [--model NAME] [--key-file PATH] [--timeout S]
The key file defaults to $TQ_API_KEY_FILE, as serve.sh reads it, else /run/secrets/vllm-api-key.
"""

import argparse
import json
import os
import stat
import sys
import urllib.error
import urllib.request

ANSWER_MAX_BYTES = 1 << 20  # a one-token completion is a few hundred bytes
KEY_MAX_BYTES = 4096  # launch_vllm.py's bound


def fail(why: str) -> None:
    print(f"readyprobe: not ready: {why}", file=sys.stderr)
    sys.exit(1)


def read_key(path: str) -> str:
    """The key file's first line. A Kubernetes Secret volume links it, so links are followed, to a regular file
    only: a FIFO there would block the probe until its timeout."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            fail(f"API key file {path} is not a regular file")
        with open(path, "rb") as fh:
            data = fh.read(KEY_MAX_BYTES + 1)
    except OSError as err:
        fail(f"API key file {path}: {err.strerror}")
    key = data.rstrip(b"\r\n")
    if not key or len(data) > KEY_MAX_BYTES or any(c < 0x21 or c > 0x7E for c in key):
        fail(f"API key file {path} is empty or not one line of printable ASCII")
    return key.decode("ascii")


def main() -> None:
    parser = argparse.ArgumentParser(description="readiness: one real completion")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--key-file", default=os.environ.get("TQ_API_KEY_FILE") or "/run/secrets/vllm-api-key")
    parser.add_argument("--timeout", type=float, default=8.0)
    args = parser.parse_args()
    if not 0 < args.timeout <= 60:
        fail("--timeout must be in (0, 60] seconds")
    url = f"http://127.0.0.1:{args.port}/v1/completions"
    body = {"model": args.model, "prompt": "Hello", "max_tokens": 1, "temperature": 0}
    headers = {"Content-Type": "application/json"}
    if args.key_file:
        headers["Authorization"] = "Bearer " + read_key(args.key_file)
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as response:
            status, raw = response.status, response.read(ANSWER_MAX_BYTES + 1)
    except urllib.error.HTTPError as err:
        fail(f"HTTP {err.code} from {url}")
    except (OSError, ValueError) as err:  # refused, reset, timed out
        fail(f"{url}: {getattr(err, 'reason', err)}")
    if status != 200 or len(raw) > ANSWER_MAX_BYTES:
        fail(f"HTTP {status} from {url}" if status != 200 else f"an answer over {ANSWER_MAX_BYTES} bytes")
    try:
        choices = json.loads(raw)["choices"]
        ok = isinstance(choices, list) and choices and isinstance(choices[0].get("text"), str)
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        fail(f"no completion in the answer from {url}")


if __name__ == "__main__":
    main()
