"""tqdeploy tune's pure parts on recorded results: goodput at a target, the recommendation (best goodput within
the quality floor; none fits and what binds), the sweep, the candidates, the store's fingerprint, the 80-column
table and --apply's spec edit. Each rule has a passing and a failing example."""

from __future__ import annotations

import io
import json

import pytest

from tqdeploy.errors import TQError
from tqdeploy.tune.apply import set_kv_cache_dtype
from tqdeploy.tune.candidates import candidates, cpu_fp8_ok, parse_dtypes
from tqdeploy.tune.goodput import Targets, goodput
from tqdeploy.tune.report import TuneResult
from tqdeploy.tune.verdict import Row, recommended, verdict
from tqdeploy.tune.workload import Workload, estimate_s, parse_sweep, steps_for


def step(c: int, tps: float, ttft: float, itl: float, errors: int = 0) -> dict:
    return {
        "concurrency": c,
        "requests": 8,
        "completed": 8 - errors,
        "errors": errors,
        "ttft_p99_s": ttft,
        "itl_p99_s": itl,
        "output_tokens_per_s": tps,
    }


def result(dtype: str, steps: list[dict], ratio: float = 1.0, floor: float = 1.06, status: str = "pass", holds=40):
    return {
        "dtype": dtype,
        "start_s": 60.0,
        "kv": {"real_tokens": holds * 512, "holds": holds, "context": 512, "findings": []},
        "steps": steps,
        "quality": {"status": status, "ratio": ratio, "floor": floor, "findings": []},
    }


def test_goodput_is_the_best_step_within_the_targets():
    steps = [step(1, 50.0, 0.2, 0.02), step(8, 300.0, 0.9, 0.05), step(32, 500.0, 3.0, 0.2)]
    g = goodput(steps, Targets(ttft_p99_s=1.0, itl_p99_s=0.1))
    assert g["tokens_per_s"] == 300.0 and g["concurrency"] == 8
    assert g["above"] == "TTFT p99 3 s > 1 s at concurrency 32"
    assert goodput(steps, Targets())["tokens_per_s"] == 500.0  # no target: throughput


def test_goodput_none_names_what_binds_at_the_lowest_step():
    steps = [step(1, 50.0, 0.2, 0.3), step(8, 300.0, 0.9, 0.5)]
    g = goodput(steps, Targets(itl_p99_s=0.1))
    assert g["tokens_per_s"] is None and g["binds"] == "ITL p99 0.3 s > 0.1 s at concurrency 1"
    failed = goodput([step(1, 50.0, 0.1, 0.01, errors=2)], Targets())
    assert failed["tokens_per_s"] is None and "2 failed requests" in failed["binds"]
    junk = goodput([{"concurrency": 1, "completed": "8", "output_tokens_per_s": float("nan")}], Targets())
    assert junk["tokens_per_s"] is None  # a stored figure of the wrong type is no figure


def test_recommends_the_best_goodput_whose_quality_stays_within_its_floor():
    rows = [
        Row("auto", result=result("auto", [step(8, 300.0, 0.5, 0.05)], holds=10)),
        Row("fp8", result=result("fp8", [step(8, 320.0, 0.5, 0.05)], ratio=1.02, holds=20)),
        # the fastest, but its answers are outside its floor: not recommended, and TQ493 says why
        Row(
            "turboquant_3bit_nc",
            result=result("turboquant_3bit_nc", [step(8, 400.0, 0.5, 0.05)], ratio=1.4, floor=1.25),
        ),
        Row("turboquant_k8v4", excluded="TQ348: CPU build"),
    ]
    findings = verdict(rows, Targets(ttft_p99_s=1.0), 512)
    assert recommended(findings) == "fp8"
    ids = {f.id: f for f in findings}
    assert ids["TQ492"].severity.value == "ok" and "320.0 tok/s" in ids["TQ492"].title
    assert "turboquant_3bit_nc" in ids["TQ493"].title and "above its floor 1.25x" in ids["TQ493"].title
    assert ids["TQ490"].severity.value == "info" and "turboquant_k8v4" in ids["TQ490"].title
    others = ids["TQ492"].evidence["others"]
    assert others["auto"] == "300.0 tok/s" and "perplexity 1.400x" in others["turboquant_3bit_nc"]


