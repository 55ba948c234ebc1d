"""A multi-node build on one host (process runtime): the leader as `up` starts every build, plus one worker per
other node, each the same serve.sh (and multinode.sh) a LeaderWorkerSet pod runs.

Like pods, each worker is a process group of its own (its own session), with its own temp folder, log and
record (BUILD/.tqdeploy/nodes/worker-N.json, written by its supervisor:
`python -m tqdeploy.runtime.backends.multinode.nodes BUILD RANK LOG -- COMMAND`). Every process carries the
deployment marker, so `down` stops and proves gone the
worker groups as it does the leader's (runtime/procs.py finds them by that marker, never by a recorded pid).
A record is believed only when it carries this folder's marker and was written after `up` started.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdeploy.buildfolder import own_dir
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.nodefile import EXIT_CONFIG, EXIT_VERSION, RECORD_LIMIT
from tqdeploy.runtime.classify import AREA, root_cause
from tqdeploy.runtime.detached import spawn_detached
from tqdeploy.runtime.procs import Proc, owned
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.state import MARKER_ENV, logs_dir, state_dir
from tqdeploy.runtime.supervisor import child_env, pump
from tqdeploy.safeio import FileRefused, read_text

LOG_TAIL = 256 * 1024
LOOPBACK_IFNAME = "lo"  # on one host the nodes talk over loopback
IPC_DIR_MAX = 64  # 107 (sun_path) - "/" - a uuid4 (36), with room: see node_tmp


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def nodes_dir(build_dir: Path) -> Path:
    return state_dir(build_dir) / "nodes"


def record_path(build_dir: Path, rank: int) -> Path:
    return nodes_dir(build_dir) / f"worker-{rank}.json"


def node_env(env: dict[str, str], build_dir: Path, rank: int, record: dict[str, Any]) -> dict[str, str]:
    """serve.sh's environment for node RANK on this host: its role, the leader on loopback, its own TMPDIR."""
    out = dict(env)
    out["TQ_ROLE"] = "leader" if rank == 0 else "worker"
    if rank:
        out["TQ_NODE_RANK"] = str(rank)
    out["TQ_MASTER_ADDR"] = "127.0.0.1"
    out.setdefault("TQ_MASTER_PORT", str(record["master_port"]))
    out.setdefault("GLOO_SOCKET_IFNAME", LOOPBACK_IFNAME)
    out.setdefault("NCCL_SOCKET_IFNAME", LOOPBACK_IFNAME)
    out["TMPDIR"] = str(node_tmp(build_dir, rank, out.get(MARKER_ENV, "")))  # a pod's /tmp is its own
    return out


def node_tmp(build_dir: Path, rank: int, marker: str) -> Path:
    """Node RANK's TMPDIR: in the build when its path is short, else a folder of ours in the system's temp dir.

    vLLM names ZMQ ipc sockets TMPDIR/<uuid4> (36 characters) and a socket path holds at most 107: a build
    deep in a tree (seen: pytest's tmp_path) made the leader fail with "ipc path ... is longer than 107
    characters". The fallback is made 0700 by this user; an existing one is used only if it is a real folder
    of this user, never a link.
    """
    tmp = nodes_dir(build_dir) / f"node-{rank}" / "tmp"
    if len(str(tmp)) <= IPC_DIR_MAX:
        return own_dir(build_dir, tmp)
    short = Path(tempfile.gettempdir()) / f"tqdeploy-{marker[:12]}-node{rank}"
    try:
        short.mkdir(mode=0o700)
    except FileExistsError:
        st = os.lstat(short)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise TQError(
                f"{short} exists and is not a private folder of this user", "remove it, then `tqdeploy up` again"
            ) from None
    return short


def start_workers(build_dir: Path, env: dict[str, str], record: dict[str, Any]) -> list[int]:
    """Start node 1..N-1 under their supervisors, each in a new session; their pids (= process group ids)."""
    build_dir = Path(build_dir).resolve()
    own_dir(build_dir, nodes_dir(build_dir))  # a link there once put node folders and records outside the build
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    pids = []
    for rank in range(1, record["nodes"]):
        record_path(build_dir, rank).unlink(missing_ok=True)  # an earlier run's: never read as this one's
        log = logs_dir(build_dir) / f"worker-{rank}-{stamp}.log"
        log.touch()
        link = logs_dir(build_dir) / f"worker-{rank}.log"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(log.name)
        command = [
            sys.executable,
            "-m",
            "tqdeploy.runtime.backends.multinode.nodes",
            str(build_dir),
            str(rank),
            str(log),
            "--",
        ]
        command += ["sh", str(build_dir / "serve.sh")]
        err = logs_dir(build_dir) / f"worker-{rank}.err"
        pids.append(spawn_detached(command, node_env(env, build_dir, rank, record), err, cwd=build_dir).pid)
    return pids


