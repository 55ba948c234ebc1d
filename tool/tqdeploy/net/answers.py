"""What a deployment answered, checked: shapes of the OpenAI-style JSON answers, and the one finding for a
refused key (TQ468, checks/docs/TQ468.md), shared by connect, status, profile and up.

vLLM guards the /v1 routes with the key (`Authorization: Bearer`) and answers 401 otherwise
(vllm/entrypoints/serve/middleware/authenticate.py); /health and /metrics are not guarded
(docs/usage/security.md: --api-key guards only /v1-style routes). A proxy in front may answer 403.
"""

from __future__ import annotations

from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.net.client import Answer

KEY_REFUSED_ID = "TQ468"


def model_ids(answer: Answer) -> list[str] | None:
    """The ids /v1/models lists (`{"data": [{"id": ...}, ...]}`); None when the answer is not that shape."""
    body = answer.json() if answer.ok else None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    ids = [m.get("id") for m in data if isinstance(m, dict)]
    return [i for i in ids if isinstance(i, str)] if len(ids) == len(data) else None


def first_choice(body: Any) -> dict[str, Any] | None:
    """The first of a completion's `choices` when it is an object, else None (`choices: [1]` is not)."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def key_refused_finding(answer: Answer, *, sent_key: bool, fix: str, area: str, key_file: str | None = None) -> Finding:
    """A 401/403: which URL refused, whether a key was sent, and how to give the right one (never the key)."""
    what = "refused the API key" if sent_key else "requires an API key and none was sent"
    evidence: dict[str, Any] = {"url": answer.url, "status": answer.status, "key_sent": sent_key}
    if key_file:
        evidence["api_key_file"] = key_file
    return Finding(KEY_REFUSED_ID, Severity.ERROR, f"{answer.url} {what} ({answer.status})", evidence, fix, area)


BAD_ANSWER_ID = "TQ469"


def bad_answer_finding(answer: Answer, what: str, fix: str, area: str) -> Finding:
    """An answer tqdeploy cannot use (too large, not the expected shape, a redirect to another origin, no
    answer in time): named with its URL and what was wrong, the body only as far as it is safe to show."""
    evidence: dict[str, Any] = {"url": answer.url, "status": answer.status, "problem": answer.detail(200)}
    return Finding(BAD_ANSWER_ID, Severity.ERROR, f"{answer.url}: {what}", evidence, fix, area)
