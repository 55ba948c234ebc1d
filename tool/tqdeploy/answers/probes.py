"""The probes' requests to a running server and the parsing of its answers; no verdicts (detect.py, verdict.py).

Request fields, as read in vLLM's source (0.32.0 vllm/entrypoints/openai/completion/protocol.py, 0.25.0
vllm/entrypoints/openai/protocol.py, CompletionRequest): `prompt_logprobs` (int; 0 = only the prompt's own
token per position, -1 = the whole vocabulary, refused with stream=True) and `truncate_prompt_tokens` (keep the
last k prompt tokens). The answer's `choices[0].prompt_logprobs` is a list, one entry per prompt token: null for
the first (nothing to predict it from), then {token_id: {"logprob", "rank", "decoded_token"}} (vllm/logprobs.py
Logprob; -inf is sent as -9999.0, generate/base/serving.py clamp_prompt_logprobs). Chat answers carry
`choices[0].logprobs.content[i].token` with `logprobs: true` (the OpenAI shape; chat_completion/protocol.py).
Every request goes through tqdeploy.net's client: the key only to the origin, answers bounded in bytes and time.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

from tqdeploy.net import Answer, Client
from tqdeploy.net.answers import first_choice

ANSWER_LIMIT = 2 << 20  # prompt logprobs of ~1,300 tokens are ~150 KB; anything near 2 MiB is not that answer


class ProbeFailed(Exception):
    """The server gave no usable answer to a probe: the message says what came back (never the key)."""

    def __init__(self, message: str, answer: Answer | None = None):
        super().__init__(message)
        self.answer = answer  # the HTTP answer, when there was one (a 401 becomes the key finding, TQ468)


@dataclass
class Deadline:
    """The check's time budget: each request gets at most ``per_request`` seconds and never more than is left."""

    end: float
    per_request: float

    @classmethod
    def after(cls, seconds: float, per_request: float) -> Deadline:
        return cls(time.monotonic() + seconds, per_request)

    def left(self) -> float:
        return self.end - time.monotonic()

    def timeout(self) -> float:
        left = self.left()
        if left <= 0.5:
            raise ProbeFailed("the check's time budget ran out before this probe (raise --check-timeout)")
        return min(left, self.per_request)


def _post(client: Client, path: str, body: dict[str, Any], deadline: Deadline) -> Any:
    answer = client.post(path, body, timeout=deadline.timeout(), limit=ANSWER_LIMIT)
    return _json(answer, path)


def _json(answer: Answer, path: str) -> Any:
    if not answer.ok:
        detail = answer.error or answer.detail(200)
        raise ProbeFailed(f"{path}: HTTP {answer.status or 'no answer'}: {detail}", answer)
    data = answer.json()
    if not isinstance(data, dict):
        raise ProbeFailed(f"{path}: the answer is not a JSON object")
    return data


def prompt_logprobs(client: Client, model: str, text: str, max_tokens: int, deadline: Deadline) -> list[float]:
    """The log-probability of each token of ``text`` (its last ``max_tokens`` tokens at most), first one excluded."""
    body = {
        "model": model,
        "prompt": text,
        "max_tokens": 1,
        "temperature": 0,
        "prompt_logprobs": 0,
        "truncate_prompt_tokens": max_tokens,
    }
    choice = first_choice(_post(client, "/v1/completions", body, deadline))
    entries = choice.get("prompt_logprobs") if isinstance(choice, dict) else None
    if not isinstance(entries, list) or len(entries) < 2:
        raise ProbeFailed("/v1/completions: no prompt_logprobs in the answer (is this a vLLM server?)")
    values = []
    for entry in entries[1:]:
        # prompt_logprobs 0 asks for the prompt's own token only: one entry per position
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ProbeFailed("/v1/completions: a prompt_logprobs entry is not one token's log-probability")
        (info,) = entry.values()
        value = info.get("logprob") if isinstance(info, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value > 0:
            raise ProbeFailed("/v1/completions: a prompt log-probability is not a number <= 0")
        values.append(float(value))
    return values


@dataclass
class ChatAnswer:
    text: str
    tokens: list[str] = field(default_factory=list)
    finish_reason: str = ""


def chat(
    client: Client, model: str, content: str, max_tokens: int, deadline: Deadline, cache_salt: str | None = None
) -> ChatAnswer:
    """One greedy answer (temperature 0) to a single user message, with its tokens. ``cache_salt`` (vLLM's field,
    chat_completion/protocol.py): the prefix cache is shared only by requests with the same salt."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "temperature": 0,
        "max_tokens": max_tokens,
        "logprobs": True,
    }
    if cache_salt is not None:
        body["cache_salt"] = cache_salt
    choice = first_choice(_post(client, "/v1/chat/completions", body, deadline)) or {}
    message = choice.get("message")
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise ProbeFailed("/v1/chat/completions: the answer holds no message content")
    logprobs = choice.get("logprobs")
    content_lp = logprobs.get("content") if isinstance(logprobs, dict) else None
    tokens = (
        [str(t.get("token", "")) for t in content_lp if isinstance(t, dict)] if isinstance(content_lp, list) else []
    )
    reason = choice.get("finish_reason")
    return ChatAnswer(text[:4096], tokens[: max_tokens + 1], reason if isinstance(reason, str) else "")


@dataclass
class ServerFacts:
    """What the server says about itself, each field None when it did not say."""

    vllm_version: str | None = None
    max_model_len: int | None = None
    root: str | None = None  # the model path as vLLM was given it
    cache: dict[str, str] = field(default_factory=dict)  # vllm:cache_config_info's labels


def server_facts(client: Client, model: str, deadline: Deadline) -> ServerFacts:
    """/v1/models (raises ProbeFailed when it does not answer: nothing else would), /version, /metrics."""
    facts = ServerFacts()
    models = _json(client.get("/v1/models", timeout=deadline.timeout()), "/v1/models")
    for entry in models.get("data") or []:
        if isinstance(entry, dict) and entry.get("id") == model:
            mml, root = entry.get("max_model_len"), entry.get("root")
            facts.max_model_len = mml if isinstance(mml, int) and not isinstance(mml, bool) and mml > 0 else None
            facts.root = root[:4096] if isinstance(root, str) else None
            break
    else:
        raise ProbeFailed(f"/v1/models does not list the model {model!r}")
    version = client.get("/version", timeout=deadline.timeout()).json()
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        facts.vllm_version = version["version"][:64]
    facts.cache = _cache_info(client.get("/metrics", timeout=deadline.timeout(), limit=4 << 20))
    return facts


def _cache_info(answer: Answer) -> dict[str, str]:
    """The labels of `vllm:cache_config_info` (cache_dtype, enable_prefix_caching, ...), {} when absent. Read
    with prometheus_client's parser where it is installed (it is with vLLM), else from the one line: a checkout on
    a GPU host's PYTHONPATH may run without it."""
    if not answer.ok:
        return {}
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        return _cache_info_line(answer.text())
    try:
        for family in text_string_to_metric_families(answer.text()):
            if family.name == "vllm:cache_config_info":
                for sample in family.samples:
                    return {k: str(v)[:256] for k, v in sample.labels.items()}
    except ValueError:
        return {}
    return {}


_INFO_LINE = re.compile(r"^vllm:cache_config_info\{(.*)\}", re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _cache_info_line(text: str) -> dict[str, str]:
    match = _INFO_LINE.search(text)
    return {k: v[:256] for k, v in _LABEL.findall(match.group(1))} if match else {}