def _write_record(build_dir: Path, rank: int, data: dict[str, Any]) -> None:
    path = record_path(build_dir, rank)
    own_dir(build_dir, path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def run_worker(build_dir: Path, rank: int, log_path: Path, command: list[str]) -> int:
    """The worker's supervisor (as runtime/supervisor.py for the leader): pump the log, record pid and exit."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)  # outlive the group's SIGTERM: the log gets vLLM's last lines
    rec = {
        "rank": rank,
        "supervisor_pid": os.getpid(),
        "pgid": os.getpgrp(),
        "marker": os.environ.get(MARKER_ENV),
        "log_path": str(log_path),
        "started_at": time.time(),
        "pid": None,
        "exit_code": None,
    }
    _write_record(build_dir, rank, rec)
    proc = subprocess.Popen(command, cwd=build_dir, env=child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)  # fmt: skip
    rec["pid"] = proc.pid
    _write_record(build_dir, rank, rec)
    reader = threading.Thread(target=pump, args=(proc.stdout, log_path), daemon=True)
    reader.start()
    rec["exit_code"] = proc.wait()
    reader.join(timeout=30)
    rec["exited_at"] = time.time()
    _write_record(build_dir, rank, rec)
    return 0


def workers(build_dir: Path, marker: str, started_at: float | None) -> list[dict[str, Any]]:
    """The worker records this run wrote (this folder's marker, written after `up` started)."""
    out = []
    for path in sorted(nodes_dir(build_dir).glob("worker-*.json")) if nodes_dir(build_dir).is_dir() else []:
        try:
            rec = json.loads(read_text(path, RECORD_LIMIT, "worker record", within=Path(build_dir).resolve()))
        except (FileRefused, ValueError):
            continue
        if not isinstance(rec, dict) or rec.get("marker") != marker or not _int(rec.get("rank")):
            continue
        started = rec.get("started_at")
        if not isinstance(started, (int, float)) or (started_at is not None and started < started_at - 1):
            continue
        out.append({k: rec.get(k) for k in ("rank", "pid", "pgid", "supervisor_pid", "log_path", "exit_code")})
    return out


def worker_finding(build_dir: Path, rec: dict[str, Any], during: str) -> Finding:
    """TQ470: a worker node is gone; what its own log says killed it."""
    code, rank = rec.get("exit_code"), rec.get("rank")
    try:
        lines = read_text(Path(str(rec.get("log_path"))), LOG_TAIL, "worker log", Path(build_dir).resolve(), tail=True)
    except (FileRefused, OSError):
        lines = ""
    tail = [line for line in lines.splitlines() if line.strip()]
    said = [line for line in tail if "multinode.sh:" in line or "serve.sh:" in line]
    cause = root_cause(tail) or (said[-1][-300:] if said else None)
    fix = {
        EXIT_VERSION: "install the build's vLLM on every node (the image pins it), then `tqdeploy up` again",
        EXIT_CONFIG: "fix the node setting the worker log names (TQ_NODE_RANK, TQ_MASTER_ADDR, TQ_MASTER_PORT)",
    }.get(
        code if isinstance(code, int) else -1,
        f"read {rec.get('log_path')} (the worker's own log), fix it, `tqdeploy up` again",
    )
    what = f"exited with code {code}" if code is not None else "is gone (its supervisor was killed)"
    evidence = {"rank": rank, "exit_code": code, "root_cause": cause, "log_path": rec.get("log_path")}
    return Finding("TQ470", Severity.ERROR, f"worker node {rank} {what} {during}", evidence, fix, AREA)


def worker_watch(build_dir: Path, marker: str, started_at: float) -> Callable[[], Finding | None]:
    """For wait_ready: a finding as soon as a worker node exits, instead of the leader waiting for it forever."""

    def check() -> Finding | None:
        for rec in workers(build_dir, marker, started_at):
            gone = rec["exit_code"] is not None or not owned(rec.get("supervisor_pid"), marker, started_at)
            if gone:
                return worker_finding(build_dir, rec, "during start-up")
        return None

    return check


def node_status(
    build_dir: Path, st: StateRecord, marker: str, started_at: float | None, members: list[Proc]
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """`status`'s nodes: the leader and each worker, live when a process of the deployment is in its group."""
    groups = {p.pgid for p in members}
    leader: dict[str, Any] = {"rank": 0, "role": "leader", "pid": st.pid, "pgid": st.pgid}
    leader["live"] = st.pgid in groups
    nodes, findings = [leader | {"log_path": st.log_path}], []
    for rec in workers(build_dir, marker, started_at):
        live = rec.get("pgid") in groups and rec["exit_code"] is None
        nodes.append({"role": "worker", **rec, "live": live})
        if not live and st.phase not in ("stopped", "failed"):  # not what `down` or a failed `up` did
            findings.append(worker_finding(build_dir, rec, "after start-up: the leader cannot serve without its stage"))
    return nodes, findings


def node_lines(nodes: list[dict[str, Any]]) -> list[str]:
    """status's human lines for node_status's nodes, one each."""
    return [
        f"node {n['rank']} ({n['role']}): {'live' if n['live'] else 'gone'}, pid {n['pid']}, group {n['pgid']}, "
        f"log {n['log_path']}"
        for n in nodes
    ]


def worker_pgids(build_dir: Path, marker: str, started_at: float | None) -> list[int]:
    return [r["pgid"] for r in workers(build_dir, marker, started_at) if _int(r.get("pgid"))]


def remove_short_tmps(marker: str) -> None:
    """node_tmp's fallback folders of this deployment: the ipc sockets vLLM leaves there, then the folder once
    empty (rmdir: any other file someone put there is kept, and so is the folder)."""
    for path in Path(tempfile.gettempdir()).glob(f"tqdeploy-{marker[:12]}-node*"):
        try:
            if path.is_symlink() or not path.is_dir() or os.lstat(path).st_uid != os.getuid():
                continue
            for entry in path.iterdir():
                if stat.S_ISSOCK(os.lstat(entry).st_mode):
                    entry.unlink()
            path.rmdir()
        except OSError:
            pass  # something else is in it: kept


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--" or not argv[1].isdigit():
        print(
            "usage: python -m tqdeploy.runtime.backends.multinode.nodes BUILD_DIR RANK LOG -- COMMAND...",
            file=sys.stderr,
        )
        return 2
    return run_worker(Path(argv[0]), int(argv[1]), Path(argv[2]), argv[4:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
