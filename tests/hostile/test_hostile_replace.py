"""Hostile cases around `up --replace` (issue 35): nothing is signalled that is not proven nginx's, nothing blocks,
comments never count as configuration, and every precondition is refused before the new server starts.

nginx is Debian's, run as the test's own process on a loopback port with a main conf that includes the
upstream conf (as test_up_replace.py does); the unrelated process is a `sleep`; the deployments are real
`tqdeploy up` runs of builds whose vLLM is swapped for test_hostile_procs' stand-in HTTP server.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hostile.test_hostile_procs import needs_vllm_python, standin_build
from support.up_builds import TQDEPLOY, assert_nothing_left, env, free_port, kill_leftovers, no_answer_check, tq
from tqdeploy.errors import TQError
from tqdeploy.runtime.nginxconf import TITLE_WAIT_S
from tqdeploy.runtime.replace import plan_switch, rewrite_upstream

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
needs_nginx = pytest.mark.skipif(not os.path.exists(NGINX), reason="nginx is not installed (make test-deps)")
UPSTREAM = "upstream demo_vllm {\n    server 127.0.0.1:%d;\n}\nserver {\n    listen 127.0.0.1:%d;\n}\n"
COMMENTED = "# an old block, kept for reference:\n# upstream old_vllm {\n#     server 10.0.0.9:8000;\n# }\n"


def _nginx(root: Path, site: str) -> tuple[Path, Path]:
    """nginx (daemonised, as a service runs it) reading root/site.conf; returns (site conf, pid file)."""
    root.mkdir(parents=True, exist_ok=True)
    conf, pid_file = root / "site.conf", root / "nginx.pid"
    conf.write_text(site)
    main = root / "main.conf"
    temp = " ".join(f"{k}_temp_path {root}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    main.write_text(
        f"worker_processes 1;\npid {pid_file};\nerror_log {root}/error.log;\nevents {{ worker_connections 16; }}\n"
        f"http {{ access_log off; {temp} include {conf}; }}\n"
    )
    subprocess.run([NGINX, "-c", str(main), "-p", str(root)], check=True, capture_output=True, timeout=30)
    return conf, pid_file


def _stop_nginx(pid_file: Path) -> None:
    try:
        os.kill(int(pid_file.read_text()), signal.SIGQUIT)
    except (OSError, ValueError):
        return
    for _ in range(100):
        if not pid_file.exists():
            return
        time.sleep(0.05)


@pytest.fixture
def nginx(tmp_path):
    site = UPSTREAM % (free_port(), free_port())
    conf, pid_file = _nginx(tmp_path / "nginx", site)
    yield conf, pid_file
    _stop_nginx(pid_file)


@needs_nginx
def test_replace_proves_the_pid_is_nginx_master_that_reads_the_conf(nginx, tmp_path):
    conf, pid_file = nginx
    plan = plan_switch(conf, pid_file)  # the real one passes
    assert plan.master == int(pid_file.read_text()) and plan.old_upstream.startswith("127.0.0.1:")
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        while b"sleep" not in Path(f"/proc/{sleeper.pid}/cmdline").read_bytes():  # until its exec is done
            time.sleep(0.01)
        fake = tmp_path / "fake.pid"
        fake.write_text(f"{sleeper.pid}\n")
        with pytest.raises(TQError, match="is not an nginx master process.*not signalled"):
            plan_switch(conf, fake)
        other = tmp_path / "other.conf"
        other.write_text(conf.read_text())  # a conf nginx does not include: its master is not signalled for it
        with pytest.raises(TQError, match="does not include"):
            plan_switch(other, pid_file)
        copy = tmp_path / "copy.pid"  # nginx's pid, but in a file that is not nginx's own pid file
        copy.write_text(pid_file.read_text())
        with pytest.raises(TQError, match="writes its pid to"):
            plan_switch(conf, copy)
        assert sleeper.poll() is None  # never signalled
    finally:
        sleeper.kill()
        sleeper.wait()


def _exec_as(argv0: str, tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A `sleep` exec'd under another argv[0] (bash's `exec -a`), and a pid file naming it."""
    proc = subprocess.Popen(["bash", "-c", f"exec -a {argv0} sleep 300"], start_new_session=True)
    while not Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(argv0.encode()):  # until its exec is done
        time.sleep(0.01)
    pid_file = tmp_path / f"{proc.pid}.pid"
    pid_file.write_text(f"{proc.pid}\n")
    return proc, pid_file


