"""Runtimes that start what `tqdeploy build` rendered, and stop it leaving nothing behind.

Each runtime implements one interface (runtime/base.py: prepare, start, stop, is_live, facts, logs, adopts)
and is chosen from runtime/registry.py (name -> "module:Class"); `up`, `down`, `status` and `logs` know no
runtime by name. The build folder's paths come from tqdeploy.buildfolder; state.json is read once into a
typed, validated StateRecord (runtime/record.py, state.read_record) and passed along.

The process runtime runs the rendered serve.sh with a local vLLM under a detached supervisor
(`python -m tqdeploy.runtime.supervisor`, its own session and process group) that stamps every output
line into BUILD_DIR/.tqdeploy/logs/ (format: tqdeploy.runtime.logstamp) and records the exit in state.

Python API (for profile, bundle, connect):
  up(build_dir, *, python=None, wait=True, timeout=900, stall_timeout=300, force=False, doctor=None) -> UpResult
      pre-flight, start, wait until /health is 200 and /v1/models lists the served model; on failure the
      classified TQ4xx finding is in .findings and nothing is left running. .to_dict(): tqdeploy.up/1.
      doctor: vllm_version -> the host's doctor findings (`tqdeploy up` passes tqdeploy.doctor's; runtime
      stands below doctor and never imports it); None runs no doctor.
  down(build_dir, *, timeout=30, force=False) -> DownResult
      SIGTERM to the group, SIGKILL after timeout, then anything carrying the deployment marker;
      checks the port and (NVML) GPU memory. force: works with a corrupt or missing state.json.
  status(build_dir) -> StatusResult      .to_dict(): tqdeploy.status/1 (live, ready, phase, uptime, GPUs)
  read_state(build_dir) -> dict | None   state.json as written (tqdeploy.state/1); CorruptState if unreadable
  read_record(build_dir) -> StateRecord | None   the same, typed (record.to_json() == read_state(...))
  state_dir(build_dir), current_log(build_dir), logs_dir(build_dir)   where things are
"""

from __future__ import annotations

from tqdeploy.runtime.down import DownResult, down
from tqdeploy.runtime.state import CorruptState, current_log, logs_dir, read_record, read_state, state_dir
from tqdeploy.runtime.status import StatusResult, status
from tqdeploy.runtime.up import UpResult, up

__all__ = [
    "CorruptState",
    "DownResult",
    "StatusResult",
    "UpResult",
    "current_log",
    "down",
    "logs_dir",
    "read_record",
    "read_state",
    "state_dir",
    "status",
    "up",
]
