"""What one bundle collector hands to another (bundle/collector.py): frozen, typed, declared on both sides."""

from __future__ import annotations

from dataclasses import dataclass

from tqdeploy.snapshot import HostSnapshot


@dataclass(frozen=True)
class JudgedHost:
    """The host snapshot the doctor collector probed and judged; the plan collector plans on it."""

    snapshot: HostSnapshot


@dataclass(frozen=True)
class ServerVersion:
    """The loopback server's /version answer as it came (JSON by vLLM's contract, checked where read)."""

    body: bytes
