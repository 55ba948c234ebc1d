"""scripts/gpu/tools/startup.sh (run by the lead on the H200): shellcheck-clean, and its report phase, run for real on
records shaped like its own, writes startup.json and the ratios issue 18 asks for (recreated/warm, tqdeploy vs
plain over alternated pairs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "tools" / "startup.sh"


def test_shellcheck_passes():
    shellcheck = Path(sys.executable).parent / "shellcheck"
    res = subprocess.run([str(shellcheck), "-x", str(SCRIPT)], capture_output=True, text=True, cwd=SCRIPT.parents[3])
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


def _ab_files(folder: Path, names: tuple[str, ...], **extra) -> None:
    """ab result files as paired_load.py writes them: two runs at concurrency 8, each server first in turn."""
    from tqdeploy.profile.paired import summarize

    for name, ratios in zip(names, ((1.01, 0.99, 1.00, 1.005), (1.03, 1.05, 0.97, 1.01)), strict=True):
        steps = [
            {"concurrency": 8, "ratio": r, "first": "tqdeploy" if k % 2 else "plain"} for k, r in enumerate(ratios)
        ]
        ab = {"a": "tqdeploy", "b": "plain", "tolerance": 0.02, "steps": steps,
              "by_concurrency": summarize(steps, 0.02, "tqdeploy"), **extra.get(name, {})}  # fmt: skip
        (folder / f"{name}.json").write_text(json.dumps(ab))


# The lines for _ab_files's two runs and both pooled: the interval, the verdict (+-2%) and the margin (-2%), each
# server's geometric mean when it went first, and the same with the order (pooled: and the run) as a factor.
AB_1 = (
    "tqdeploy / plain over 4 steps 1.001, 95% interval 0.988..1.015: +-2% within; -2% margin: not slower; "
    "by order: a first 0.998, b first 1.005; "
    "order as a factor (2 cells): 1.001, 95% interval 0.982..1.021: +-2% unresolved; -2% margin: not slower"
)
AB_2 = (
    "tqdeploy / plain over 4 steps 1.015, 95% interval 0.961..1.071: +-2% unresolved; -2% margin: unresolved; "
    "by order: a first 1.030, b first 1.000; "
    "order as a factor (2 cells): 1.015, 95% interval 0.940..1.096: +-2% unresolved; -2% margin: unresolved"
)
POOLED = (
    "tqdeploy / plain over 8 steps 1.008, 95% interval 0.988..1.028: +-2% unresolved; -2% margin: not slower; "
    "by order: a first 1.014, b first 1.002; "
    "order as a factor (4 cells): 1.008, 95% interval 0.982..1.034: +-2% unresolved; -2% margin: not slower"
)


def test_report_adds_each_ab_runs_verdict_and_the_runs_pooled(tmp_path):
    from tqdeploy.profile.paired import summarize

    (tmp_path / "records.jsonl").write_text(
        json.dumps({"phase": "warm", "runner": "tqdeploy", "seconds_to_ready": 30.0, "sizes": {},
                    "files_with_key_on_volume": 0}) + "\n"
    )  # fmt: skip
    _ab_files(tmp_path, ("ab-1", "ab-2"))
    (tmp_path / "ab-1-up.json").write_text("{}")  # startup.sh's other ab files are not results
    res = subprocess.run(["bash", str(SCRIPT), str(tmp_path), "report"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in (tmp_path / "startup.md").read_text().splitlines() if ln.startswith("- interleaved")]
    assert lines == [
        f"- interleaved tokens/s ({name}) at concurrency 8: {text}"
        for name, text in (("ab-1", AB_1), ("ab-2", AB_2), ("pooled", POOLED))
    ]  # ab-2's 0.97..1.05 alone crosses the band both ways; pooled: 8 steps, 2 runs x 2 orders
    verdicts = json.loads((tmp_path / "startup.json").read_text())["comparisons"]["interleaved"]
    assert {name: v["8"]["verdict"] for name, v in verdicts.items()} == {
        "ab-1": "within", "ab-2": "unresolved", "pooled": summarize(
            [{"concurrency": 8, "ratio": r} for r in (1.01, 0.99, 1.00, 1.005, 1.03, 1.05, 0.97, 1.01)], 0.02
        )["8"]["verdict"]}  # fmt: skip
    assert {name: v["8"]["margin"] for name, v in verdicts.items()} == {
        "ab-1": "not slower", "ab-2": "unresolved", "pooled": "not slower"
    }  # fmt: skip
    cells = [(v["8"]["adjusted"]["cells"], v["8"]["adjusted"]["df"]) for v in verdicts.values()]
    assert cells == [(2, 2), (2, 2), (4, 4)]  # pooled: 2 runs x 2 orders, 8 steps - 4 cells


def test_pool_prints_each_files_lines_and_the_pooled_ones(tmp_path):
    # lease 6's run recorded no started_first (written before it was); lease 7's plain server started first
    _ab_files(tmp_path, ("lease6-ab", "lease7-ab"), **{"lease7-ab": {"started_first": "plain"}})
    report = SCRIPT.with_name("startup_report.py")
    files = ["lease6-ab.json", "lease7-ab.json"]  # each run is named by its path as given
    res = subprocess.run(
        [sys.executable, str(report), "--pool", *files], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        f"- interleaved tokens/s ({name}) at concurrency 8: {text}"
        for name, text in (("lease6-ab.json", AB_1), ("lease7-ab.json, plain started first", AB_2), ("pooled", POOLED))
    ]


def test_pool_keeps_two_leases_files_of_one_name(tmp_path):
    """startup.sh numbers each lease's runs from ab-1, so two leases' results share file names."""
    (tmp_path / "lease6").mkdir()
    (tmp_path / "lease7").mkdir()
    _ab_files(tmp_path / "lease6", ("ab-1", "ab-2"))
    _ab_files(tmp_path / "lease7", ("ab-2", "ab-1"))  # lease 7's ab-1 is the second run's figures
    report = SCRIPT.with_name("startup_report.py")
    files = [str(tmp_path / lease / "ab-1.json") for lease in ("lease6", "lease7")]
    res = subprocess.run([sys.executable, str(report), "--pool", *files], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert [ln.partition(" at concurrency 8: ")[2] for ln in res.stdout.splitlines()] == [AB_1, AB_2, POOLED]


@pytest.mark.parametrize(
    ("files", "named"),
    [((), "--pool needs ab result files"), (("missing.json",), "missing.json: not a readable ab result")],
)
def test_pool_refuses_bad_input_in_one_line(tmp_path, files, named):
    report = SCRIPT.with_name("startup_report.py")
    res = subprocess.run(
        [sys.executable, str(report), "--pool", *files], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert res.returncode == 2 and named in res.stderr and "Traceback" not in res.stderr, res.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ((), "0 argument(s) given"),
        (("missing.jsonl", "."), "missing.jsonl: not readable records"),
        (("records.jsonl", "no-such-dir"), "no-such-dir: not a folder"),
    ],
)
def test_report_refuses_bad_input_in_one_line(tmp_path, args, named):
    (tmp_path / "records.jsonl").write_text('{"phase": "warm", "runner": "tqdeploy", "seconds_to_ready": 50.0}\n')
    report = SCRIPT.with_name("startup_report.py")
    res = subprocess.run([sys.executable, str(report), *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert res.returncode == 2 and named in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert not (tmp_path / "startup.json").exists()


def test_report_help_prints_its_usage():
    res = subprocess.run([sys.executable, str(SCRIPT.with_name("startup_report.py")), "--help"], capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert res.returncode == 0 and "Usage: startup_report.py RECORDS.jsonl OUT_DIR" in res.stdout, res.stderr
