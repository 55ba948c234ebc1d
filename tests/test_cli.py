import json
import os
import re
import subprocess

import pytest

from tqdeploy import __version__


def test_version(run_cli):
    code, out, _ = run_cli("--version")
    assert code == 0
    assert out.strip() == f"tqdeploy {__version__}"


def test_unknown_command_is_usage_error(run_cli):
    code, _, err = run_cli("no-such-command")
    assert code == 2
    assert "No such command" in err


def test_explain_unknown_id_is_one_line_error(run_cli):
    code, _, err = run_cli("explain", "TQ999")
    assert code == 2
    assert err.startswith("tqdeploy: error: no check named 'TQ999'")
    assert "Traceback" not in err


def test_help_does_not_import_heavy_libraries(tqdeploy_exe):
    # --help must stay instant: none of the heavy libraries may be imported for it.
    code = (
        "import sys; from tqdeploy.cli import app; "
        "heavy = ('pynvml', 'docker', 'huggingface_hub', 'vllm', 'torch', 'jinja2', 'psutil', 'matplotlib'); "
        "heavy = [m for m in heavy if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    python = tqdeploy_exe.rsplit("/", 1)[0] + "/python"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
    res = subprocess.run([tqdeploy_exe, "--help"], capture_output=True, text=True)
    assert res.returncode == 0
    assert "Usage: tqdeploy" in res.stdout


# A bug stand-in: explain's library call raises an exception that no code path expects. It runs in a real
# child process, so the exit status is the one a shell sees.
_BUGGY_EXPLAIN = (
    "import tqdeploy.resources as resources\n"
    "def doc_path(check_id):\n"
    "    raise RuntimeError('index out of step\\nsecond line of the message')\n"
    "resources.doc_path = doc_path\n"
    "from tqdeploy.cli import main\n"
    "raise SystemExit(main(['explain', 'TQ101']))\n"
)


def _run_buggy(tqdeploy_exe, debug: bool) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k != "TQDEPLOY_DEBUG"}
    if debug:
        env["TQDEPLOY_DEBUG"] = "1"
    python = tqdeploy_exe.rsplit("/", 1)[0] + "/python"
    return subprocess.run([python, "-c", _BUGGY_EXPLAIN], capture_output=True, text=True, env=env, timeout=60)


def test_internal_error_exits_3_with_one_line(tqdeploy_exe):
    res = _run_buggy(tqdeploy_exe, debug=False)
    assert res.returncode == 3
    assert res.stdout == ""
    assert res.stderr.splitlines() == [
        "tqdeploy: internal error: RuntimeError: index out of step "
        "(a bug in tqdeploy; re-run with TQDEPLOY_DEBUG=1 for a traceback)"
    ]


def test_internal_error_traceback_only_with_debug(tqdeploy_exe):
    res = _run_buggy(tqdeploy_exe, debug=True)
    assert res.returncode == 3
    assert res.stderr.startswith("Traceback (most recent call last):")
    assert "RuntimeError: index out of step" in res.stderr
    assert res.stderr.splitlines()[-1] == "tqdeploy: internal error: RuntimeError: index out of step"


def test_usage_errors_stay_exit_2(run_cli):
    code, _, err = run_cli("plan")  # a required option left out: click's usage error, not a bug
    assert code == 2
    assert "Missing option '--model'" in err and "internal error" not in err
    code, _, err = run_cli("explain", "--no-such-flag")
    assert code == 2 and "internal error" not in err
    assert err.splitlines() == [
        "tqdeploy: error: tqdeploy explain has no option --no-such-flag",
        "  fix: `tqdeploy explain -h` lists the options and shows examples",
    ]


