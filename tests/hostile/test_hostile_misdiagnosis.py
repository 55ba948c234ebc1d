"""Misdiagnosis (issue 35): a failed start is classified from what the launcher says, never from an exit status
alone; pre-flight's key rule is the launcher's; the interpreter probe proves vLLM; profile says when its clock is
not one; `profile --out` naming a file is a one-line refusal.

The launcher is the rendered one (tests/golden/tiny-cpu-demo/launch_vllm.py, what `tqdeploy build` writes), run by
this interpreter: its key and environment checks run before it imports vLLM.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hostile.seeds import TESTS
from support.up_builds import make_build, tq
from tqdeploy.errors import TQError
from tqdeploy.runtime.classify import StartContext, classify_exit
from tqdeploy.safeio import read_key_file

LAUNCHER = TESTS / "golden" / "tiny-cpu-demo" / "launch_vllm.py"
CTX = StartContext(build_dir="/b", port=8000)
KEYS = {
    "plain": b"sk-tq-1\n",
    "crlf": b"sk-tq-1\r\n",
    "trailing space": b"sk-tq-1 \n",
    "leading space": b" sk-tq-1",
    "inner space": b"sk tq",
    "two lines": b"sk-tq-1\nsk-tq-2\n",
    "non-ascii": "sk-tq-\u00e9".encode(),
    "empty": b"\n",
}


def _launch(tmp_path: Path, key: bytes, **env: str) -> subprocess.CompletedProcess:
    path = tmp_path / "key"
    path.write_bytes(key)
    e = {"PATH": "/usr/bin:/bin", "TQ_API_KEY_FILE": str(path), "PYTHONPATH": "/nonexistent"} | env
    return subprocess.run(
        [sys.executable, "-S", str(LAUNCHER), "/models/tiny"], capture_output=True, text=True, env=e, timeout=60
    )


@pytest.mark.parametrize("kind", list(KEYS))
def test_misdiagnosis_preflight_key_rule_is_the_launchers(tmp_path, kind):
    run = _launch(tmp_path, KEYS[kind])
    launcher_accepts = run.returncode != 67  # past the key check it imports vLLM, which -S cannot find
    try:
        read_key_file(tmp_path / "key")
        preflight_accepts = True
    except TQError:
        preflight_accepts = False
    assert preflight_accepts == launcher_accepts, (kind, run.stderr[-500:])
    if not launcher_accepts:
        finding = classify_exit(run.stderr.splitlines(), run.returncode, CTX)
        assert finding.id == "TQ413" and finding.evidence["reason"] == "key-file", finding
    assert "sk-tq" not in run.stderr and "sk tq" not in run.stderr  # the key is never printed


def test_misdiagnosis_an_unrelated_variable_is_not_a_key_file_problem(tmp_path):
    run = _launch(tmp_path, KEYS["plain"], VLLM_RUST_FRONTEND_PATH="/opt/frontend")
    assert run.returncode == 68, run.stderr
    finding = classify_exit(run.stderr.splitlines(), run.returncode, CTX)
    assert finding.id == "TQ427" and "VLLM_RUST_FRONTEND_PATH" in finding.title, finding
    bare = classify_exit([], 67, CTX)  # an exit status and no reason line: only a number
    assert bare.id == "TQ419" and "key" not in bare.title


def test_misdiagnosis_up_with_a_python_that_is_no_python_is_refused_before_start(tmp_path):
    build, _ = make_build(tmp_path / "b", keyed=False)
    rc, up, out = tq("up", str(build), "--python", "/bin/true", "--json", timeout=120)
    assert rc == 1 and up["status"] == "refused", out[-1500:]
    (finding,) = [f for f in up["findings"] if f["id"] == "TQ424"]
    assert "/bin/true" in finding["title"] and not (build / ".tqdeploy" / "logs").exists()


def test_misdiagnosis_the_probe_reports_the_vllm_version_it_found(tmp_path):
    from tqdeploy.runtime.backends.process import ProcessRuntime
    from tqdeploy.runtime.base import StartOptions
    from tqdeploy.runtime.deployment import load_deployment

    build, _ = make_build(tmp_path / "b", keyed=False)
    other = tmp_path / "python"  # answers the probe as an interpreter with another vLLM release would
    other.write_text("#!/bin/sh\necho 'tqdeploy-probe vllm=0.31.0'\n")
    other.chmod(0o755)
    prepared = ProcessRuntime().prepare(load_deployment(build), StartOptions(python=str(other)))
    (finding,) = prepared.findings
    assert finding.id == "TQ424" and finding.severity.value == "warn", finding
    assert finding.evidence["vllm_version"] == "0.31.0" and finding.evidence["build_vllm_version"] == "0.32.0"
    silent = tmp_path / "silent"  # exits 0 and says nothing: proves nothing
    silent.write_text("#!/bin/sh\nexit 0\n")
    silent.chmod(0o755)
    (refused,) = ProcessRuntime().prepare(load_deployment(build), StartOptions(python=str(silent))).findings
    assert refused.id == "TQ424" and refused.severity.value == "error"


def test_misdiagnosis_profile_names_a_clock_that_goes_backwards_and_refuses_a_file_as_out(tmp_path):
    from tqdeploy.runtime.logstamp import stamp

    lines = (TESTS / "fixtures" / "vllm-logs" / "cpu-vllm-0.32.0" / "tiny-cold.log").read_text().splitlines()
    log = tmp_path / "backwards.log"
    log.write_text("".join(stamp(line, 2e9 - i) + "\n" for i, line in enumerate(lines)))
    rc, prof, out = tq("profile", "--log", str(log), "--out", str(tmp_path / "p"), "--json", "--no-chart")
    assert prof is not None and "TQ440" in [f["id"] for f in prof["findings"]], out[-1500:]
    taken = tmp_path / "taken.json"
    taken.write_text("keep me\n")
    rc, _, err = tq("profile", "--log", str(log), "--out", str(taken), timeout=60)
    assert rc == 2 and "is an existing file" in err and "Traceback" not in err and len(err.splitlines()) == 2
    assert taken.read_text() == "keep me\n"
