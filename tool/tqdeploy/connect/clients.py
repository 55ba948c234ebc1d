"""The settings each client needs for an endpoint: only settings the clients really have.

Sources (also in docs/connect.md):
- OpenAI SDKs: the constructor's `base_url` and `api_key` (openai 3.57 in the CPU vLLM venv, openai/_client.py).
- Claude Code: vLLM's recipe docs/serving/integrations/claude_code.md (docs/facts.md): settings.json
  `env` with ANTHROPIC_BASE_URL (host only: Claude Code appends /v1/messages itself), ANTHROPIC_DEFAULT_
  {OPUS,SONNET,HAIKU}_MODEL = the served name, CLAUDE_CODE_ATTRIBUTION_HEADER=0 (its changing header would
  defeat vLLM's prefix cache); `apiKeyHelper`, a shell command whose output is the key.
- ComfyUI: node packs heshengtao/comfyui_LLM_party (LLM_api_loader: model_name, base_url, api_key) and
  hekmon/comfyui-openai-api (base_url, api_key, timeout), as listed in docs/facts.md.
vLLM accepts the key only as `Authorization: Bearer` (vllm/entrypoints/serve/middleware/authenticate.py).
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from tqdeploy.connect.endpoint import Endpoint
from tqdeploy.errors import TQError

CLIENTS = ("openai", "claude-code", "comfyui")
CLAUDE_MODEL_VARS = ("ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def _key_expr(ep: Endpoint) -> str:
    """How a shell reads the key: the file, never its contents."""
    return f"$(cat {shlex.quote(str(ep.api_key_file))})" if ep.api_key_file else "none"


def openai_settings(ep: Endpoint) -> dict[str, Any]:
    key_py = f"open({str(ep.api_key_file)!r}).read().strip()" if ep.api_key_file else '"none"'
    key_js = f"fs.readFileSync({json.dumps(str(ep.api_key_file))}, 'utf8').trim()" if ep.api_key_file else '"none"'
    body = json.dumps({"model": ep.served_name, "messages": [{"role": "user", "content": "Hello"}]})
    return {
        "base_url": ep.openai_base_url,
        "model": ep.served_name,
        "api_key_file": str(ep.api_key_file) if ep.api_key_file else None,
        "python": (
            "from openai import OpenAI\n"
            f"client = OpenAI(base_url={ep.openai_base_url!r}, api_key={key_py})\n"
            f"reply = client.chat.completions.create(model={ep.served_name!r}, "
            'messages=[{"role": "user", "content": "Hello"}])\n'
            "print(reply.choices[0].message.content)"
        ),
        "javascript": (
            'import fs from "node:fs";\nimport OpenAI from "openai";\n'
            f"const client = new OpenAI({{ baseURL: {json.dumps(ep.openai_base_url)}, apiKey: {key_js} }});"
        ),
        "curl": (
            f"curl -sS {shlex.quote(ep.openai_base_url + '/chat/completions')} "
            f'-H "Authorization: Bearer {_key_expr(ep)}" -H "Content-Type: application/json" '
            f"-d {shlex.quote(body)}"
        ),
    }


def claude_code_settings(ep: Endpoint) -> dict[str, Any]:
    if "/" in ep.served_name:
        raise TQError(
            f"served model name {ep.served_name!r} contains '/': Claude Code cannot use it",
            'set model.served_name to a name without "/" (e.g. "qwen3.6-27b"), rebuild and restart',
        )
    env = {"ANTHROPIC_BASE_URL": ep.root_url}
    env.update({var: ep.served_name for var in CLAUDE_MODEL_VARS})
    env["CLAUDE_CODE_ATTRIBUTION_HEADER"] = "0"
    settings: dict[str, Any] = {"env": env}
    if ep.api_key_file:
        settings["apiKeyHelper"] = f"cat {shlex.quote(str(ep.api_key_file))}"
    return {"settings_json": settings, "path": "~/.claude/settings.json (user) or .claude/settings.json (project)"}


def comfyui_settings(ep: Endpoint) -> dict[str, Any]:
    key = f"the contents of {ep.api_key_file}" if ep.api_key_file else "any text (the server has no API key)"
    return {
        "base_url": ep.openai_base_url,
        "node_packs": {
            "heshengtao/comfyui_LLM_party: LLM_api_loader": {
                "base_url": ep.openai_base_url,
                "model_name": ep.served_name,
                "api_key": key,
            },
            "hekmon/comfyui-openai-api": {"base_url": ep.openai_base_url, "api_key": key, "timeout": "as needed"},
        },
    }


def client_notes(client: str, ep: Endpoint) -> list[str]:
    notes = []
    if ep.api_key_file is None:
        notes.append(
            "the deployment has no API key: anyone who reaches it can use it; set server.api_key_file in the spec"
        )
    if ep.host in LOOPBACK_HOSTS:
        who = {"comfyui": "ComfyUI", "claude-code": "Claude Code"}.get(client, "the client")
        notes.append(
            f"{ep.root_url} is reachable only from this machine: if {who} runs on another machine, pass "
            "--base-url with an address it can reach (and serve on that address: server.host, or nginx.conf)"
        )
    if (too_open := ep.key_file_warning()) is not None:
        notes.append(too_open)
    if client == "claude-code" and ep.api_key_file:
        notes.append(f"apiKeyHelper runs on Claude Code's machine: {ep.api_key_file} must be readable there")
    elif client == "claude-code":
        notes.append(
            "Claude Code takes a key from apiKeyHelper or ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN; "
            "this server checks none, so any value passes"
        )
    return notes


def settings_for(client: str, ep: Endpoint) -> dict[str, Any]:
    builders = {"openai": openai_settings, "claude-code": claude_code_settings, "comfyui": comfyui_settings}
    if client not in builders:
        raise TQError(f"unknown client {client!r}", f"pick one of: {', '.join(CLIENTS)}")
    return builders[client](ep)
