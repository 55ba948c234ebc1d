"""scripts/gpu/startup.sh (run by the lead on the H200): shellcheck-clean, and its report phase, run for real on
records shaped like its own, writes startup.json and the ratios issue 18 asks for (recreated/warm, tqdeploy vs
plain over alternated pairs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "startup.sh"


def test_shellcheck_passes():
    shellcheck = Path(sys.executable).parent / "shellcheck"
    res = subprocess.run([str(shellcheck), "-x", str(SCRIPT)], capture_output=True, text=True, cwd=SCRIPT.parents[2])
    assert res.returncode == 0, res.stdout + res.stderr


def test_report_computes_the_ratios_from_the_records(tmp_path):
    rows = [
        ("cold", "tqdeploy", 300.0),
        ("recreated", "tqdeploy", 55.0),
        ("warm", "tqdeploy", 50.0),
        ("pair-plain", "plain", 66.0),
        ("pair-tqdeploy", "tqdeploy", 49.0),
        ("pair-plain", "plain", 64.0),
        ("pair-tqdeploy", "tqdeploy", 51.0),
        ("pair-plain", "plain", None),
        ("pair-tqdeploy", "tqdeploy", 50.0),
    ]
    with open(tmp_path / "records.jsonl", "w") as fh:
        for phase, runner, s in rows:
            rec = {"phase": phase, "runner": runner, "seconds_to_ready": s, "sizes": {}, "files_with_key_on_volume": 0}
            if phase.startswith("pair-") and s:
                rec["tok_s"] = {"1": 500.0 if runner == "plain" else 450.0}
            fh.write(json.dumps(rec) + "\n")
    res = subprocess.run(["bash", str(SCRIPT), str(tmp_path), "report"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    md = (tmp_path / "startup.md").read_text()
    assert "- recreated / warm: 1.10x (goal <= 1.1x; warm median 50.0 s)" in md  # 55 / median(50, 49, 51, 50)
    assert "- recreated / the warm start right after it, per pair: 1.10" in md  # 55 / 50, its own warm start
    assert "tqdeploy warm median 50.0 s vs plain vLLM warm median 65.0 s over 2 alternated pairs: 23.1% faster" in md
    assert "| pair-plain | plain | not ready | - | 0 |" in md
    assert (  # 450 / 500 in each pair with tokens/s; plain's own starts all gave 500
        "- tokens/s at concurrency 1: tqdeploy / plain 0.900 (medians; goal within 2%), per pair 0.900, 0.900 "
        "(geometric mean 0.900); plain's own starts spread 0.0%"
    ) in md
    assert len(json.loads((tmp_path / "startup.json").read_text())["runs"]) == len(rows)


def test_report_adds_each_ab_runs_verdict_and_the_runs_pooled(tmp_path):
    from tqdeploy.profile.paired import summarize

    (tmp_path / "records.jsonl").write_text(
        json.dumps({"phase": "warm", "runner": "tqdeploy", "seconds_to_ready": 30.0, "sizes": {},
                    "files_with_key_on_volume": 0}) + "\n"
    )  # fmt: skip
    for n, ratios in ((1, (1.01, 0.99, 1.00, 1.005)), (2, (1.03, 1.05, 0.97, 1.01))):
        steps = [
            {"concurrency": 8, "ratio": r, "first": "tqdeploy" if k % 2 else "plain"} for k, r in enumerate(ratios)
        ]
        ab = {"a": "tqdeploy", "b": "plain", "tolerance": 0.02, "steps": steps,
              "by_concurrency": summarize(steps, 0.02, "tqdeploy")}  # fmt: skip
        (tmp_path / f"ab-{n}.json").write_text(json.dumps(ab))
    (tmp_path / "ab-1-up.json").write_text("{}")  # startup.sh's other ab files are not results
    res = subprocess.run(["bash", str(SCRIPT), str(tmp_path), "report"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in (tmp_path / "startup.md").read_text().splitlines() if ln.startswith("- interleaved")]
    assert [ln.split(" at ")[0] for ln in lines] == [
        "- interleaved tokens/s (ab-1)", "- interleaved tokens/s (ab-2)", "- interleaved tokens/s (pooled)"
    ]  # fmt: skip
    assert "tqdeploy / plain 1.001 over 4 steps, 95% interval" in lines[0]
    assert lines[0].endswith(": within (+-2%); by order: a first 0.998, b first 1.005"), lines[0]
    assert ": unresolved (+-2%)" in lines[1], lines[1]  # 0.97..1.05 alone crosses the band
    assert "over 8 steps" in lines[2]  # both runs' steps in one summary
    verdicts = json.loads((tmp_path / "startup.json").read_text())["comparisons"]["interleaved"]
    assert {name: v["8"]["verdict"] for name, v in verdicts.items()} == {
        "ab-1": "within", "ab-2": "unresolved", "pooled": summarize(
            [{"concurrency": 8, "ratio": r} for r in (1.01, 0.99, 1.00, 1.005, 1.03, 1.05, 0.97, 1.01)], 0.02
        )["8"]["verdict"]}  # fmt: skip
