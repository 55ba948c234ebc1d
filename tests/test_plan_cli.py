"""`tqdeploy plan` end to end: human table, tqdeploy.plan/1 JSON, hardware sources and one-line errors."""

import json
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures"
QWEN36 = str(FIX / "models" / "qwen3.6-27b")
LLAMA = str(FIX / "models" / "llama-3.1-8b")
H200_SNAPSHOT = str(FIX / "hosts" / "h200-1gpu.json")


def plan_json(run_cli, *args):
    code, out, err = run_cli("plan", *args, "--json")
    return code, json.loads(out) if out.strip() else None, err


def test_json_contract_qwen36_on_two_h200(run_cli):
    code, data, _ = plan_json(run_cli, "--model", QWEN36, "--gpu", "H200", "--gpus", "2")
    assert code == 0 and data["schema"] == "tqdeploy.plan/1"
    assert data["tensor_parallel_size"] == 2 and data["max_model_len"] == 262144
    rows = {r["kv_cache_dtype"]: r for r in data["rows"]}
    for key in ("kv_cache_dtype", "kv_bytes_per_token", "kv_tokens", "max_concurrency", "fixed_state_bytes_per_seq"):
        assert key in rows["turboquant_4bit_nc"]
    assert rows["turboquant_4bit_nc"]["kv_bytes_per_token"] == 16 * 2 * 262  # per GPU at TP=2
    assert rows["auto"]["kv_bytes_per_token"] == 32 * 1024
    assert rows["turboquant_4bit_nc"]["fixed_state_bytes_per_seq"] > 0  # linear-attention state
    assert rows["fp8_ds_mla"]["status"] == "not_applicable"
    assert data["recommended"] in rows and data["model"]["is_hybrid"] is True
    assert rows["turboquant_4bit_nc"]["kv_tokens"] > 3 * rows["auto"]["kv_tokens"]


def test_human_table_and_recommendation(run_cli):
    code, out, _ = run_cli(
        "plan",
        "--model",
        LLAMA,
        "--gpu",
        "h200",
        "--max-model-len",
        "131072",
        "--kv-cache-dtype",
        "auto",
        "--kv-cache-dtype",
        "turboquant_4bit_nc",
    )
    assert code == 0
    assert "turboquant_4bit_nc" in out and "46,400" in out and "131,072" in out
    assert "recommended: --kv-cache-dtype auto" in out
    assert "fp8_e5m2" not in out  # only the dtypes asked for


def test_min_concurrency_moves_the_recommendation_to_turboquant(run_cli):
    code, data, _ = plan_json(
        run_cli,
        "--model",
        LLAMA,
        "--gpu",
        "H200",
        "--max-model-len",
        "131072",
        "--min-concurrency",
        "16",
        "--kv-cache-memory-gib",
        "100",
    )
    rows = {r["kv_cache_dtype"]: r for r in data["rows"]}
    assert rows["fp8"]["max_concurrency"] < 16 <= rows["turboquant_4bit_nc"]["max_concurrency"]
    assert data["recommended"] == "turboquant_4bit_nc" and data["budget"]["kv_source"] == "operator"


def test_snapshot_source_and_exact_kv_memory(run_cli):
    code, data, _ = plan_json(
        run_cli,
        "--model",
        LLAMA,
        "--snapshot",
        H200_SNAPSHOT,
        "--max-model-len",
        "32768",
        "--kv-cache-memory-gib",
        "125.15",
        "--kv-cache-dtype",
        "auto",
    )
    assert code == 0 and data["host"]["source"].startswith("snapshot")
    assert data["host"]["gpu_memory_bytes"] == 150754820096
    (row,) = data["rows"]
    assert row["kv_tokens"] == int(125.15 * (1 << 30)) // (16 * 131072) * 16


def test_skip_layers_and_utilization(run_cli):
    code, data, _ = plan_json(
        run_cli,
        "--model",
        LLAMA,
        "--gpu",
        "H200",
        "--kv-cache-dtype",
        "turboquant_4bit_nc",
        "--skip-layers",
        "10, 11",
        "--gpu-memory-utilization",
        "0.5",
    )
    (row,) = data["rows"]
    assert row["skip_layers"] == [0, 1, 10, 11, 30, 31]
    assert row["kv_bytes_per_token"] == 26 * 8 * 134 + 6 * 4096
    assert data["budget"]["gpu_memory_utilization"] == 0.5


