"""A bounded load on a deployment's loopback address: concurrency steps of streamed completions, each step
ending after a request count or a duration, whichever comes first; TTFT and inter-token latency measured
on the client, /metrics sampled beside it (sampler.py)."""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
from dataclasses import dataclass, replace
from typing import TypedDict

from tqdeploy.errors import TQError
from tqdeploy.net import Answer, Client, check_url, is_loopback, model_ids, redact_url
from tqdeploy.net.urls import origin
from tqdeploy.profile.jsontypes import JSONObject

REQUEST_TIMEOUT_S = 120  # of silence: a streamed request whose server sends nothing that long has stalled
UNBOUNDED_REQUEST_S = 24 * 3600.0  # without --duration a request may stream as long as it keeps streaming
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
WARMUP_SEED = 1 << 20  # a warm-up's prompts are not the step's (a prefix-cache hit would flatter the step)
MAX_WARMUP_S = 600.0  # per step; a warm-up is a few seconds, more is a typo


@dataclass
class LoadSpec:
    concurrency: list[int]
    prompt_tokens: int = 64
    output_tokens: int = 32
    requests: int = 16  # per step
    duration_s: float | None = None  # per step, stops earlier than `requests` if reached
    sample_interval_s: float = 1.0  # /metrics scrape period (each scrape costs the API server some CPU)
    # Untimed seconds at each step's concurrency before the timed step: the first requests after a start or a
    # change of batch size pay one-time work (a first batch shape, allocator growth, the client's own threads
    # starting), which weighs on a short step; two plain starts of one H200 server measured 444.8 and 561.3
    # tokens/s at concurrency 1 without it (docs/startup.md).
    warmup_s: float = 0.0


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


# A stream that fails within this much of the step's deadline was ended by it (the socket timeout is the time
# left, so it fires at the deadline, give or take the scheduler).
CUT_SLACK_S = 0.25
# ...and that received its last token (or was sent) at most this long before it; quieter than that, it stalled.
CUT_QUIET_S = 1.0


