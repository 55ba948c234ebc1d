"""The `check` and `collector` recipes of docs/architecture.md, followed on a copy of the package and run through
the CLI in a subprocess: the new check's finding in `tqdeploy doctor --json` (live and replayed, its page's
examples included) and its page in `explain`; the new collector's file in a real `tqdeploy bundle`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from support.doctor_hosts import h200
from support.recipes import apply_recipe
from test_doctor_docs import apply, assignments


def cli(tool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(tool))
    return subprocess.run(
        [sys.executable, "-m", "tqdeploy", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=180
    )


def tq131(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    assert proc.returncode in (0, 1), proc.stderr
    return [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "TQ131"]


def test_the_check_recipe_adds_a_check_that_doctor_runs_replays_and_explains(tmp_path):
    tool = apply_recipe("check", tmp_path / "copy")
    live = tq131(cli(tool, "doctor", "--json", "--offline", cwd=tmp_path))
    assert len(live) == 1 and live[0]["severity"] in ("ok", "warn", "skipped"), live  # this host's kernel
    assert "failed" not in live[0]["title"]
    examples = assignments(tool.parent / "checks" / "docs" / "TQ131.md")
    assert examples.get("Catches") and examples.get("Passes")
    for section, expected in (("Catches", {"warn", "error"}), ("Passes", {"ok"})):
        for n, edits in enumerate(examples[section]):
            data = h200()
            for path, value in edits:
                apply(data, path, value)
            snapshot = tmp_path / f"{section}-{n}.json"
            snapshot.write_text(json.dumps(data))
            found = tq131(cli(tool, "doctor", "--snapshot", str(snapshot), "--json", cwd=tmp_path))
            assert {f["severity"] for f in found} <= expected and found, (section, edits, found)
    page = cli(tool, "explain", "TQ131", cwd=tmp_path)
    assert page.returncode == 0 and "kernel supported by current NVIDIA drivers" in page.stdout, page.stderr


def test_the_collector_recipe_adds_a_file_to_a_real_bundle(tmp_path):
    tool = apply_recipe("collector", tmp_path / "copy")
    out = tmp_path / "b.tar.gz"
    proc = cli(tool, "bundle", "--out", str(out), "--json", cwd=tmp_path)  # host only: no ./build here
    assert proc.returncode == 0, proc.stderr
    collectors = json.loads(proc.stdout)["collectors"]
    by_name = {c["name"]: c for c in collectors}
    assert by_name["summary"]["status"] == "ok", by_name["summary"]
    assert by_name["summary"]["files"] == ["host/summary.txt"]
    names = [c["name"] for c in collectors]
    assert names.index("doctor") < names.index("summary")  # its provider ran first
    with tarfile.open(out, "r:gz") as tar:
        summary = tar.extractfile("host/summary.txt").read().decode()
    lines = summary.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["kernel", "NVIDIA", "GPUs"], summary
    assert lines[0] != "kernel unknown"  # the doctor's live snapshot of this host, handed over
