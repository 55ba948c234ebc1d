"""`connect --check`: prove against the running endpoint what the printed client settings rely on.

One finding per step (TQ460-TQ467, pages in checks/docs/). vLLM guards /v1 routes with the key as
`Authorization: Bearer` and answers 401 otherwise (vllm/entrypoints/serve/middleware/authenticate.py);
the Messages API is vllm/entrypoints/anthropic/ (response shape: protocol.py AnthropicMessagesResponse).
"""

from __future__ import annotations

import secrets
from typing import Any

from tqdeploy.connect import http
from tqdeploy.connect.endpoint import Endpoint
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.net import Answer, key_refused_finding
from tqdeploy.net.answers import KEY_REFUSED_ID, first_choice

AREA = "connect"
PROMPT = [{"role": "user", "content": "Hello"}]
MAX_TOKENS = 8
ANTHROPIC_BLOCK_TYPES = {"text", "thinking", "redacted_thinking", "tool_use"}


def _f(fid: str, sev: Severity, title: str, remediation: str = "", **evidence: Any) -> Finding:
    return Finding(fid, sev, title, evidence, remediation, AREA)


def _fail(fid: str, what: str, reply_status: int, detail: object, remediation: str) -> Finding:
    return _f(fid, Severity.ERROR, what, remediation, status=reply_status, answer=str(detail)[:200])


def check_key_file(ep: Endpoint) -> tuple[Finding | None, str | None]:
    if ep.api_key_file is None:
        return None, None
    try:
        key = ep.read_key()
    except TQError as err:
        return _f("TQ466", Severity.ERROR, err.message, err.remediation, file=str(ep.api_key_file)), None
    return _f("TQ466", Severity.OK, "API key file readable", file=str(ep.api_key_file)), key


def check_models(ep: Endpoint, key: str | None, timeout: float) -> list[Finding]:
    url = ep.openai_base_url + "/models"
    reply = http.call(url, key, timeout=timeout)
    if reply.status == 0:
        return [
            _f(
                "TQ460",
                Severity.ERROR,
                f"no answer from {url}",
                "start the server (`tqdeploy up`, or serve.sh) and check --base-url, host and port",
                error=reply.error,
            )
        ]
    if reply.status in (401, 403):
        fix = "use the key file the server was started with (--api-key-file)" if key else "pass --api-key-file"
        return [_key_refused(url, reply, key, fix)]
    ids = _model_ids(reply.body) if reply.status == 200 and not reply.error else None
    if ids is None:
        return [
            _fail(
                "TQ460",
                f"{url} answered {reply.status} without a model list",
                reply.status,
                reply.error or reply.body,
                "read the server log; a redirect to another address is not followed (the key would go there): "
                "pass --base-url with the address that serves /v1 itself",
            )
        ]
    found = [_f("TQ460", Severity.OK, f"{url} answers", status=200)]
    if ep.served_name in ids:
        found.append(_f("TQ461", Severity.OK, f"serves {ep.served_name!r}", models=ids))
    else:
        found.append(
            _f(
                "TQ461",
                Severity.ERROR,
                f"the server does not serve {ep.served_name!r}",
                "start it with --served-model-name as the spec says (model.served_name), or pass --served-model-name",
                models=ids,
            )
        )
    return found


def _model_ids(body: Any) -> list[Any] | None:  # body: the JSON /v1/models answered
    data = body.get("data") if isinstance(body, dict) else None
    return [m.get("id") for m in data if isinstance(m, dict)] if isinstance(data, list) else None


def _key_refused(url: str, reply: http.Reply, key: str | None, fix: str) -> Finding:
    return key_refused_finding(Answer(url, reply.status), sent_key=key is not None, fix=fix, area=AREA)


def check_chat(ep: Endpoint, key: str | None, timeout: float) -> list[Finding]:
    url = ep.openai_base_url + "/chat/completions"
    body = {"model": ep.served_name, "messages": PROMPT, "max_tokens": MAX_TOKENS}
    reply = http.call(url, key, body, timeout=timeout)
    choice = first_choice(reply.body)
    if reply.status == 200 and not reply.error and choice and isinstance(choice.get("message"), dict):
        found = [_f("TQ462", Severity.OK, "chat completion answered", status=200)]
    else:
        found = [
            _fail(
                "TQ462",
                "chat completion failed",
                reply.status,
                reply.body or reply.error,
                "the model needs a chat template (--chat-template) if the answer names one; else read the server log",
            )
        ]
    st = http.stream(url, key, {**body, "stream": True}, timeout=timeout)
    if st.status == 200 and st.done and st.events:
        found.append(
            _f("TQ463", Severity.OK, "streamed chat completion answered", events=len(st.events), ttfb_s=st.first_byte_s)
        )
    else:
        found.append(
            _fail(
                "TQ463",
                "streamed chat completion failed or did not end with [DONE]",
                st.status,
                st.error or f"{len(st.events)} events, done={st.done}",
                "a proxy in between must pass server-sent events through (nginx: proxy_buffering off, "
                "a long proxy_read_timeout); else read the server log",
            )
        )
    return found