def test_replace_waits_a_bounded_moment_for_a_just_started_master_to_take_its_title(tmp_path):
    """nginx writes its pid file before its master retitles itself: a plain nginx argv is given TITLE_WAIT_S to
    become `nginx: master process ...`, then refused unsignalled; any other process is refused at once."""
    conf = tmp_path / "site.conf"
    conf.write_text(UPSTREAM % (8000, 8080))
    untitled, untitled_pid = _exec_as("/usr/sbin/nginx", tmp_path)
    other, other_pid = _exec_as("not-nginx", tmp_path)
    try:
        t0 = time.monotonic()
        with pytest.raises(TQError, match=r"is not an nginx master process \('/usr/sbin/nginx 300'\)"):
            plan_switch(conf, untitled_pid)
        assert TITLE_WAIT_S <= time.monotonic() - t0 < TITLE_WAIT_S + 2
        t0 = time.monotonic()
        with pytest.raises(TQError, match="is not an nginx master process"):
            plan_switch(conf, other_pid)
        assert time.monotonic() - t0 < 1
        assert untitled.poll() is None and other.poll() is None  # never signalled
    finally:
        for proc in (untitled, other):
            proc.kill()
            proc.wait()


def test_replace_refuses_a_fifo_pid_file_at_once(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text(UPSTREAM % (8000, 8080))
    fifo = tmp_path / "nginx.pid"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(TQError, match="is a FIFO"):
        plan_switch(conf, fifo)
    assert time.monotonic() - t0 < 2


@needs_nginx
def test_replace_rewrites_the_live_upstream_never_a_commented_one(tmp_path):
    live = UPSTREAM % (free_port(), free_port())
    conf, pid_file = _nginx(tmp_path / "nginx", COMMENTED + live)
    try:
        plan = plan_switch(conf, pid_file)
        assert plan.old_upstream == live.split("server ")[1].split(";")[0]
        assert rewrite_upstream(conf, "127.0.0.1:9999") == plan.old_upstream
        text = conf.read_text()
        assert text.startswith(COMMENTED) and "server 127.0.0.1:9999;" in text  # the comment is untouched
        subprocess.run([NGINX, "-t", "-c", str(tmp_path / "nginx" / "main.conf")], check=True, capture_output=True)
    finally:
        _stop_nginx(pid_file)
    only_comment = tmp_path / "only.conf"
    only_comment.write_text(COMMENTED + "server { listen 8080; }\n")
    with pytest.raises(TQError, match="has no `upstream"):
        rewrite_upstream(only_comment, "127.0.0.1:1")
    assert only_comment.read_text() == COMMENTED + "server { listen 8080; }\n"


def _never_started(build: Path) -> None:
    state = build / ".tqdeploy" / "state.json"
    assert not state.exists() or json.loads(state.read_text()).get("pid") is None
    assert not (build / ".tqdeploy" / "logs").exists() or not list((build / ".tqdeploy" / "logs").iterdir())


@needs_nginx
@needs_vllm_python
def test_replace_refuses_every_precondition_before_the_new_server_starts(tmp_path):
    blue, blue_port = standin_build(tmp_path / "blue")
    green, green_port = standin_build(tmp_path / "green")
    root = tmp_path / "nginx"
    conf, pid_file = _nginx(root, UPSTREAM % (blue_port, free_port()))
    try:
        rc, up, out = tq("up", str(blue), "--json", "--force", timeout=180)
        assert rc == 0 and up["status"] == "ready", out[-2000:]
        no_upstream = tmp_path / "plain.conf"
        no_upstream.write_text("server { listen 8080; }\n")
        fifo = tmp_path / "fifo.pid"
        os.mkfifo(fifo)
        junk = tmp_path / "junk.pid"
        junk.write_text("12ab\n")
        for conf_arg, pid_arg, needle in (
            (no_upstream, pid_file, "has no `upstream"),
            (conf, fifo, "is a FIFO"),
            (conf, junk, "holds no pid"),
            (conf, pid_file, "--replace needs --wait"),
        ):
            args = ("--replace", str(blue), "--nginx-conf", str(conf_arg), "--nginx-pid", str(pid_arg))
            args += ("--no-wait",) if "--wait" in needle else ()
            rc, _, err = tq("up", str(green), "--force", *args, timeout=120)
            assert rc == 2 and needle in err and "Traceback" not in err, err[-1500:]
            _never_started(green)
        # nginx dies while the new server starts: the switch is refused, and the new server is stopped again.
        proc = subprocess.Popen(
            [str(TQDEPLOY), "up", str(green), "--json", "--force", *no_answer_check(), "--replace", str(blue)]
            + ["--nginx-conf", str(conf), "--nginx-pid", str(pid_file)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env() | {"STANDIN_READY_AFTER": "4"},
        )
        deadline = time.monotonic() + 120
        while not (green / ".tqdeploy" / "state.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        _stop_nginx(pid_file)
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 2 and "nginx pid file" in err, err[-1500:]  # nginx removed it on exit
        assert_nothing_left(green, None, green_port)
        rc, st, _ = tq("status", str(blue), "--json", timeout=60)
        assert st["ready"] and f"127.0.0.1:{blue_port}" in conf.read_text()  # blue serves on, as before
    finally:
        _stop_nginx(pid_file)
        tq("down", str(blue), "--json", timeout=60)
        kill_leftovers(green)
        kill_leftovers(blue)


@needs_nginx
@needs_vllm_python
def test_replace_with_every_precondition_met_switches_and_stops_the_old(tmp_path):
    """The positive control of the cases above: the same proof lets the real switch through."""
    blue, blue_port = standin_build(tmp_path / "blue")
    green, green_port = standin_build(tmp_path / "green")
    conf, pid_file = _nginx(tmp_path / "nginx", COMMENTED + UPSTREAM % (blue_port, free_port()))
    try:
        rc, up, out = tq("up", str(blue), "--json", "--force", timeout=180)
        assert rc == 0 and up["status"] == "ready", out[-2000:]
        args = ("--replace", str(blue), "--nginx-conf", str(conf), "--nginx-pid", str(pid_file), "--drain-timeout", "5")
        rc, new, out = tq("up", str(green), "--json", "--force", *args, timeout=180)
        assert rc == 0 and new["status"] == "ready", out[-2000:]
        assert new["replaced"]["switch"]["new_upstream"] == f"127.0.0.1:{green_port}"
        assert new["replaced"]["old_stopped"] == "stopped"
        text = conf.read_text()
        assert text.startswith(COMMENTED) and f"server 127.0.0.1:{green_port};" in text
        assert_nothing_left(blue, up["pgid"], blue_port)
    finally:
        _stop_nginx(pid_file)
        tq("down", str(green), "--json", timeout=60)
        kill_leftovers(green)
        kill_leftovers(blue)


def test_replace_whose_new_server_fails_the_answers_check_stops_it_and_keeps_the_old(tmp_path):
    """A failure after the new server started stops it again: the stand-in answers /health and /v1/models but no
    completion, so `up`'s answers check fails; nginx is never switched and the old server keeps serving."""
    blue, blue_port = standin_build(tmp_path / "blue")
    green, green_port = standin_build(tmp_path / "green")
    site = COMMENTED + UPSTREAM % (blue_port, free_port())
    conf, pid_file = _nginx(tmp_path / "nginx", site)
    try:
        rc, up, out = tq("up", str(blue), "--json", "--force", timeout=180)
        assert rc == 0 and up["status"] == "ready", out[-2000:]
        args = ("--replace", str(blue), "--nginx-conf", str(conf), "--nginx-pid", str(pid_file), "--drain-timeout", "5")
        rc, new, out = tq("up", str(green), "--check", "--json", "--force", *args, timeout=240)
        assert rc == 1 and new["status"] == "check-failed", out[-2000:]
        assert new["answer_check"]["status"] == "fail" and not new.get("replaced")
        assert conf.read_text() == site  # never switched
        assert_nothing_left(green, new["pgid"], green_port)  # the new server is stopped again
        rc, status, _ = tq("status", str(blue), "--json", timeout=60)
        assert rc == 0 and status["ready"] is True  # the old one still serves
    finally:
        _stop_nginx(pid_file)
        tq("down", str(blue), "--json", timeout=60)
        kill_leftovers(green)
        kill_leftovers(blue)
