"""Runtimes that start what `tqdeploy build` rendered, and stop it leaving nothing behind.

The layout: runtime/backends/<name>/ holds everything of one runtime (process, docker, multinode), registered with
one line in runtime/registry.py; runtime/base.py declares the interface and every optional capability's default
(runtime/interface.py its types). The rest of runtime/ is the core, the same for every runtime and naming none:
state.json (state, statefields, record), the marker and the processes (folderid, marker, procs, guard, stop),
readiness and failure (wait, classify, phases, logstamp), the keepers (detached, supervisor). The command
use-cases (up, down, status, logs, replace) stay here beside that core rather than in a usecases/ package: they are
this package's public face (`from tqdeploy.runtime import up`), called by profile, tune, answers and bench, and a
move would touch every one of those callers for no change in what depends on what.

`up`, `down` and `status` read state.json once into a typed, validated StateRecord (runtime/record.py,
state.read_record) and carry it; they read it again only where a keeper may have written (update_state's merge
under the lock, the readiness polls).

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