def test_a_tie_in_goodput_goes_to_the_larger_capacity():
    rows = [
        Row("auto", result=result("auto", [step(4, 100.0, 0.1, 0.01)], holds=10)),
        Row("fp8", result=result("fp8", [step(4, 100.0, 0.1, 0.01)], holds=20)),
    ]
    assert recommended(verdict(rows, Targets(), 512)) == "fp8"


def test_none_of_them_says_what_binds_each():
    rows = [
        Row("auto", result=result("auto", [step(1, 50.0, 2.5, 0.05)])),
        Row("fp8", result=result("fp8", [step(1, 60.0, 0.5, 0.05)], status="fail")),
        Row("turboquant_4bit_nc", failed="did not start: TQ421: out of memory"),
    ]
    findings = verdict(rows, Targets(ttft_p99_s=1.0), 512)
    choice = next(f for f in findings if f.id == "TQ492")
    assert recommended(findings) is None and choice.severity.value == "warn"
    assert choice.title.startswith("none of them: ")
    assert choice.evidence["binds"]["auto"] == "TTFT p99 2.5 s > 1 s at concurrency 1"
    assert choice.evidence["binds"]["fp8"] == "answers failed the check"
    assert "did not start" in choice.evidence["binds"]["turboquant_4bit_nc"]
    assert any(f.id == "TQ491" for f in findings)


def test_a_cache_that_holds_no_sequence_of_the_context_is_not_recommended():
    rows = [Row("auto", result=result("auto", [step(1, 50.0, 0.1, 0.01)], holds=0))]
    choice = next(f for f in verdict(rows, Targets(), 32768) if f.id == "TQ492")
    assert choice.evidence["binds"]["auto"] == "its KV cache does not hold one sequence of the context"


def test_the_sweep_never_goes_above_what_the_cache_holds():
    w = Workload(64, 32, parse_sweep("1,8,max"), 16, 30.0, 4096, 64)
    assert steps_for(w, 3528) == [1, 8, 64]  # max: at most --max-concurrency
    assert steps_for(w, 5) == [1, 5]  # 8 and max clipped to the 5 sequences the cache holds
    assert steps_for(w, None) == [1, 8, 64]
    assert estimate_s(2, w, 100.0, 60.0) == 2 * (100 + 3 * 30 + 60 + 15)
    for bad in ("", "0", "1,x", ",".join(["1"] * 17)):
        with pytest.raises(TQError, match="--concurrency"):
            parse_sweep(bad)


def test_candidates_exclude_with_a_reason():
    avx = "flags\t\t: fpu sse avx2 avx512f\n"
    plain = "flags\t\t: fpu sse avx2\n"
    assert cpu_fp8_ok(avx) and not cpu_fp8_ok(plain)
    cpu = {c.dtype: c.excluded for c in candidates("cpu", "0.32.0", None, None, avx)}
    assert list(cpu)[:2] == ["auto", "fp8"] and cpu["auto"] is None and cpu["fp8"] is None
    assert all(cpu[d] and cpu[d].startswith("TQ348") for d in cpu if d.startswith("turboquant_"))
    no_fp8 = {c.dtype: c.excluded for c in candidates("cpu", "0.32.0", None, ["fp8", "auto"], plain)}
    assert list(no_fp8) == ["auto", "fp8"] and "AVX-512" in no_fp8["fp8"]
    gpu = {c.dtype: c.excluded for c in candidates("gpu", "0.32.0", None, None, plain)}
    assert all(v is None for v in gpu.values()) and "turboquant_4bit_nc" in gpu
    old = {c.dtype: c.excluded for c in candidates("gpu", "0.19.0", None, ["turboquant_4bit_nc"], plain)}
    assert old["turboquant_4bit_nc"] is None  # without model facts compat's rules are not run; up reports
    with pytest.raises(TQError, match="--dtypes turbo is not a KV-cache dtype"):
        parse_dtypes("auto,turbo")
    assert parse_dtypes("fp8,auto,fp8") == ["fp8", "auto"]