def test_ctrl_c_while_the_cli_is_importing_is_one_line_and_exit_130():
    """SIGINT during `import typer` (the first thing cli.py imports) must not print a traceback."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from tqdeploy.__main__ import main\n"
        "sys.exit(main(['--help']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130
    assert proc.stderr == "tqdeploy: interrupted\n" and proc.stdout == ""


@pytest.mark.parametrize("args", [["-h"], ["--help"], ["lint", "-h"], ["doctor", "-h"], ["plan", "-h"], ["up", "-h"]])
def test_dash_h_is_help_everywhere(run_cli, args):
    code, out, err = run_cli(*args)
    assert code == 0 and err == ""
    assert out.startswith("Usage: tqdeploy") and "-h, --help" in out
    assert "Exit codes:" in out and "  2    usage error or bad input" in out


@pytest.mark.parametrize(
    ("args", "line", "fix"),
    [
        (["lint", "--jsno"], "tqdeploy lint has no option --jsno", "did you mean --json? ("),
        (["doctor", "--jsn"], "tqdeploy doctor has no option --jsn", "did you mean --json?"),
        (["doctor", "--ofline"], "tqdeploy doctor has no option --ofline", "did you mean --offline? ("),
        # before `--`: the option is refused, not swallowed into the launch command
        (["lint", "--vllm-versoin", "0.25.0", "--", "vllm", "serve", "x"], "lint has no option --vllm-versoin",
         "did you mean --vllm-version?"),
        (["lint", "vllm", "serve", "x"], "tqdeploy lint takes a launch command only after `--`",
         "tqdeploy lint [OPTIONS] -- vllm serve x"),
        (["download", "Qwen/Qwen3.6-27B@main", "--retries", "-1"], "--retries must be 0 or more", "--retries 0"),
        (["no-such-command"], "No such command 'no-such-command'", "`tqdeploy -h` lists the commands"),
    ],
)  # fmt: skip
def test_usage_errors_are_one_line_and_a_fix(run_cli, args, line, fix):
    code, out, err = run_cli(*args)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("tqdeploy: error: ") and line in lines[0], err
    assert lines[1].startswith("  fix: ") and fix in lines[1], err
    assert "Usage:" not in err and "Try '" not in err  # not click's box


def test_the_launch_command_after_dashdash_keeps_its_own_options(run_cli):
    code, out, err = run_cli("lint", "--json", "--", "vllm", "serve", "x", "--max-model-len", "512", "--jsno")
    report = json.loads(out)
    # after `--` it is in vLLM's option space, linted there (TQ301), not refused as tqdeploy's
    assert report["command"].endswith("--max-model-len 512 --jsno")
    assert "TQ301" in [f["id"] for f in report["findings"]]


@pytest.mark.parametrize("columns", ["80", "200"])
def test_help_is_plain_and_whole(tqdeploy_exe, columns):
    env = {**os.environ, "COLUMNS": columns, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    top = subprocess.run([tqdeploy_exe, "-h"], capture_output=True, text=True, env=env, timeout=60).stdout
    commands = top.split("Commands:\n")[1].split("\n\n")[0]
    assert "..." not in commands  # the list is wrapped, never cut
    assert "Find invalid flags, false advice and risky settings" in commands
    for name in ("doctor", "plan", "init", "build", "download", "lint", "up", "status", "logs", "down", "explain"):
        text = subprocess.run([tqdeploy_exe, name, "-h"], capture_output=True, text=True, env=env, timeout=60).stdout
        assert not re.search(r"<[a-z][^<>]*>", text), (name, re.findall(r"<[^<>]*>", text))  # no <list[str]>
        assert f"Examples:\n  tqdeploy {name}" in text and "Exit codes:" in text, name
        assert max(len(line) for line in text.split("Examples:")[0].splitlines()) <= int(columns), name


@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_a_reader_that_stops_early_leaves_the_commands_own_exit_code(tqdeploy_exe, as_json):
    # `tqdeploy plan | head -1`: the pipe closes before tqdeploy writes; the exit code stays the plan's.
    model = str(__import__("pathlib").Path(__file__).parent / "fixtures" / "models" / "qwen3.6-27b")
    cmd = [tqdeploy_exe, "plan", "--model", model, "--gpu", "H200", *as_json]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and err == "", err
    assert subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0  # as without the pipe


def test_a_value_of_the_wrong_type_is_said_in_words(run_cli):
    code, _, err = run_cli("plan", "--model", "m", "--gpus", "abc")
    assert code == 2 and err.splitlines()[0] == "tqdeploy: error: --gpus must be a whole number"
    code, _, err = run_cli("plan", "--model", "m", "--gpu-memory-utilization", "x")
    assert code == 2 and err.splitlines()[0] == "tqdeploy: error: --gpu-memory-utilization must be a number"


def test_the_human_findings_table_is_worst_first_across_areas(run_cli, tmp_path):
    snap = json.loads(
        (__import__("pathlib").Path(__file__).parent / "fixtures" / "hosts" / "h200-1gpu.json").read_text()
    )
    snap["shm"]["total_bytes"] = snap["shm"]["free_bytes"] = 64 << 20  # a 64 MiB /dev/shm: too small
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    code, out, _ = run_cli("doctor", "--snapshot", str(path))
    severities = [m.group(1) for m in re.finditer(r"^│ TQ\d+ +│ (\w+) ", out, re.M)]
    rank = {"error": 4, "warn": 3, "info": 2, "ok": 1, "skipped": 0}
    assert severities[0] in ("error", "warn") and "ok" in severities, out
    assert [rank[s] for s in severities] == sorted((rank[s] for s in severities), reverse=True), severities


def test_down_of_a_never_started_build_names_no_log_that_does_not_exist(run_cli, tmp_path):
    build = tmp_path / "b"
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(build))[0] == 0
    code, out, _ = run_cli("down", str(build))
    assert code == 0 and out.strip() == f"{build}: nothing running"
    assert "True" not in out and "False" not in out
    code, out, _ = run_cli("down", str(build), "--json")
    assert code == 0 and json.loads(out)["log_path"] is None  # JSON too: no path to a log that is not there
    log = build / ".tqdeploy" / "logs" / "server.log"
    log.parent.mkdir(parents=True)
    log.write_text("1796000100.000|a line of an earlier run\n")
    code, out, _ = run_cli("down", str(build), "--json")
    assert json.loads(out)["log_path"] == str(log)
    code, out, _ = run_cli("down", str(build))
    assert out.strip().endswith(f"logs kept: {log}")


def test_logs_json_is_one_object_a_line_with_the_time_tqdeploy_read_it(run_cli, tmp_path):
    build = tmp_path / "b"
    logs = build / ".tqdeploy" / "logs"
    logs.mkdir(parents=True)
    (logs / "server.log").write_text("1796000100.000|old line\n1796000200.500|new line\nunstamped\n")
    code, out, _ = run_cli("logs", str(build), "--json")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == [
        {"schema": "tqdeploy.logs/1", "time": 1796000100.0, "line": "old line"},
        {"schema": "tqdeploy.logs/1", "time": 1796000200.5, "line": "new line"},
        {"schema": "tqdeploy.logs/1", "time": None, "line": "unstamped"},
    ]
    code, out, _ = run_cli("logs", str(build), "--json", "--since", "1796000150")
    assert [json.loads(line)["line"] for line in out.splitlines()] == ["new line", "unstamped"]
    assert run_cli("logs", str(build))[1] == "old line\nnew line\nunstamped\n"  # the text form as before


def test_tqdeploy_alone_prints_its_help_and_a_missing_argument_is_named(run_cli):
    code, out, err = run_cli()
    assert code == 0 and out.startswith("Usage: tqdeploy") and "Commands:" in out and err == ""
    code, _, err = run_cli("explain")
    assert code == 2 and err.splitlines()[0] == "tqdeploy: error: tqdeploy explain needs CHECK_ID"


def test_connect_defaults_to_build_as_the_other_deployment_commands(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", "build")[0] == 0
    default = run_cli("connect", "openai", "--json")
    named = run_cli("connect", "openai", "build", "--json")
    assert default[0] == 0 and default[1] == named[1], default[2]
