"""scripts/gpu/tools/acceptance.sh, what of it runs without a GPU: shellcheck on the GPU scripts, its prepare phase for
real (doctor, the keyed build, lint, `download --spec build/default` from the loopback Hub mirror) with a stand-in
vLLM package of the wanted version, and its summary on the H200 run recorded in tests/fixtures/gpu-runs/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from support.hubmirror import make_repo
from support.vllm_server import free_port

REPO = Path(__file__).resolve().parents[1]
GPU = REPO / "scripts" / "gpu" / "tools"
RUNS = REPO / "tests" / "fixtures" / "gpu-runs" / "h200-vllm-0.25.0"
BIN = Path(sys.executable).parent


def test_shellcheck_passes_the_gpu_scripts():
    scripts = sorted(GPU.parent.rglob("*.sh"))  # the tools and the records of single leases
    assert GPU / "acceptance.sh" in scripts and GPU.parent / "records" / "record_bench.sh" in scripts
    res = subprocess.run([str(BIN / "shellcheck"), *map(str, scripts)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def _accept(tmp_path: Path, phase: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(GPU / "acceptance.sh"), str(tmp_path / "out"), phase],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_prepare_phase_builds_keyed_and_downloads_where_up_looks(tmp_path):
    work, site = tmp_path / "work", tmp_path / "site"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text('__version__ = "0.25.0"\n')  # the GPU host's vLLM, by version only
    make_repo(work / "src" / "dense8w")  # stands in for make_dense_weights.py's shards (it needs CUDA)
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "TQ_ACCEPT_WORK": str(work),
        "TQ_VLLM_SITE": str(site),
        "TQ_ACCEPT_MIRROR_PORT": str(free_port()),
        "TQ_ACCEPT_MODEL": "dense8w",  # the real demo model's default needs its carried wheel
    }
    env.pop("PYTHONPATH", None)
    res = _accept(tmp_path, "prepare", env)
    assert res.returncode == 0, res.stderr[-3000:]
    steps = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "out" / "steps").glob("*.json")}
    assert {n: steps[n]["rc"] for n in ("build", "lint", "download")} == {"build": 0, "lint": 0, "download": 0}
    build = work / "build" / "default"
    assert (
        "created the API key file build/default/secrets/vllm-api-key (mode 0600)"
        in (work / "steps" / "build.out").read_text()
    )
    key = (build / "secrets" / "vllm-api-key").read_text().strip()
    assert key and all(key not in p.read_text() for p in (work / "steps").iterdir())
    from tqdeploy.runtime.deployment import load_deployment

    dest = json.loads((work / "steps" / "download.out").read_text())["dest"]
    assert Path(dest) == load_deployment(build).model_dir and (Path(dest) / "config.json").is_file()
    assert not (work / "mirror.pid").exists()  # the mirror it started is stopped again
    assert _accept(tmp_path, "bogus", env).returncode == 2


def test_summary_of_the_recorded_h200_run_and_its_doc_section(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    (work / "steps").mkdir(parents=True)
    shutil.copy(RUNS / "tq-cold" / "up.json", work / "up.json")
    shutil.copy(RUNS / "tq-cold" / "down.json", work / "steps" / "down.out")
    (work / "gpu-mem-after-down.txt").write_text("0\n")
    (work / "profile-url").mkdir()
    shutil.copy(RUNS / "tq-warm-load" / "profile-load.json", work / "profile-url" / "profile.json")
    (work / "meta.json").write_text(json.dumps({"date_utc": "2026-12-01T10:00:00Z", "vllm": "0.25.0", "gpu": "H200"}))
    for name, rc in (("build", 0), ("up-cold", 0), ("profile-url", 3), ("down", 0)):
        (work / "steps" / f"{name}.json").write_text(json.dumps({"step": name, "rc": rc, "seconds": 1.5}))
    (work / "steps" / "profile-url.err").write_text("tqdeploy: internal error: HTTPError: HTTP Error 401\n")
    res = subprocess.run(
        [sys.executable, str(GPU / "acceptance_summary.py"), str(work), str(out)], capture_output=True, text=True
    )
    assert res.returncode == 1  # a failed step fails the summary
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed_steps"] == ["profile-url"] and "status" in summary["not_run"]
    assert summary["cold"] == {"status": "ready", "seconds_to_ready": 236.46}
    tok_s = [s["output_tokens_per_s"] for s in summary["profile_url"]["load_steps"]]
    assert tok_s == [454.63, 2673.896, 5797.481]
    md = (out / "summary.md").read_text()
    assert "FAILED: profile-url" in md and "HTTP Error 401" in md and "| 32 | 48 | 0 |" in md
    assert "GPU memory 0 MiB" in md

    doc = tmp_path / "gpu-acceptance.md"
    for commit in ("aaa1111", "bbb2222"):
        res = subprocess.run(
            [sys.executable, str(GPU / "acceptance_summary.py"), "--doc", str(out), str(doc), "--commit", commit],
            capture_output=True,
            text=True,
        )
        assert res.returncode == 0, res.stderr
    text = doc.read_text()
    assert text.startswith("# GPU acceptance runs")
    assert text.index("## 2026-12-01 (commit bbb2222)") < text.index("## 2026-12-01 (commit aaa1111)")