def test_errors_in_the_plan_exit_1(run_cli):
    code, data, _ = plan_json(run_cli, "--model", QWEN36, "--gpu", "H200", "--gpus", "3")
    assert code == 1 and any(p["evidence"]["code"] == "TP_HEADS" and p["id"] == "TQ203" for p in data["problems"])
    code, data, _ = plan_json(run_cli, "--model", QWEN36, "--gpu", "H200", "--max-model-len", "300000")
    assert code == 1 and any(p["evidence"]["code"] == "MML_TOO_LONG" and p["id"] == "TQ204" for p in data["problems"])


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--model", LLAMA, "--gpu", "B999"], "no GPU named 'B999'"),
        (["--model", LLAMA, "--gpu", "H200", "--snapshot", H200_SNAPSHOT], "--gpu and --snapshot both"),
        (["--model", LLAMA, "--gpu", "H200", "--skip-layers", "a,b"], "--skip-layers 'a,b'"),
        (["--model", LLAMA, "--gpu", "H200", "--skip-layers", "99"], "outside this model's layers"),
        (["--model", LLAMA, "--gpu", "H200", "--gpus", "1", "--tp", "2"], "--tp 2 needs 2 GPUs"),
        (["--model", LLAMA, "--gpu", "H200", "--kv-cache-dtype", "turbo"], "--kv-cache-dtype 'turbo'"),
        (["--model", LLAMA, "--gpu", "H200", "--gpu-memory-utilization", "1.5"], "outside (0, 1]"),
        (["--model", LLAMA, "--gpu", "H200", "--max-model-len", "0"], "--max-model-len 0"),
        (["--model", LLAMA, "--gpu", "H200", "--vllm-version", "latest"], "--vllm-version 'latest'"),
        (["--model", "/nonexistent/model", "--gpu", "H200"], "neither an existing folder"),
        (["--model", LLAMA, "--snapshot", "/nonexistent.json"], "does not exist"),
        (["--model", LLAMA, "--gpu", "H200", "--kv-cache-memory-gib", "-1"], "--kv-cache-memory-gib -1.0 must be"),
        (["--model", LLAMA, "--gpu", "H200", "--kv-cache-memory-gib", "0"], "--kv-cache-memory-gib 0.0 must be"),
        (["--model", LLAMA, "--gpu", "H200", "--reserve-gib", "-3"], "--reserve-gib -3.0 must be"),
        (["--model", LLAMA, "--gpu", "H200", "--min-concurrency", "0"], "--min-concurrency 0.0 must be"),
    ],
)
def test_bad_input_is_one_line(run_cli, args, needle):
    code, out, err = run_cli("plan", *args)
    assert code == 2, (out, err)
    assert err.startswith("tqdeploy: error:") and needle in err.splitlines()[0]
    assert "Traceback" not in err and out == ""


def test_no_gpu_here_names_the_alternatives(run_cli, monkeypatch):
    import tqdeploy.probe
    from tqdeploy.snapshot import HostSnapshot

    monkeypatch.setattr(tqdeploy.probe, "collect", lambda **kw: HostSnapshot(probe_errors={"nvml": "no driver"}))
    code, _, err = run_cli("plan", "--model", LLAMA)
    assert code == 2 and "no GPU on this host" in err and "--gpu H200" in err


def test_json_keys_and_types_are_the_documented_contract(run_cli):
    """The JSON contract of docs/plan.md: these keys, these types, nothing renamed."""
    code, data, _ = plan_json(run_cli, "--model", LLAMA, "--gpu", "H200", "--max-model-len", "131072")
    assert code == 0
    assert set(data) == {
        "schema",
        "model",
        "host",
        "budget",
        "vllm_version",
        "tensor_parallel_size",
        "max_model_len",
        "rows",
        "recommended",
        "recommendation_reason",
        "problems",
        "notes",
    }
    assert data["schema"] == "tqdeploy.plan/1" and isinstance(data["recommended"], str)
    row_keys = {
        "kv_cache_dtype",
        "status",
        "kv_bytes_per_token",
        "kv_tokens",
        "max_concurrency",
        "fixed_state_bytes_per_seq",
        "block_size",
        "skip_layers",
        "exact",
        "reason",
        "availability",
        "problems",
    }
    for row in data["rows"]:
        assert set(row) == row_keys, row["kv_cache_dtype"]
        assert row["status"] in ("ok", "does_not_fit", "not_applicable")
        if row["status"] != "not_applicable":
            assert isinstance(row["kv_bytes_per_token"], int) and isinstance(row["kv_tokens"], int)
            assert isinstance(row["max_concurrency"], float)
    assert [r["kv_cache_dtype"] for r in data["rows"]][:3] == ["auto", "float16", "bfloat16"]
    assert data["recommended"] in {r["kv_cache_dtype"] for r in data["rows"] if r["status"] == "ok"}


