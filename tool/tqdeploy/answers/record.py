"""Recording a reference: the probes run against a server whose KV cache is unquantized, kept with the fingerprint.

`tqdeploy check BUILD --record-reference` starts a copy of the build (BUILD/.tqdeploy/reference/) with
kv_cache_dtype "auto", the same model folder, dtype, flags and key file, on a free loopback port, through
`tqdeploy build`, `up --no-check` and `down` (the same contract profile's --start drives, profile/start.py), and
always stops it. The build itself must be stopped: the copy needs the memory it holds (on a GPU, all of it).
The reference lands in BUILD/.tqdeploy/answers-reference.json (written whole, then renamed).
"""

from __future__ import annotations

import datetime
import json
import socket
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdeploy.answers import probes
from tqdeploy.answers.fixed import load_inputs
from tqdeploy.answers.reference import Reference
from tqdeploy.answers.run import DEFAULT_BUDGET_S, PER_REQUEST_S, Target, fingerprint_of, observe
from tqdeploy.answers.verdict import Observed
from tqdeploy.buildfolder import folder, own_dir
from tqdeploy.deployspec.load import with_defaults
from tqdeploy.deployspec.write import spec_to_toml
from tqdeploy.errors import TQError
from tqdeploy.filenames import SPEC_FILE_NAME
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.net import Client
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.runtime.up import running_state

if TYPE_CHECKING:  # rich is loaded where the view is drawn
    from rich.console import Console

REFERENCE_NAME = "answers-reference.json"
UP_TIMEOUT_S = 900
DOWN_TIMEOUT_S = 120


def record_from_server(target: Target, budget: float = DEFAULT_BUDGET_S * 2) -> Reference:
    """Probe a running server (its KV cache must be unquantized) into a reference; TQError when it cannot."""
    client = Client(target.url, target.key, label="the reference server URL")
    dl = probes.Deadline.after(budget, PER_REQUEST_S * 2)
    try:
        facts = probes.server_facts(client, target.model, dl)
    except probes.ProbeFailed as err:
        raise TQError(f"the reference server did not answer: {err}", "check its log; `tqdeploy status`") from None
    kv = facts.cache.get("cache_dtype")
    if kv not in (None, "auto", "bfloat16", "float16"):
        raise TQError(f"the reference server runs kv_cache_dtype {kv}", "record with kv_cache_dtype auto")
    obs = Observed(kv_dtype=kv)
    failed = observe(client, target, facts, dl, obs)
    if failed or obs.perplexity is None:
        why = failed[0].title if failed else "no perplexity"
        raise TQError(f"recording the reference failed: {why}", "check the reference server's log, then retry")
    inputs = load_inputs()
    return Reference(
        fingerprint_of(target, facts),
        inputs.passage_sha256,
        obs.tokens,
        perplexity_value(obs),
        {pid: a.text for pid, a in obs.answers.items()},
        datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def perplexity_value(obs: Observed) -> float:
    if obs.perplexity is None:
        raise TQError("no perplexity was measured", "retry the recording")
    return obs.perplexity


def _cli(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tqdeploy", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _reference_spec(build: Path, port: int, kv_cache_dtype: str = "auto", header: str | None = None) -> str:
    """The build's spec with kv_cache_dtype auto (tune: another dtype), absolute model and key paths, and another
    port."""
    dep = load_deployment(build)
    raw = tomllib.loads((build / SPEC_FILE_NAME).read_text(encoding="utf-8"))
    data = with_defaults(raw)
    data["vllm"]["kv_cache_dtype"] = kv_cache_dtype
    data["model"]["path"] = str(dep.model_dir)
    data["server"]["port"] = port
    data["server"]["host"] = "127.0.0.1"
    data["server"]["api_key_file"] = str(dep.api_key_file) if dep.api_key_file else None
    header = header or f"The reference build of {build}: kv_cache_dtype auto (tqdeploy check --record-reference)"
    return spec_to_toml(data, [header])


def record_for_build(build: Path, target: Target) -> Path:
    """Start the build with kv_cache_dtype auto beside it, record, stop it; the reference's path."""
    build = Path(build).resolve()
    if running_state(build) is not None:
        raise TQError(
            f"{build} is running: its reference copy would need the memory it holds (on a GPU, all of it)",
            f"stop it first (`tqdeploy down {build}`), record, then `tqdeploy up {build}` checks against it",
        )
    state_dir = folder(build).state_dir
    ref_build = state_dir / "reference"
    spec_path = state_dir / "reference.toml"
    own_dir(build, state_dir)  # made where missing; a link under the build is refused
    port = _free_port()
    atomic_write_text(spec_path, _reference_spec(build, port))
    made = _cli("build", str(spec_path), "--out", str(ref_build), "--force", "--take-over", "--json", timeout=300)
    if made.returncode != 0:
        raise TQError(f"building the reference copy failed: {_last_line(made)}", f"see {spec_path}")
    try:
        up = _cli(
            "up", str(ref_build), "--no-check", "--json", "--timeout", str(UP_TIMEOUT_S), timeout=UP_TIMEOUT_S + 60
        )
        started = _json(up.stdout)
        if up.returncode != 0 or started.get("status") != "ready":
            raise TQError(f"the reference copy did not start: {_why(started, up)}", f"`tqdeploy logs {ref_build}`")
        ref_target = Target(
            str(started["base_url"]),
            str(started["served_model_name"]),
            target.key,
            target.key_file,
            target.model_dir,
            target.dtype,
            dict(target.flags),
        )
        ref = record_from_server(ref_target)
    finally:
        _cli("down", str(ref_build), timeout=DOWN_TIMEOUT_S)
    out = state_dir / REFERENCE_NAME
    atomic_write_text(out, json.dumps(ref.to_dict(), indent=2, sort_keys=True) + "\n")
    return out


@dataclass
class Recorded:
    """What `check --record-reference` prints (schema tqdeploy.check-reference/1)."""

    path: Path

    def to_dict(self) -> dict[str, Any]:
        data = json.loads(self.path.read_text(encoding="utf-8"))
        return {"schema": "tqdeploy.check-reference/1", "path": str(self.path), "reference": data}

    def render(self, console: Console) -> None:
        ref = self.to_dict()["reference"]
        console.print(
            f"recorded the reference: {self.path} (perplexity {ref['perplexity']}, vLLM "
            f"{ref['fingerprint']['vllm_version']}, dtype {ref['fingerprint']['dtype']})",
            soft_wrap=True,
        )


def _free_port() -> int:
    """A port nothing listens on now; the reference copy binds loopback only."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _why(answer: dict[str, Any], proc: subprocess.CompletedProcess[str]) -> str:
    """up's first error finding (its JSON), else its last line."""
    for f in answer.get("findings") or []:
        if isinstance(f, dict) and f.get("severity") == "error":
            return f"{f.get('id')} {str(f.get('title'))[:300]}"
    return _last_line(proc)


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or proc.stdout or "").strip().splitlines()
    return lines[-1][:300] if lines else f"exit {proc.returncode}"
