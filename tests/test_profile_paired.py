"""The interleaved comparison of two servers' tokens/s (tqdeploy.profile.paired, scripts/gpu/tools/paired_load.py):
the order alternates, the interval and both readings (verdict, margin) follow the per-step ratios, the order and
the run as factors take their effects out of the noise, and real runs against two loopback servers streaming at
different paces find the faster one, with the key sent to both, the steps bounded, each round's partial result
handed on and the whole stopped after an even number of rounds when more would not fit in --max-seconds."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from support.loopback_http import METRICS, MODELS, Reply, fixed, serving
from tqdeploy.errors import TQError
from tqdeploy.profile import paired
from tqdeploy.profile.load import load_spec

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "tools" / "paired_load.py"
EVENT = f"data: {json.dumps({'choices': [{'text': 'a', 'token_ids': [5]}]})}\n\n".encode()
DONE = b"data: [DONE]\n\n"


def _vllm(pace_s: float, tokens: int = 4) -> dict:
    stream = lambda _h: Reply(200, chunks=[(pace_s, EVENT)] * tokens + [(0.0, DONE)])  # noqa: E731
    return {"/metrics": fixed(200, METRICS), "/v1/models": fixed(200, MODELS), "/v1/completions": stream}


def test_each_side_goes_first_equally_often_at_every_concurrency():
    firsts = {step: [paired.order(r, step)[0] for r in range(4)] for step in range(3)}
    assert all(sorted(f) == [0, 0, 1, 1] for f in firsts.values()), firsts
    assert [paired.order(0, s)[0] for s in range(3)] == [0, 1, 0]


def test_interval_and_verdict_examples():
    geo, low, high = paired.interval([1.0, 1.0, 1.0])
    assert (geo, low, high) == (1.0, 1.0, 1.0) and paired.verdict(low, high, 0.02) == "within"
    geo, low, high = paired.interval([1.30, 0.95, 0.80])  # lease 5's c=8 pairs as whole loads: far too wide
    assert low < 0.98 and high > 1.02 and paired.verdict(low, high, 0.02) == "unresolved"
    geo, low, high = paired.interval([0.90, 0.91, 0.89, 0.90])
    assert math.isclose(geo, 0.9, rel_tol=0.01) and paired.verdict(low, high, 0.02) == "outside"
    # t with 3 degrees of freedom: mean of logs +- 3.182 x sd / 2
    logs = [math.log(r) for r in (1.01, 0.99, 1.00, 1.02)]
    mean, sd = sum(logs) / 4, (sum((x - sum(logs) / 4) ** 2 for x in logs) / 3) ** 0.5
    _, low, high = paired.interval([1.01, 0.99, 1.00, 1.02])
    assert math.isclose(low, math.exp(mean - 3.182 * sd / 2)) and math.isclose(high, math.exp(mean + 3.182 * sd / 2))
    _, low, high = paired.interval([1.1])  # one step: no interval
    assert (low, high) == (0.0, math.inf) and paired.verdict(low, high, 0.02) == "unresolved"


def test_the_summary_shows_each_order_apart():
    steps = [
        {"concurrency": 4, "first": "tq", "ratio": 0.8},
        {"concurrency": 4, "first": "plain", "ratio": 1.25},
        {"concurrency": 4, "first": "tq", "ratio": 0.8},
        {"concurrency": 4, "first": "plain", "ratio": 1.25},
    ]
    summary = paired.summarize(steps, 0.02, "tq")["4"]
    assert summary["by_order"] == {"a_first": 0.8, "b_first": 1.25}  # going second is worth 1.25x on each side
    assert summary["geomean"] == 1.0 and summary["verdict"] == "unresolved"  # balanced: the effect cancels


def test_t_975_matches_the_printed_table_and_falls_towards_the_normal():
    printed = {1: 12.706, 2: 4.303, 10: 2.228, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}
    for df, t in printed.items():
        assert abs(paired.t_975(df) - t) <= 1e-3, (df, paired.t_975(df))
    ts = [paired.t_975(df) for df in range(1, 2001)]
    assert all(a > b for a, b in zip(ts, ts[1:], strict=False)), "not strictly decreasing"  # 30 -> 31 included
    assert ts[-1] > 1.959964 and paired.t_975(10**6) - 1.959964 < 1e-5


def test_cell_interval_worked_by_hand():
    cells = [[1.1, 1.2], [0.9, 1.0, 0.95]]
    logs = [[math.log(r) for r in c] for c in cells]
    means = [sum(c) / len(c) for c in logs]
    mean = (means[0] + means[1]) / 2  # each cell counts once, whatever its size
    df = 5 - 2  # steps - cells
    pooled = sum((x - m) ** 2 for c, m in zip(logs, means, strict=True) for x in c) / df
    half = 3.182 * math.sqrt(pooled * (1 / 2 + 1 / 3)) / 2  # t(3) x the sd of the mean of the two cell means
    geo, low, high, got_df = paired.cell_interval(cells)
    assert got_df == 3 and math.isclose(geo, math.exp(mean))
    assert math.isclose(low, math.exp(mean - half)) and math.isclose(high, math.exp(mean + half))
    # the cells' gap (1.149 vs 0.949) is not noise: the interval is much tighter than the same ratios as one cell
    _, one_low, one_high, _ = paired.cell_interval([cells[0] + cells[1]])
    assert math.log(one_high / one_low) > 1.5 * math.log(high / low) > 0


def test_cell_interval_of_one_cell_is_the_plain_interval_and_none_below_one_df():
    ratios = [1.01, 0.99, 1.00, 1.02, 0.97]
    geo, low, high, df = paired.cell_interval([ratios])
    plain = paired.interval(ratios)
    assert df == 4 and all(math.isclose(x, y) for x, y in zip((geo, low, high), plain, strict=True)), (geo, plain)
    geo, low, high, df = paired.cell_interval([[1.1], [0.9]])  # a step per cell: no spread within any
    assert (low, high, df) == (0.0, math.inf, 0) and math.isclose(geo, math.sqrt(1.1 * 0.9))
    assert paired.cell_interval([[1.2, 1.3], []]) == paired.cell_interval([[1.2, 1.3]])  # an empty cell adds nothing


def test_margin_examples():
    assert paired.margin(0.99, 1.05, 0.02) == "not slower"
    assert paired.verdict(0.99, 1.05, 0.02) == "unresolved"  # faster by maybe 5%: not within, but not slower
    assert paired.margin(0.98, 1.00, 0.02) == "not slower"  # the low end on the margin counts
    assert paired.margin(0.90, 0.97, 0.02) == "slower"
    assert paired.margin(0.95, 1.01, 0.02) == "unresolved"
    assert paired.margin(0.97, 0.98, 0.02) == "unresolved"  # the high end on the margin: not shown slower
    assert paired.margin(0.0, math.inf, 0.02) == "unresolved"  # no interval


def test_adjusted_takes_the_order_effect_out_of_the_noise():
    # going second worth ~1.25x on each side (the CPU demo's order effect), the steps themselves steady
    ratios = {"tq": (0.79, 0.81, 0.80), "plain": (1.24, 1.26, 1.25)}
    steps = [{"concurrency": 4, "first": first, "ratio": ratios[first][k]} for k in range(3) for first in ratios]
    summary = paired.summarize(steps, 0.02, "tq")["4"]
    low, high = summary["ci95"]
    assert low < 0.9 and high > 1.1 and summary["verdict"] == "unresolved" and summary["margin"] == "unresolved"
    adjusted = summary["adjusted"]
    assert (adjusted["cells"], adjusted["df"]) == (2, 4) and adjusted["geomean"] == 1.0
    low, high = adjusted["ci95"]
    assert 0.98 < low < 1.0 < high < 1.02, adjusted["ci95"]  # non-zero spread within the cells, and small
    assert adjusted["verdict"] == "within" and adjusted["margin"] == "not slower"
    geo, low, high, _ = paired.cell_interval([list(ratios["tq"]), list(ratios["plain"])])
    assert adjusted["ci95"] == [round(low, 4), round(high, 4)] and adjusted["geomean"] == round(geo, 4)


def _ab(ratios: list[float], a: str = "tq", b: str = "plain", tolerance: float = 0.02) -> dict:
    steps = [{"concurrency": 8, "first": a if k % 2 == 0 else b, "ratio": r} for k, r in enumerate(ratios)]
    return {"a": a, "b": b, "tolerance": tolerance, "steps": steps}


def test_pool_holds_the_run_as_a_factor_beside_the_order():
    # two runs (two pairs of starts) a level apart: 5% and -5%, each steady within itself
    runs = [_ab([1.05, 1.06, 1.04, 1.05]), _ab([0.95, 0.96, 0.94, 0.95])]
    pooled = paired.pool(runs)
    c = pooled["by_concurrency"]["8"]
    assert pooled["runs"] == 2 and (pooled["a"], pooled["b"], pooled["tolerance"]) == ("tq", "plain", 0.02)
    assert c["ratios"] == [1.05, 1.06, 1.04, 1.05, 0.95, 0.96, 0.94, 0.95]  # every run's steps
    assert (c["adjusted"]["cells"], c["adjusted"]["df"]) == (4, 8 - 4)  # 2 runs x 2 orders
    assert paired.pool(runs[:1])["by_concurrency"]["8"]["adjusted"]["cells"] == 2  # one run: the order alone
    raw_width = c["ci95"][1] / c["ci95"][0]
    adjusted_width = c["adjusted"]["ci95"][1] / c["adjusted"]["ci95"][0]
    assert adjusted_width < raw_width, (c["ci95"], c["adjusted"]["ci95"])  # the runs' gap left the noise
    assert runs[0]["steps"][0].get("run") is None  # the callers' steps are not marked in place


@pytest.mark.parametrize(
    ("runs", "named"),
    [
        ([], "no interleaved runs"),
        ([_ab([1.0, 1.0]), _ab([1.0, 1.0], a="other")], "different servers or tolerances"),
        ([_ab([1.0, 1.0]), _ab([1.0, 1.0], tolerance=0.05)], "different servers or tolerances"),
    ],
    ids=["none", "other labels", "other tolerance"],
)
def test_pool_refuses_no_runs_and_runs_of_other_comparisons(runs, named):
    with pytest.raises(TQError, match=named):
        paired.pool(runs)


def _served(run: dict, tq: str | None, plain: str | None) -> dict:
    return run | {"models": {k: v for k, v in (("tq", tq), ("plain", plain)) if v}}


def test_pool_refuses_runs_of_two_checkpoints_and_takes_runs_that_named_none():
    dense8 = _served(_ab([1.0, 1.01]), "dense8w", "/tmp/tq-startup/build/models/dense8w")
    dense32 = _served(_ab([1.0, 1.01]), "dense32w", "/tmp/tq-startup/build/models/dense32w/")
    with pytest.raises(TQError, match=r"the runs' tq servers served different checkpoints \(dense32w, dense8w\)"):
        paired.pool([dense8, dense32])
    assert paired.pool([dense8, _ab([0.99, 1.0])])["runs"] == 2  # a run from before `models` was recorded
    assert [paired.checkpoint(dense32, side) for side in ("tq", "plain", "other")] == ["dense32w", "dense32w", None]


def test_compare_hands_on_each_round_and_stops_when_two_more_would_not_fit(monkeypatch):
    spec = load_spec("1", 4, 4, 4096, 0.1, 1.0, 0.0)
    with serving(_vllm(0.005)) as fast, serving(_vllm(0.02)) as slow:
        a = paired.side("fast", fast.base_url, None, spec)
        b = paired.side("slow", slow.base_url, None, spec)
        partials: list[dict] = []
        result = paired.compare(a, b, spec, 4, on_round=partials.append)
        assert [p["rounds"] for p in partials] == [1, 2, 3] and not any(p["complete"] for p in partials)
        assert [len(p["steps"]) for p in partials] == [1, 2, 3]  # each a copy, not the list still growing
        assert partials[-1]["steps"] == result["steps"][:3] and partials[0]["by_concurrency"]["1"]["ratios"]
        assert (result["rounds"], result["rounds_asked"], result["complete"], len(result["steps"])) == (4, 4, True, 4)

        # a clock read at the start and after each even round: 100 s by round 2 (two more fit in 250 s: 200),
        # 200 s by round 4 (two more would end at 300)
        readings = iter([0.0, 100.0, 200.0])
        monkeypatch.setattr(paired, "time", types.SimpleNamespace(monotonic=lambda: next(readings)))
        result = paired.compare(a, b, spec, 8, max_seconds=250)
    assert (result["rounds"], result["rounds_asked"], result["complete"]) == (4, 8, True)
    assert len(result["steps"]) == 4 and {s["round"] for s in result["steps"]} == {0, 1, 2, 3}
    assert [s["first"] for s in result["steps"]] == ["fast", "slow", "fast", "slow"]  # balanced where it stopped


def _run(a_url: str, b_url: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(SCRIPT), a_url, b_url, "--out", str(out), "--labels", "fast,slow"]
    cmd += ["--concurrency", "1,2", "--duration", "0.6", "--warmup", "0.1", "--rounds", "2", "--prompt-tokens", "4"]
    cmd += ["--output-tokens", "4", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_a_real_interleaved_run_finds_the_faster_server(tmp_path):
    key = tmp_path / "key"
    key.write_text("sk-paired-test-0123456789\n")
    with serving(_vllm(0.005)) as fast, serving(_vllm(0.05)) as slow:
        proc = _run(fast.base_url, slow.base_url, tmp_path / "ab.json", "--api-key-file", str(key))
        seen = [s for srv in (fast, slow) for s in srv.seen if s.path == "/v1/completions"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "ab.json").read_text())
    assert len(data["steps"]) == 2 * 2 and [s["first"] for s in data["steps"]] == ["fast", "slow", "slow", "fast"]
    for conc in ("1", "2"):
        summary = data["by_concurrency"][conc]
        assert len(summary["ratios"]) == 2 and summary["geomean"] > 2, summary  # ~10x faster per token
    assert all(s["fast"]["seconds"] < 5 and s["slow"]["seconds"] < 5 for s in data["steps"])  # bounded by --duration
    assert seen and all(s.headers.get("Authorization") == "Bearer sk-paired-test-0123456789" for s in seen)
    assert "sk-paired" not in proc.stdout + proc.stderr + (tmp_path / "ab.json").read_text()
    assert "concurrency 1: fast/slow" in proc.stdout
    assert data["models"] == {"fast": "tiny", "slow": "tiny"}  # what each served: runs of one checkpoint pool


def test_a_real_run_stops_balanced_inside_max_seconds_and_records_who_started_first(tmp_path):
    out = tmp_path / "ab.json"
    with serving(_vllm(0.005)) as fast, serving(_vllm(0.02)) as slow:
        cmd = [sys.executable, str(SCRIPT), fast.base_url, slow.base_url, "--out", str(out), "--labels", "fast,slow"]
        cmd += ["--concurrency", "1", "--duration", "0.25", "--warmup", "0", "--rounds", "6", "--prompt-tokens", "4"]
        cmd += ["--output-tokens", "4", "--started-first", "slow", "--max-seconds", "1.5"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    # two rounds take ~1 s (2 sides x 0.25 s each): two more would end past 1.5 s
    assert data["rounds"] in (2, 4) and data["rounds_asked"] == 6 and data["complete"] is True, data["rounds"]
    assert len(data["steps"]) == data["rounds"] and {s["round"] for s in data["steps"]} == set(range(data["rounds"]))
    assert data["started_first"] == "slow" and not (tmp_path / "ab.json.part").exists()
    line = re.fullmatch(
        r"concurrency 1: fast/slow (\S+) \(95% (\S+)\.\.(\S+): (\w+), ([\w ]+)\) over (\d+) interleaved steps; "
        r"order as a factor (\S+) \((?:95% \S+|no interval): (\w+), ([\w ]+)\) \(\+-2%\)",
        proc.stdout.strip(),
    )
    assert line, proc.stdout
    c = data["by_concurrency"]["1"]
    # the line shows the file's figures as printed (.3f): compared as text, since 3.6225 shows as 3.623, 5e-4 off
    assert line[1] == f"{c['geomean']:.3f}" and float(line[1]) > 2
    assert (line[2], line[3]) == tuple(f"{v:.3f}" for v in c["ci95"])
    assert (line[4], line[5], int(line[6])) == (c["verdict"], c["margin"], data["rounds"])
    assert (line[8], line[9]) == (c["adjusted"]["verdict"], c["adjusted"]["margin"])
    assert line[5] == "not slower"  # ~4x faster per token


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (("--rounds", "0"), "--rounds 0"),
        (("--rounds", "3"), "--rounds 3 is odd"),
        (("--labels", "a,a"), "--labels"),
        (("--tolerance", "2"), "--tolerance 2"),
        (("--started-first", "tqdeploy"), "--started-first 'tqdeploy' is not one of --labels"),
        (("--max-seconds", "0"), "--max-seconds 0.0 is outside"),
        (("--max-seconds", "nan"), "--max-seconds nan is outside"),
    ],
)
def test_bad_input_is_one_line_naming_it(tmp_path, extra, named):
    with serving(_vllm(0.0)) as srv:
        proc = _run(srv.base_url, srv.base_url, tmp_path / "ab.json", *extra)
    assert proc.returncode == 2 and named in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_server_elsewhere_than_loopback_is_refused(tmp_path):
    proc = _run("http://192.0.2.1:8000", "http://127.0.0.1:1", tmp_path / "ab.json")
    assert proc.returncode == 2 and "not a loopback address" in proc.stderr, proc.stderr


def test_no_interval_is_made_from_nothing():
    with pytest.raises(ValueError, match="0 degrees of freedom"):
        paired.t_975(0)
    with pytest.raises(ValueError, match="no ratios"):
        paired.cell_interval([[], []])
