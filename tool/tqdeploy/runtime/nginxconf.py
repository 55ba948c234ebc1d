"""nginx, as `up --replace` must know it before it signals anything: its configuration read the way nginx reads
it (a `#` to the end of the line is a comment, outside quotes), and the master process proven to be nginx's.

A pid file is only a number someone wrote. Before SIGHUP goes to it, the pid must be a live nginx master
(/proc/PID/cmdline: nginx retitles its master `nginx: master process <argv>`), started with a main
configuration (its `-c`, else Debian's compiled default, `nginx -V`: --conf-path=/etc/nginx/nginx.conf) whose
`pid` directive (else --pid-path=/run/nginx.pid) is that very pid file, and which is, or includes, the conf
being rewritten. Every file is read through safeio: bounded, never a FIFO, device or folder.
"""

from __future__ import annotations

import glob
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.safeio import FileRefused, read_bytes

CONF_LIMIT = 1024 * 1024  # an nginx conf is kilobytes; a larger file is not the one rendered
PID_FILE_LIMIT = 64
CMDLINE_LIMIT = 64 * 1024
INCLUDE_DEPTH = 4  # nginx.conf -> sites-enabled/* -> ... ; deeper nesting is not looked through
DEFAULT_CONF = Path("/etc/nginx/nginx.conf")  # Debian nginx 1.22.1, `nginx -V`: --conf-path
DEFAULT_PID = Path("/run/nginx.pid")  # same build: --pid-path
MASTER_TITLE = "nginx: master process "
# nginx writes its pid file (src/core/nginx.c main: ngx_create_pidfile) before the master retitles itself
# (ngx_master_process_cycle), and `systemctl start` returns once the pid file is there: a master just started
# may still show its plain argv for a moment. Only an untitled nginx argv is waited for, and only this long.
TITLE_WAIT_S = 2.0

_UPSTREAM = re.compile(r"(upstream\s+\w+_vllm\s*\{[^}]*?\bserver\s+)([^;\s]+)(\s*;)", re.S)
_DIRECTIVE = re.compile(r"(?:^|[;{}\s])(pid|include)\s+([^;\s]+)\s*;")


def mask_comments(text: str) -> str:
    """``text`` with every comment blanked (same length, so offsets still index the original)."""
    out, quote, i = list(text), "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#":
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
            continue
        i += 1
    return "".join(out)


def read_conf(path: Path, label: str = "nginx conf") -> str:
    try:
        return read_bytes(path, CONF_LIMIT, label).decode("utf-8")
    except UnicodeDecodeError:
        raise TQError(f"{label} {path} is not UTF-8 text", "pass the nginx.conf `tqdeploy build` rendered") from None


@dataclass(frozen=True)
class Upstream:
    start: int  # offsets of the server address in the text
    end: int
    address: str


def find_upstream(text: str, conf: Path) -> Upstream:
    """The one `upstream <name>_vllm { server ADDRESS; }` that nginx reads (commented-out blocks never count)."""
    found = list(_UPSTREAM.finditer(mask_comments(text)))
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise TQError(
            f"{conf} has {what} `upstream <name>_vllm {{ server ...; }}` block{'s' if found else ''} outside comments",
            "pass --nginx-conf naming the one conf whose upstream serves the old deployment (build renders it)",
        )
    m = found[0]
    return Upstream(m.start(2), m.end(2), text[m.start(2) : m.end(2)])


def _directives(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2).strip("\"'")) for m in _DIRECTIVE.finditer(mask_comments(text))]


def _cmdline(pid: int) -> str:
    try:
        raw = read_bytes(Path(f"/proc/{pid}/cmdline"), CMDLINE_LIMIT, "process command line", tail=False)
    except FileRefused:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", errors="replace").strip()


def _titled_cmdline(pid: int) -> str:
    """The command line of ``pid``, waited for (TITLE_WAIT_S at most) while it is an nginx binary's own argv that
    has not yet taken its master title; anything else is returned as read, at once."""
    deadline = time.monotonic() + TITLE_WAIT_S
    cmdline = _cmdline(pid)
    while _untitled_nginx(cmdline) and time.monotonic() < deadline:
        time.sleep(0.02)
        cmdline = _cmdline(pid)
    return cmdline


