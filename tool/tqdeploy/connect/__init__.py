"""`tqdeploy connect`: the real settings of a client (OpenAI SDKs, Claude Code, ComfyUI) for a deployed
endpoint, and with --check the proof that they work against it.

Public API:
  resolve_endpoint(build_dir, base_url=, api_key_file=, model=) -> Endpoint
  connect(client, endpoint, check=False, timeout=60) -> ConnectResult
"""

from __future__ import annotations

from tqdeploy.connect.check import run_checks
from tqdeploy.connect.clients import client_notes, settings_for
from tqdeploy.connect.endpoint import Endpoint, resolve_endpoint
from tqdeploy.connect.result import ConnectResult

__all__ = ["ConnectResult", "Endpoint", "connect", "resolve_endpoint"]


def connect(client: str, endpoint: Endpoint, *, check: bool = False, timeout: float = 60) -> ConnectResult:
    settings = settings_for(client, endpoint)  # refuses an unknown client or a name Claude Code cannot use
    findings = None
    if check:
        findings = run_checks(endpoint, client, timeout)
    return ConnectResult(client, endpoint, settings, client_notes(client, endpoint), findings)