def load_spec(
    concurrency: str,
    prompt_tokens: int,
    output_tokens: int,
    requests: int,
    duration: float | None,
    interval: float,
    warmup: float = 0.0,
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
    if not 0 <= warmup <= MAX_WARMUP_S:
        raise TQError(f"--warmup {warmup} is outside 0..{MAX_WARMUP_S:g} seconds", "e.g. --warmup 5")
    return LoadSpec(concurrency_steps(concurrency), prompt_tokens, output_tokens, requests, duration, interval, warmup)


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
    try:
        event = json.loads(line[6:])
    except RecursionError:  # an event nested past json's recursion: malformed like any other
        raise ValueError(f"not a completion event: {line[:120]}") from None
    choices = event.get("choices", []) if isinstance(event, dict) else None
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise ValueError(f"not a completion event: {line[:120]}")
    return sum(len(c.get("token_ids") or []) or bool(c.get("text")) for c in choices)


class StreamResult(TypedDict):
    """One streamed completion as stream_one saw it: perf_counter times, the error that ended it (None: none)."""

    sent: float
    arrivals: list[float]
    tokens: int
    error: str | None
    status: int
    cut: bool  # ended by the step's own --duration while tokens were arriving
    stalled: bool


def stream_one(
    client: Client, model: str, prompt: list[int], max_tokens: int, deadline: float | None = None
) -> StreamResult:
    """One streamed completion: send time, token arrival times, error if any. It ends at the monotonic
    ``deadline`` (--duration's), or after REQUEST_TIMEOUT_S without a byte: a server that stalls mid-stream
    cannot hold it longer."""
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
    end = deadline if deadline else time.monotonic() + UNBOUNDED_REQUEST_S
    error: str | None = None
    with client.stream("/v1/completions", body, deadline=end, read_timeout=REQUEST_TIMEOUT_S) as st:
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
        status, stalled = st.status, st.stalled
    # The step's own --duration ended this stream while tokens were still arriving: the step is over, the server
    # did not fail. Counted apart (`cut`), never as an error (on the H200 every request in flight at the end of a
    # step was counted failed). A stream that went quiet before the deadline stalled: that stays an error.
    quiet_s = time.perf_counter() - (arrivals[-1] if arrivals else sent)
    at_deadline = deadline is not None and time.monotonic() >= deadline - CUT_SLACK_S
    cut = bool(error and status == 200 and at_deadline and quiet_s <= CUT_QUIET_S)
    if cut:
        error, stalled = None, False
    return StreamResult(
        sent=sent, arrivals=arrivals, tokens=tokens, error=error, status=status, cut=cut, stalled=stalled
    )


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run_step(client: Client, model: str, spec: LoadSpec, concurrency: int, seed: int = 0) -> JSONObject:
    rng = random.Random(seed)
    prompts = [_prompt(rng, spec.prompt_tokens) for _ in range(spec.requests)]
    results: list[StreamResult] = []
    lock = threading.Lock()
    started = time.perf_counter()
    # --duration bounds the step and each request in it (a stalled stream included), on the monotonic clock
    deadline = time.monotonic() + spec.duration_s if spec.duration_s else None

    stalled = threading.Event()  # a request that got nothing for its whole time: send the server no more

    def worker() -> None:
        while True:
            with lock:
                if not prompts or stalled.is_set() or (deadline and time.monotonic() >= deadline):
                    return
                prompt = prompts.pop()
            result = stream_one(client, model, prompt, spec.output_tokens, deadline)
            if result["stalled"]:
                stalled.set()
            with lock:
                results.append(result)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return summarize_step(results, concurrency, elapsed)


def warm_up(client: Client, model: str, spec: LoadSpec, concurrency: int, seed: int) -> JSONObject | None:
    """The untimed run before a step (--warmup): the same concurrency and request shape for warmup_s seconds,
    its prompts drawn apart from the step's; what it did is kept beside the step, its figures are not in it."""
    if spec.warmup_s <= 0:
        return None
    warm = replace(spec, duration_s=spec.warmup_s, requests=max(spec.requests, concurrency))
    step = run_step(client, model, warm, concurrency, seed=WARMUP_SEED + seed)
    return {k: step[k] for k in ("requests", "completed", "cut_at_duration", "errors", "first_error", "seconds")}


def summarize_step(results: list[StreamResult], concurrency: int, elapsed: float) -> JSONObject:
    ok = [r for r in results if r["error"] is None and not r.get("cut") and r["arrivals"]]
    cut = [r for r in results if r.get("cut")]
    ttft = [r["arrivals"][0] - r["sent"] for r in ok]
    itl = [b - a for r in ok for a, b in zip(r["arrivals"], r["arrivals"][1:], strict=False)]
    # Every token that arrived inside the step counts, a failed stream's too: on the H200, plain vLLM's 64-way steps
    # had up to 33 of 1,697 streams fail at the step's end (quiet > CUT_QUIET_S, so not "cut"); leaving their
    # tokens out (at most 33 x 128 of a 15 s step's ~213,000) lowered its tokens/s by up to 2% (docs/startup.md).
    tokens = sum(r["tokens"] for r in results)
    errors = [r["error"] for r in results if r["error"]]
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "completed": len(ok),
        "cut_at_duration": len(cut),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "seconds": round(elapsed, 3),
        "ttft_p50_s": _pct(ttft, 50),
        "ttft_p90_s": _pct(ttft, 90),
        "itl_p50_s": _pct(itl, 50),
        "itl_p90_s": _pct(itl, 90),
        # p99: what a latency target is stated in (tqdeploy tune's --ttft-p99/--itl-p99 goodput)
        "ttft_p99_s": _pct(ttft, 99),
        "itl_p99_s": _pct(itl, 99),
        "output_tokens": tokens,
        "output_tokens_per_s": round(tokens / elapsed, 3) if elapsed > 0 else None,
    }