def test_memory_other_processes_hold_on_the_gpu_is_said_in_the_plan(run_cli, tmp_path):
    # Seen on an H200 with 94 GiB held: vLLM refuses to start (free < utilization x total), so the plan says so.
    snap = json.loads(Path(H200_SNAPSHOT).read_text())
    snap["gpus"][0]["memory_used"] = 94 << 30
    held = tmp_path / "held.json"
    held.write_text(json.dumps(snap))
    code, out, err = run_cli("plan", "--model", LLAMA, "--snapshot", str(held), "--json")
    problems = json.loads(out)["problems"]
    assert code == 1 and [(p["id"], p["evidence"]["code"]) for p in problems] == [("TQ107", "held-memory")], out
    assert "94.0 GiB" in problems[0]["title"] and "--gpu-memory-utilization 0.32" in problems[0]["remediation"]
    code, out, _ = run_cli("plan", "--model", LLAMA, "--snapshot", str(H200_SNAPSHOT), "--json")
    assert "held-memory" not in out  # the 0.6 GiB a driver holds leaves vLLM's 0.92 free


def test_a_near_miss_kv_cache_dtype_gets_lints_suggestion(run_cli):
    code, _, err = run_cli("plan", "--model", LLAMA, "--gpu", "H200", "--kv-cache-dtype", "turboquant_4bit")
    assert code == 2
    assert err.splitlines()[1] == "  fix: use turboquant_4bit_nc"
    _, lint_out, _ = run_cli("lint", "--", "vllm", "serve", LLAMA, "--kv-cache-dtype", "turboquant_4bit")
    assert "use turboquant_4bit_nc" in lint_out  # the same did-you-mean as lint's TQ302


def _stdout_on_a_tty(cmd: list[str], env: dict[str, str]) -> str:
    """The command's stdout on a pseudo-terminal, as a person at an 80-column terminal sees it."""
    from support.tty import run_on_a_tty

    return run_on_a_tty(cmd, "stdout", env, timeout=60)[1].replace("\r\n", "\n")


def test_the_table_fits_80_columns_with_every_dtype_name_whole(tqdeploy_exe):
    import os
    import re
    import subprocess

    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}
    cmd = [tqdeploy_exe, "plan", "--model", QWEN36, "--gpu", "H200", "--gpus", "2"]
    piped = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60).stdout
    on_a_tty = re.sub(r"\x1b\[[0-9;]*m", "", _stdout_on_a_tty(cmd, env))
    data = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=60).stdout)
    for text in (piped, on_a_tty):
        out = "\n".join(line.rstrip() for line in text.splitlines()) + "\n"  # rich pads the last column
        assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80, out
        names = [line.split()[0] for line in out.splitlines() if line[:1].isalpha() and "  " in line]
        assert [r["kv_cache_dtype"] for r in data["rows"]] == names[1:], out  # [0] is the header
        for dtype in ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc"):
            assert re.search(rf"^{dtype} +[\d,]+ +[\d,]+ +[\d.]+ .*warn TQ205$", out, re.M), out
        # a note too long for its column is a footnote below the table, whole
        assert re.search(r"^fp8_ds_mla +- +- +- +- +\[(\d)\]$", out, re.M)
        number = re.search(r"^fp8_ds_mla .*\[(\d)\]$", out, re.M).group(1)
        assert f"[{number}] fp8_ds_mla is a DeepSeek sparse-MLA layout; this model has no MLA\n" in out


def test_the_gpu_catalog_covers_the_gpus_vllm_runs_on_each_figure_with_its_reading():
    import re

    from tqdeploy.plan.gpus import gpu_catalog

    catalog = gpu_catalog()
    listed = {"H200", "H100-SXM", "H100-NVL", "H100-PCIe", "B200", "A100-SXM4-80GB", "A100-SXM4-40GB", "L40S"}
    listed |= {"RTX-4090", "RTX-5090"}
    assert listed <= set(catalog)
    for key, entry in catalog.items():
        total_mib = re.search(r"(\d+) MiB\)", entry["source"]) or re.search(r"\((\d+) MiB\)", entry["source"])
        assert total_mib, key  # the source names the reading the figure comes from
        assert entry["memory_bytes"] == int(total_mib.group(1)) << 20, key
        assert "real device" in entry["source"] or "lent H200" in entry["source"], key


