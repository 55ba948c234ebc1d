"""A bounded load on a deployment's loopback address: concurrency steps of streamed completions, each step
ending after a request count or a duration, whichever comes first; TTFT and inter-token latency measured
on the client, /metrics sampled beside it (sampler.py)."""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
from dataclasses import dataclass

from tqdeploy.errors import TQError
from tqdeploy.net import Answer, Client, check_url, is_loopback, model_ids, redact_url
from tqdeploy.net.urls import origin

REQUEST_TIMEOUT_S = 120
# Bounds of one profile's load: a prompt is built in memory and each step runs to its end, so an unbounded
# figure (--prompt-tokens 1000000000) would hang. A 1 Mi-token prompt is beyond the longest context vLLM
# serves today; the served model's own max_model_len is checked against the server (profile/server.py).
LIMITS = {
    "--prompt-tokens": 1 << 20,
    "--output-tokens": 1 << 17,
    "--requests": 100_000,
    "--concurrency": 4096,
}
MAX_STEPS = 16
MAX_DURATION_S = 24 * 3600.0


@dataclass
class LoadSpec:
    concurrency: list[int]
    prompt_tokens: int = 64
    output_tokens: int = 32
    requests: int = 16  # per step
    duration_s: float | None = None  # per step, stops earlier than `requests` if reached
    sample_interval_s: float = 1.0  # /metrics scrape period (each scrape costs the API server some CPU)


def _positive(flag: str, value: int) -> int:
    if not 1 <= value <= LIMITS[flag]:
        raise TQError(f"{flag} {value} is outside 1..{LIMITS[flag]}", f"e.g. {flag} 16")
    return value


def concurrency_steps(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        values = []
    if not values or len(values) > MAX_STEPS:
        raise TQError(
            f"--concurrency {text[:80]!r} is not a list of 1 to {MAX_STEPS} positive integers",
            "e.g. --concurrency 1,4,8",
        )
    return [_positive("--concurrency", v) for v in values]


def load_spec(
    concurrency: str, prompt_tokens: int, output_tokens: int, requests: int, duration: float | None, interval: float
) -> LoadSpec:
    """The command line's load, every figure bounded (a one-line error naming the flag otherwise)."""
    for flag, value in (
        ("--prompt-tokens", prompt_tokens),
        ("--output-tokens", output_tokens),
        ("--requests", requests),
    ):
        _positive(flag, value)
    if not 0.05 <= interval <= 60:  # nan fails this too
        raise TQError(f"--sample-interval {interval} is outside 0.05..60 s", "e.g. --sample-interval 1")
    if duration is not None and not 0 < duration <= MAX_DURATION_S:
        raise TQError(f"--duration {duration} is outside 0..{MAX_DURATION_S:g} seconds", "e.g. --duration 30")
    return LoadSpec(concurrency_steps(concurrency), prompt_tokens, output_tokens, requests, duration, interval)


def check_loopback(base_url: str) -> str:
    """--url: an http(s) URL of this machine (check_url's rules: no other scheme, no user or password)."""
    url = check_url(base_url, "--url")
    if not is_loopback(origin(url).host):
        raise TQError(
            f"--url {redact_url(base_url)!r} is not a loopback address: profile sends load only to this machine",
            "run tqdeploy profile on the serving host against http://127.0.0.1:PORT",
        )
    return url


def served_model(client: Client) -> tuple[str | None, Answer]:
    """The first model /v1/models lists, and the answer (a 401, a bad shape: the caller's finding)."""
    answer = client.get("/v1/models", timeout=10)
    ids = model_ids(answer)
    return (ids[0] if ids else None), answer


def _prompt(rng: random.Random, n: int) -> list[int]:
    # token ids, so the prompt length is exact for any tokenizer; small ids exist in every vocabulary
    return [rng.randrange(10, 250) for _ in range(n)]


def _tokens_in(line: str) -> int:
    """Tokens one `data:` event carries; 0 for other lines. A malformed event raises ValueError."""
    if not line.startswith("data: ") or line == "data: [DONE]":
        return 0
    event = json.loads(line[6:])
    choices = event.get("choices", []) if isinstance(event, dict) else None
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise ValueError(f"not a completion event: {line[:120]}")
    return sum(len(c.get("token_ids") or []) or bool(c.get("text")) for c in choices)


def stream_one(client: Client, model: str, prompt: list[int], max_tokens: int, deadline: float | None = None) -> dict:
    """One streamed completion: send time, token arrival times, error if any. It ends at the monotonic
    ``deadline`` (else REQUEST_TIMEOUT_S from now) even when the server stalls mid-stream."""
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
    sent = time.perf_counter()
    arrivals: list[float] = []
    tokens = 0
    end = min(deadline, time.monotonic() + REQUEST_TIMEOUT_S) if deadline else time.monotonic() + REQUEST_TIMEOUT_S
    error = None
    with client.stream("/v1/completions", body, deadline=end) as st:
        if st.status != 200 and not st.error:
            st.error = f"HTTP {st.status}"
        try:
            for line in st.lines():
                n = _tokens_in(line)
                if n:
                    arrivals.append(time.perf_counter())
                    tokens += n
        except ValueError as exc:
            error = f"{type(exc).__name__}: {exc}"[:300]
        error = error or (f"HTTP {st.status}: {st.error}" if st.status not in (0, 200) else st.error) or None
        status = st.status
    return {"sent": sent, "arrivals": arrivals, "tokens": tokens, "error": error, "status": status}


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run_step(client: Client, model: str, spec: LoadSpec, concurrency: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    prompts = [_prompt(rng, spec.prompt_tokens) for _ in range(spec.requests)]
    results: list[dict] = []
    lock = threading.Lock()
    started = time.perf_counter()
    # --duration bounds the step and each request in it (a stalled stream included), on the monotonic clock
    deadline = time.monotonic() + spec.duration_s if spec.duration_s else None

    def worker() -> None:
        while True:
            with lock:
                if not prompts or (deadline and time.monotonic() >= deadline):
                    return
                prompt = prompts.pop()
            result = stream_one(client, model, prompt, spec.output_tokens, deadline)
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