def _untitled_nginx(cmdline: str) -> bool:
    first = cmdline.split(" ", 1)[0]
    return os.path.basename(first) == "nginx"


def _option(words: list[str], flag: str) -> str | None:
    for i, word in enumerate(words[:-1]):
        if word == flag:
            return words[i + 1]
    return None


def main_conf(cmdline: str) -> tuple[Path, Path]:
    """The master's main conf and its prefix, from its retitled command line."""
    words = cmdline[len(MASTER_TITLE) :].split()
    prefix = Path(_option(words, "-p") or "/usr/share/nginx")  # Debian's --prefix, `nginx -V`
    conf = _option(words, "-c")
    if conf is None:
        return DEFAULT_CONF, prefix
    path = Path(conf)
    return (path if path.is_absolute() else prefix / path), prefix


def _includes(conf: Path, target: Path, base: Path, depth: int = 0) -> bool:
    """Whether nginx, reading ``conf``, reads ``target`` (itself, or through its includes). ``base``: the main
    conf's folder, which nginx resolves every relative include against (its conf prefix)."""
    if os.path.realpath(conf) == os.path.realpath(target):
        return True
    if depth >= INCLUDE_DEPTH:
        return False
    try:
        text = read_conf(conf, "nginx's conf")
    except TQError:
        return False
    for name, value in _directives(text):
        if name != "include":
            continue
        pattern = value if os.path.isabs(value) else str(base / value)
        for match in sorted(glob.glob(pattern))[:256]:
            if _includes(Path(match), target, base, depth + 1):
                return True
    return False


def _pid_directive(conf: Path, prefix: Path) -> Path:
    try:
        text = read_conf(conf, "nginx's main conf")
    except TQError:
        return DEFAULT_PID
    values = [value for name, value in _directives(text) if name == "pid"]
    if not values:
        return DEFAULT_PID
    path = Path(values[-1])
    return path if path.is_absolute() else prefix / path


def read_pid(pid_file: Path) -> int:
    """The number in nginx's pid file, read as untrusted input (no FIFO, no link, 64 bytes at most)."""
    fix = "pass --nginx-pid with the pid file of the running nginx (its `pid` directive)"
    try:
        text = read_bytes(pid_file, PID_FILE_LIMIT, "nginx pid file").decode("ascii").strip()
    except FileRefused as err:
        raise TQError(err.message, fix) from None
    except UnicodeDecodeError:
        text = ""
    if not text.isdigit() or not 1 < int(text) < 1 << 22:
        raise TQError(f"nginx pid file {pid_file} holds no pid ({text[:20]!r})", fix)
    return int(text)


def proven_master(pid_file: Path, conf: Path) -> int:
    """The pid in ``pid_file``, once proven the nginx master that serves ``conf``; TQError otherwise, before any
    signal."""
    pid = read_pid(pid_file)
    cmdline = _titled_cmdline(pid)
    if not cmdline and not Path(f"/proc/{pid}").exists():
        raise TQError(
            f"nginx master {pid} (from {pid_file}) is not running", "start nginx, or pass the right --nginx-pid"
        )
    if not cmdline.startswith(MASTER_TITLE):
        raise TQError(
            f"pid {pid} in {pid_file} is not an nginx master process ({cmdline[:60]!r}); not signalled",
            "pass --nginx-pid with the pid file of the running nginx (its `pid` directive)",
        )
    main, prefix = main_conf(cmdline)
    pid_path = _pid_directive(main, prefix)
    if os.path.realpath(pid_path) != os.path.realpath(pid_file):
        raise TQError(
            f"nginx master {pid} writes its pid to {pid_path}, not {pid_file}; not signalled",
            f"pass --nginx-pid {pid_path}",
        )
    if not _includes(main, conf, main.parent):
        raise TQError(
            f"nginx master {pid} (conf {main}) does not include {conf}; not signalled",
            "pass --nginx-conf naming the conf that nginx includes (an `include` line in its nginx.conf)",
        )
    return pid
