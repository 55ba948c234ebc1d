"""A bounded load on a deployment's loopback address: concurrency steps of streamed completions, each step
ending after a request count or a duration, whichever comes first; TTFT and inter-token latency measured
on the client, /metrics sampled beside it (sampler.py)."""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass

from tqdeploy.errors import TQError

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
REQUEST_TIMEOUT_S = 120


@dataclass
class LoadSpec:
    concurrency: list[int]
    prompt_tokens: int = 64
    output_tokens: int = 32
    requests: int = 16  # per step
    duration_s: float | None = None  # per step, stops earlier than `requests` if reached
    sample_interval_s: float = 1.0  # /metrics scrape period (each scrape costs the API server some CPU)


def check_loopback(base_url: str) -> str:
    host = urllib.parse.urlsplit(base_url).hostname or ""
    if host not in LOOPBACK:
        raise TQError(
            f"--url {base_url!r} is not a loopback address: profile sends load only to this machine",
            "run tqdeploy profile on the serving host against http://127.0.0.1:PORT",
        )
    return base_url.rstrip("/")


def served_model(base_url: str) -> str:
    with urllib.request.urlopen(base_url + "/v1/models", timeout=10) as resp:
        return json.load(resp)["data"][0]["id"]


def _prompt(rng: random.Random, n: int) -> list[int]:
    # token ids, so the prompt length is exact for any tokenizer; small ids exist in every vocabulary
    return [rng.randrange(10, 250) for _ in range(n)]


def stream_one(base_url: str, model: str, prompt: list[int], max_tokens: int) -> dict:
    """One streamed completion: send time, token arrival times, error if any."""
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "stream": True,
        "ignore_eos": True,  # vLLM's sampling extension: exactly max_tokens tokens
        "temperature": 0.0,
        # delta token ids in every chunk (entrypoints/openai/completion/protocol.py return_token_ids): a
        # token whose text is still empty (a partial UTF-8 sequence) is counted when it arrives
        "return_token_ids": True,
    }
    req = urllib.request.Request(
        base_url + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    sent = time.perf_counter()
    arrivals: list[float] = []
    tokens = 0
    try:
        with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT_S) as resp:
            for raw in resp:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                choices = json.loads(line[6:]).get("choices", [])
                n = sum(len(c.get("token_ids") or []) or bool(c.get("text")) for c in choices)
                if n:
                    arrivals.append(time.perf_counter())
                    tokens += n
    except (OSError, ValueError) as exc:
        return {"sent": sent, "arrivals": arrivals, "tokens": tokens, "error": f"{type(exc).__name__}: {exc}"}
    return {"sent": sent, "arrivals": arrivals, "tokens": tokens, "error": None}


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run_step(base_url: str, model: str, spec: LoadSpec, concurrency: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    prompts = [_prompt(rng, spec.prompt_tokens) for _ in range(spec.requests)]
    results: list[dict] = []
    lock = threading.Lock()
    started = time.perf_counter()
    deadline = started + spec.duration_s if spec.duration_s else None

    def worker() -> None:
        while True:
            with lock:
                if not prompts or (deadline and time.perf_counter() >= deadline):
                    return
                prompt = prompts.pop()
            result = stream_one(base_url, model, prompt, spec.output_tokens)
            with lock:
                results.append(result)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return summarize_step(results, concurrency, elapsed)


def summarize_step(results: list[dict], concurrency: int, elapsed: float) -> dict:
    ok = [r for r in results if r["error"] is None and r["arrivals"]]
    ttft = [r["arrivals"][0] - r["sent"] for r in ok]
    itl = [b - a for r in ok for a, b in zip(r["arrivals"], r["arrivals"][1:], strict=False)]
    tokens = sum(r["tokens"] for r in ok)
    errors = [r["error"] for r in results if r["error"]]
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "completed": len(ok),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "seconds": round(elapsed, 3),
        "ttft_p50_s": _pct(ttft, 50),
        "ttft_p90_s": _pct(ttft, 90),
        "itl_p50_s": _pct(itl, 50),
        "itl_p90_s": _pct(itl, 90),
        "output_tokens": tokens,
        "output_tokens_per_s": round(tokens / elapsed, 3) if elapsed > 0 else None,
    }