@pytest.mark.parametrize(
    ("gpu", "name", "gib"),
    [
        ("H100-SXM", "NVIDIA H100 80GB HBM3", "79.65"),
        ("h100 sxm", "NVIDIA H100 80GB HBM3", "79.65"),
        ("NVIDIA H100 NVL", "NVIDIA H100 NVL", "93.58"),
        ("A100 80GB", "NVIDIA A100-SXM4-80GB", "80.00"),
        ("L40S", "NVIDIA L40S", "44.99"),
        ("RTX 4090", "NVIDIA GeForce RTX 4090", "23.99"),
        ("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", "40.00"),
        ("a100 sxm4 40gb", "NVIDIA A100-SXM4-40GB", "40.00"),
        ("RTX 5090", "NVIDIA GeForce RTX 5090", "31.84"),
        ("geforce rtx 5090", "NVIDIA GeForce RTX 5090", "31.84"),
        ("H100 PCIe", "NVIDIA H100 PCIe", "79.65"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", "79.65"),
        ("B200", "NVIDIA B200", "179.06"),
    ],
)
def test_plan_by_catalog_name(run_cli, gpu, name, gib):
    code, out, err = run_cli("plan", "--model", LLAMA, "--gpu", gpu, "--max-model-len", "8192")
    assert code in (0, 1), err
    assert f"on 1 x {name}" in " ".join(out.split()) and f"per GPU: {gib} GiB x 0.92" in out


@pytest.mark.parametrize(
    ("gpu", "first_line", "fix"),
    [
        ("H100", "'H100' is more than one GPU: the catalog has H100-SXM (79.6 GiB), H100-NVL (93.6 GiB), "
         "H100-PCIe (79.6 GiB)", "pass --gpu H100-SXM"),
        ("H200 NVL", "'H200 NVL': H200 NVL is not in the catalog", "--snapshot FILE"),  # not the SXM's figure
        ("A100", "'A100' is more than one GPU: the catalog has A100-SXM4-80GB (80.0 GiB), A100-SXM4-40GB (40.0 GiB); "
         "A100 PCIe 40GB is not in the catalog", "pass --gpu A100-SXM4-80GB"),
    ],
)  # fmt: skip
def test_a_gpu_name_the_catalog_cannot_answer_is_refused_with_the_choices(run_cli, gpu, first_line, fix):
    code, out, err = run_cli("plan", "--model", LLAMA, "--gpu", gpu)
    lines = err.splitlines()
    assert code == 2 and out == "" and first_line in lines[0] and fix in lines[1], err
    assert "H200" not in err.replace(gpu, "")  # never an unrelated GPU as the answer


def test_a_plan_with_an_error_recommends_nothing_to_act_on(run_cli, monkeypatch):
    code, out, _ = run_cli("plan", "--model", QWEN36, "--gpu", "H200", "--gpus", "3")
    text = " ".join(out.split())
    assert code == 1 and "recommended:" not in out and "would pick" not in out
    assert "no recommendation: fix the error above (TQ203) first, then run tqdeploy plan again" in text

    code, out, _ = run_cli("plan", "--model", QWEN36, "--gpu", "H200", "--gpus", "3", "--json")
    data = json.loads(out)
    assert code == 1 and "recommended" not in data  # a script reading it must not deploy a plan that cannot start
    assert data["recommendation_reason"] == "fix the error above (TQ203) first, then run tqdeploy plan again"
    assert [p["id"] for p in data["problems"] if p["severity"] == "error"] == ["TQ203"]

    monkeypatch.setenv("FORCE_COLOR", "1")  # the table's recommended row is bold green; with an error, no row is
    monkeypatch.delenv("NO_COLOR")
    code, out, _ = run_cli("plan", "--model", QWEN36, "--gpu", "H200", "--gpus", "3")
    assert code == 1 and "\x1b[1;32m" not in out, out
    code, out, _ = run_cli("plan", "--model", QWEN36, "--gpu", "H200", "--gpus", "1")
    assert "\x1b[1;32m" in out  # the check can fail: a plan without an error marks its pick


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:9", "https://no-such-host.invalid"])
def test_a_hub_model_without_a_network_fails_within_seconds(run_cli, monkeypatch, endpoint):
    import time

    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    for command in (["plan", "--gpu", "H200"], ["doctor", "--offline", "--json"]):
        started = time.monotonic()
        code, _, err = run_cli(*command, "--model", "Qwen/Qwen3-8B@main")
        assert time.monotonic() - started < 15  # huggingface_hub's own retries took about 24 s
        assert code == 2 and "Retrying" not in err, err
        assert f"cannot fetch Qwen/Qwen3-8B@main: {endpoint} is unreachable" in err.splitlines()[0]
