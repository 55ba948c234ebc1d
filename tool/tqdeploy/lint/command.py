"""Find the vLLM invocation inside a command line: `vllm serve`, `python -m ...api_server`, `docker run IMAGE`.

The result says where vLLM's own arguments start, which environment the command sets (leading
`VAR=value`, `env VAR=value`, docker `-e`) and, for docker, the docker options and the image.
Both `vllm serve` and `python -m vllm.entrypoints.openai.api_server` parse their arguments with the
same make_arg_parser (vllm/entrypoints/cli/serve.py, vllm/entrypoints/launchers/api_server/entry.py),
and so does the official image's entrypoint, so one schema validates all three.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
LEGACY_API_SERVER_MODULE = "vllm.entrypoints.api_server"  # only /generate and /health (docs/facts.md)
_LAUNCHERS = {"exec", "nohup", "time", "command", "sudo"}
# serve.sh of a keyed build runs `python3 launch_vllm.py MODEL FLAGS`: `vllm serve`'s parser with the API key
# read from a file in-process (templates/launch_vllm.py.j2), so its arguments are `vllm serve`'s.
KEYED_LAUNCHER = "launch_vllm.py"
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

# `docker run` options that take a separate value token (docker run --help, Docker CLI reference).
DOCKER_VALUE_OPTIONS = {
    "-a",
    "--attach",
    "--add-host",
    "--annotation",
    "--blkio-weight",
    "--cap-add",
    "--cap-drop",
    "--cgroup-parent",
    "--cgroupns",
    "--cidfile",
    "--cpu-period",
    "--cpu-quota",
    "--cpu-shares",
    "-c",
    "--cpus",
    "--cpuset-cpus",
    "--cpuset-mems",
    "--detach-keys",
    "--device",
    "--device-cgroup-rule",
    "--dns",
    "--dns-option",
    "--dns-search",
    "--domainname",
    "--entrypoint",
    "-e",
    "--env",
    "--env-file",
    "--expose",
    "--gpus",
    "--group-add",
    "--health-cmd",
    "--health-interval",
    "--health-retries",
    "--health-start-period",
    "--health-timeout",
    "-h",
    "--hostname",
    "--ip",
    "--ip6",
    "--ipc",
    "--isolation",
    "--kernel-memory",
    "-l",
    "--label",
    "--label-file",
    "--link",
    "--log-driver",
    "--log-opt",
    "--mac-address",
    "-m",
    "--memory",
    "--memory-reservation",
    "--memory-swap",
    "--memory-swappiness",
    "--mount",
    "--name",
    "--network",
    "--net",
    "--network-alias",
    "--pid",
    "--pids-limit",
    "--platform",
    "-p",
    "--publish",
    "--pull",
    "--restart",
    "--runtime",
    "--security-opt",
    "--shm-size",
    "--stop-signal",
    "--stop-timeout",
    "--storage-opt",
    "--sysctl",
    "--tmpfs",
    "-u",
    "--user",
    "--userns",
    "--uts",
    "-v",
    "--volume",
    "--volume-driver",
    "--volumes-from",
    "-w",
    "--workdir",
    "--ulimit",
}


@dataclass
class Invocation:
    argv: list[str]
    kind: str  # "vllm-serve", "api-server", "legacy-api-server", "docker", "docker-other", "unknown"
    vllm_start: int = 0  # index in argv of vLLM's first own argument
    vllm_end: int = 0
    env: dict[str, str] = field(default_factory=dict)  # name -> value (may be a secret)
    env_spans: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> argv span of the assignment
    keyed_launcher: bool = False  # started through a build's launch_vllm.py, which always sets the API key
    docker_start: int = 0  # index of the first docker run option
    image: str = ""
    image_index: int = -1

    @property
    def vllm_args(self) -> list[str]:
        return self.argv[self.vllm_start : self.vllm_end]

    @property
    def image_tag(self) -> str:
        ref = self.image.split("@", 1)[0]
        last = ref.rsplit("/", 1)[-1]
        return last.split(":", 1)[1] if ":" in last else ""

    @property
    def image_version(self) -> str | None:
        """The vLLM release of a vllm/vllm-openai:vX.Y.Z[-suffix] tag, if the tag names one."""
        if "vllm-openai" not in self.image:
            return None
        m = re.match(r"^v?(\d+\.\d+\.\d+)(?:$|-)", self.image_tag)
        return m.group(1) if m else None


def _is_python(token: str) -> bool:
    return re.fullmatch(r"(.*/)?python(\d+(\.\d+)?)?", token) is not None


def _take_env(argv: list[str], i: int, inv: Invocation) -> int:
    """Skip launchers and VAR=value prefixes, recording the variables."""
    while i < len(argv):
        tok = argv[i]
        if tok in _LAUNCHERS or tok == "env":
            i += 1
        elif _ENV_ASSIGN.match(tok):
            name, value = tok.split("=", 1)
            inv.env[name] = value
            inv.env_spans[name] = (i, i + 1)
            i += 1
        else:
            return i
    return i


def _docker(argv: list[str], i: int, inv: Invocation) -> None:
    inv.kind = "docker"
    inv.docker_start = i
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            i += 1
            break
        if not tok.startswith("-") or tok == "-":
            break
        name, has_eq, value = tok.partition("=")
        takes = name in DOCKER_VALUE_OPTIONS
        if takes and not has_eq:
            value = argv[i + 1] if i + 1 < len(argv) else ""
            width = 2
        else:
            width = 1
        if name in ("-e", "--env") and "=" in value:
            var, val = value.split("=", 1)
            inv.env[var] = val
            inv.env_spans[var] = (i, i + width)
        elif name in ("-e", "--env") and value:
            inv.env.setdefault(value, "")  # passed through from the caller's environment
            inv.env_spans[value] = (i, i + width)
        i += width
    inv.image_index = i
    inv.image = argv[i] if i < len(argv) else ""
    inv.vllm_start = min(i + 1, len(argv))
    # An explicit `vllm serve` / `python -m ...` after the image (entrypoint overridden) is skipped too.
    rest = argv[inv.vllm_start :]
    if rest[:2] == ["vllm", "serve"]:
        inv.vllm_start += 2
    elif len(rest) >= 3 and _is_python(rest[0]) and rest[1] == "-m" and rest[2] == API_SERVER_MODULE:
        inv.vllm_start += 3
    elif rest[:2] == ["-m", API_SERVER_MODULE]:  # --entrypoint python3
        inv.vllm_start += 2
    elif "vllm" not in inv.image.rsplit("/", 1)[-1] and "vllm" not in inv.image.split("/", 1)[0]:
        # Another image: its entrypoint is unknown, so its arguments are not vLLM's to check.
        inv.kind = "docker-other"
        inv.vllm_start = inv.vllm_end = len(argv)


def find_invocation(argv: list[str]) -> Invocation:
    """Locate the vLLM (or docker) command in argv; kind "unknown" when there is none."""
    inv = Invocation(argv=list(argv), kind="unknown", vllm_end=len(argv))
    i = _take_env(argv, 0, inv)
    if i >= len(argv):
        return inv
    _detect(argv, i, inv)
    if inv.kind == "unknown":
        # Behind a wrapper that takes its own options (`uv run`, `conda run -n env`, `numactl -N 0`,
        # `taskset -c 0-7`, `srun ...`): the first `vllm serve` / `python -m ...api_server` in the line.
        for j in range(i + 1, len(argv)):
            if argv[j].rsplit("/", 1)[-1] == "vllm" or _is_python(argv[j]):
                _detect(argv, j, inv)
                if inv.kind != "unknown":
                    break
    return inv


def _detect(argv: list[str], i: int, inv: Invocation) -> None:
    """Set inv.kind and where vLLM's arguments start when argv[i] begins a known command form."""
    head = argv[i]
    base = head.rsplit("/", 1)[-1]
    if base == "vllm" and i + 1 < len(argv) and argv[i + 1] == "serve":
        inv.kind, inv.vllm_start = "vllm-serve", i + 2
    elif _is_python(head) and i + 1 < len(argv) and argv[i + 1].rsplit("/", 1)[-1] == KEYED_LAUNCHER:
        inv.kind, inv.vllm_start = "vllm-serve", i + 2  # `vllm serve`'s own parser, the key from a file
        inv.keyed_launcher = True
    elif _is_python(head) and i + 2 < len(argv) and argv[i + 1] == "-m":
        module = argv[i + 2]
        if module == API_SERVER_MODULE:
            inv.kind, inv.vllm_start = "api-server", i + 3
        elif module == LEGACY_API_SERVER_MODULE:
            inv.kind, inv.vllm_start = "legacy-api-server", i + 3
    elif base in ("docker", "podman") and i + 1 < len(argv):
        j = i + 1
        if argv[j] == "container" and j + 1 < len(argv):
            j += 1
        if argv[j] == "run":
            _docker(argv, j + 1, inv)