def anthropic_shape_problem(body: Any) -> str:  # body: the JSON the server answered
    """'' when the body is an Anthropic message with content blocks, else what is wrong."""
    if not isinstance(body, dict) or body.get("type") != "message" or body.get("role") != "assistant":
        return "not an Anthropic message (type 'message', role 'assistant')"
    blocks = body.get("content")
    if not isinstance(blocks, list) or not blocks:
        return "no content blocks"
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") not in ANTHROPIC_BLOCK_TYPES:
            return f"unexpected content block {str(block)[:80]}"
        if block["type"] == "text" and not isinstance(block.get("text"), str):
            return "a text block without text"
    return ""


def check_messages(ep: Endpoint, key: str | None, timeout: float) -> list[Finding]:
    url = ep.root_url + "/v1/messages"
    body = {"model": ep.served_name, "max_tokens": MAX_TOKENS, "messages": PROMPT}
    # as Claude Code sends an apiKeyHelper's value: "as X-Api-Key and Authorization: Bearer headers" (Claude
    # Code's settings reference, apiKeyHelper); vLLM checks the Bearer one
    sent = {"X-Api-Key": key} if key else None
    reply = http.call(url, key, body, headers=sent, timeout=timeout)
    problem = anthropic_shape_problem(reply.body) if reply.status == 200 and not reply.error else f"HTTP {reply.status}"
    fix = "serve with vLLM >= 0.11.1 (it has /v1/messages); a proxy in between must forward /v1/messages"
    if problem:
        found = [_fail("TQ464", f"/v1/messages: {problem}", reply.status, reply.body or reply.error, fix)]
    else:
        types = [b["type"] for b in reply.body["content"]]
        found = [_f("TQ464", Severity.OK, "/v1/messages answers with Anthropic content blocks", blocks=types)]
    st = http.stream(url, key, {**body, "stream": True}, headers=sent, timeout=timeout)
    kinds = [e.get("type") for e in st.events if isinstance(e, dict)]
    if st.status == 200 and kinds[:1] == ["message_start"] and kinds[-1:] == ["message_stop"]:
        found.append(_f("TQ467", Severity.OK, "streamed /v1/messages answered", events=len(kinds)))
    else:
        found.append(
            _fail("TQ467", "streamed /v1/messages did not run message_start .. message_stop", st.status, kinds, fix)
        )
    return found


def check_wrong_key(ep: Endpoint, key: str | None, timeout: float) -> Finding:
    wrong = "tqdeploy-wrong-" + secrets.token_hex(8)
    reply = http.call(ep.openai_base_url + "/models", wrong, timeout=timeout)
    if reply.status == 401:
        return _f("TQ465", Severity.OK, "a wrong API key is refused (401)", status=401)
    if key is None:
        return _f(
            "TQ465",
            Severity.WARN,
            f"the endpoint accepts any API key (answered {reply.status})",
            "set server.api_key_file in the spec, rebuild and restart: the server then requires the key",
            status=reply.status,
        )
    return _f(
        "TQ465",
        Severity.ERROR,
        f"a wrong API key was not refused (answered {reply.status})",
        "the server runs without its key: start it through serve.sh (it exports VLLM_API_KEY from the key file)",
        status=reply.status,
    )


def run_checks(ep: Endpoint, client: str, timeout: float = 60) -> list[Finding]:
    key_finding, key = check_key_file(ep)
    found = [key_finding] if key_finding else []
    if key_finding and key_finding.severity is Severity.ERROR:
        return found
    found += check_models(ep, key, timeout)
    if any(f.id in ("TQ460", KEY_REFUSED_ID) and f.severity is Severity.ERROR for f in found):
        return found  # nothing else can answer
    found += check_chat(ep, key, timeout)
    if client == "claude-code":
        found += check_messages(ep, key, timeout)
    found.append(check_wrong_key(ep, key, timeout))
    return found