SPEC = """# my spec
schema = 1
name = "x"

[vllm]
version = "0.32.0"  # pinned
kv_cache_dtype = "auto"  # chosen by hand
max_model_len = 512

[server]
port = 8000
"""


def test_apply_edits_one_line_and_proves_it():
    out = set_kv_cache_dtype(SPEC, "fp8")
    assert out == SPEC.replace('kv_cache_dtype = "auto"  # chosen', 'kv_cache_dtype = "fp8"  # chosen')
    added = set_kv_cache_dtype(SPEC.replace('kv_cache_dtype = "auto"  # chosen by hand\n', ""), "fp8")
    assert '[vllm]\nkv_cache_dtype = "fp8"  # tqdeploy tune --apply\nversion' in added
    # a form the line edit cannot prove (a dotted key at the top): refused, never half-edited
    dotted = SPEC.replace('kv_cache_dtype = "auto"  # chosen by hand\n', "").replace(
        'name = "x"', 'name = "x"\nvllm.kv_cache_dtype = "auto"'
    )
    with pytest.raises(TQError, match="cannot edit exactly"):
        set_kv_cache_dtype(dotted.replace("[vllm]\n", "[vllm2]\n"), "fp8")


def test_the_table_fits_80_columns_with_every_dtype_whole():
    from tqdeploy.output import make_console

    rows = [
        Row("auto", result=result("auto", [step(64, 12345.6, 1.234, 0.0456)], holds=3528)),
        Row("turboquant_k3v4_nc", result=result("turboquant_k3v4_nc", [step(64, 9.1, 0.5, 0.05)], ratio=1.1234)),
        Row("turboquant_3bit_nc", excluded="TQ348"),
        Row("fp8_e4m3", failed="out of memory"),
    ]
    for r in rows:
        r.reused = r.dtype == "auto"
    res = TuneResult("build", Workload(64, 32, (1, 8, "max"), 16, 30.0, 512, 64).to_dict(), Targets(2.0), "0" * 64)
    res.findings = verdict(rows, res.targets, 512)
    res.rows = rows
    console = make_console()
    console.file = io.StringIO()
    console.width = 80
    console.print(__import__("tqdeploy.tune.report", fromlist=["table"]).table(rows, 512))
    lines = console.file.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80, lines
    for r in rows:
        assert any(line.lstrip().startswith(r.dtype) for line in lines), (r.dtype, lines)
    assert any(line.split()[1:3] == ["*", "1.81M"] and "1234" in line and " 46 " in line for line in lines)
    doc = json.loads(json.dumps(res.to_dict()))
    assert doc["schema"] == "tqdeploy.tune/1" and doc["recommended"] == "auto"
    assert [c["status"] for c in doc["candidates"]] == ["reused", "measured", "excluded", "failed"]


def test_the_store_reuses_only_a_result_of_the_same_fingerprint(tmp_path):
    from tqdeploy.tune import store

    build = tmp_path / "build"
    build.mkdir()
    fp = {"model_files": "ab" * 32, "vllm": {"version": "0.32.0"}, "host": {"cpu": "x"}, "workload": {"n": 1}}
    res = result("fp8", [step(1, 5.0, 0.1, 0.01)])
    path = store.save(build, "fp8", fp, res)
    assert store.load(build, "fp8", fp) == (res, "")
    assert store.load(build, "fp8", fp | {"workload": {"n": 2}}) == (None, "measured on another workload")
    assert store.load(build, "auto", fp) == (None, "not measured yet")
    doc = json.loads(path.read_text())
    doc["result"]["steps"] = "not a list"  # a file that is not what tune wrote is measured again, never trusted
    path.write_text(json.dumps(doc))
    assert store.load(build, "fp8", fp) == (None, "fp8.json is not a result tune wrote")
    path.write_text("[" * 100_000)
    assert store.load(build, "fp8", fp)[0] is None


def test_apply_rebuilds_through_the_lock_and_refuses_a_spec_the_user_changed(tmp_path):
    import tomllib

    from support.up_builds import make_build, tq
    from tqdeploy.tune.apply import apply

    build, _ = make_build(tmp_path)
    spec = build / "tqdeploy.toml"
    original = spec.read_text()
    spec.write_text(original + "# mine\n")
    with pytest.raises(TQError, match="not what tqdeploy wrote") as err:
        apply(build, "fp8")
    assert "--apply does not replace a file you changed" in err.value.message
    assert spec.read_text() == original + "# mine\n"
    spec.write_text(original)
    done = apply(build, "fp8")
    assert done["previous"] in (None, "auto") and "tqdeploy.toml" in done["changed"]
    assert tomllib.loads(spec.read_text())["vllm"]["kv_cache_dtype"] == "fp8"
    assert spec.read_text().replace('kv_cache_dtype = "fp8"  # tqdeploy tune --apply\n', "") == original
    applied = build / ".tqdeploy" / "tune" / "applied.toml"  # the spec the rebuild rendered: the lock matches it
    rc, _, output = tq("build", str(applied), "--check", str(build), "--json", timeout=120)
    assert rc == 0, output[-2000:]
    assert apply(build, "fp8")["changed"] == []  # already so: nothing rewritten


def test_tune_refuses_a_build_that_is_running(tmp_path):
    """A process carrying the build's marker (what every process `up` starts carries) makes tune refuse: each copy
    would take the same memory share beside it."""
    import os
    import subprocess
    import sys

    from support.up_builds import make_build
    from tqdeploy.runtime.state import MARKER_ENV, deployment_marker
    from tqdeploy.tune.run import refuse_running

    build, _ = make_build(tmp_path)
    refuse_running(build)  # nothing runs: passes
    env = dict(os.environ) | {MARKER_ENV: deployment_marker(build)}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True)
    try:
        with pytest.raises(TQError, match="is running") as err:
            refuse_running(build)
        assert "tqdeploy down" in err.value.remediation
    finally:
        proc.kill()
        proc.wait()


def test_bad_input_is_one_line_and_exit_2_before_anything_starts(tmp_path):
    from support.up_builds import make_build, tq

    build, _ = make_build(tmp_path)
    cases = [
        (("tune", str(tmp_path / "nope")), "build directory"),
        (("tune", str(build), "--dtypes", "auto,turbo"), "--dtypes turbo is not a KV-cache dtype"),
        (("tune", str(build), "--concurrency", "0,max"), "--concurrency"),
        (("tune", str(build), "--context", "99999"), "exceeds the build's max_model_len 512"),
        (("tune", str(build), "--prompt-tokens", "500", "--output-tokens", "100"), "exceed the context 512"),
        (("tune", str(build), "--ttft-p99", "nan"), "--ttft-p99"),
    ]
    for args, message in cases:
        rc, _, output = tq(*args, timeout=60)
        assert rc == 2 and message in output and "Traceback" not in output, (args, output[-1500:])
    assert not (build / ".tqdeploy" / "tune").exists()  # refused before any copy was made


def test_a_link_planted_for_the_up_log_is_not_followed(tmp_path):
    from tqdeploy.tune import variant

    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    log = tmp_path / "up.log"
    log.symlink_to(outside)
    with pytest.raises(TQError, match="cannot write"):
        variant.start(tmp_path, tmp_path / "copy", log)
    assert outside.read_text() == "keep"
