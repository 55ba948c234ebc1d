"""`make bench BENCH=startup`'s H200 rows, read from the committed records of the lent H200 (no GPU here): the
start-up pairs and the interleaved tokens/s runs of every lease, pooled with the run and the order as factors."""

from __future__ import annotations

import json
import math
import statistics

from bench import startup


def test_the_interleaved_h200_runs_give_one_row_per_checkpoint_and_concurrency_from_every_lease():
    files = sorted(startup.H200_STARTUP.glob(startup.H200_AB))
    assert {f.name for f in files} >= {"ab-lease6-1.json", "ab-lease7-1.json", "ab-lease9-1.json"}
    assert not any(f.name.endswith("-cpu.json") for f in files)  # the CPU accounting beside a run is no run
    by_checkpoint: dict[str, list[dict]] = {}
    for f in files:  # runs before lease 9 named no checkpoint: they all served dense8w
        run = json.loads(f.read_text())
        by_checkpoint.setdefault((run.get("models") or {}).get("plain", "dense8w"), []).append(run)
    assert sorted(by_checkpoint) == ["dense32w", "dense8w"]
    rows = startup.h200_tok_rows()
    assert [(r.name.split(", ")[1], r.name.split("tokens/s ")[1].split(",")[0]) for r in rows] == [
        (name, f"c={conc}") for name in ("dense32w", "dense8w") for conc in (1, 8, 64)
    ]
    for n, (name, runs) in enumerate(sorted(by_checkpoint.items())):
        for row, conc in zip(rows[3 * n : 3 * n + 3], (1, 8, 64), strict=True):
            steps = [s for r in runs for s in r["steps"] if s["concurrency"] == conc and s["ratio"]]
            assert f"{len(runs)} interleaved runs" in row.name and f"over {len(steps)} steps" in row.name
            assert row.ours == statistics.median(s["tqdeploy"]["output_tokens_per_s"] for s in steps)
            assert row.theirs == statistics.median(s["plain"]["output_tokens_per_s"] for s in steps)
            # the pooled per-step ratio: the geometric mean of each (run, first) cell's geometric mean
            cells: dict = {}
            for i, r in enumerate(runs):
                for s in r["steps"]:
                    if s["concurrency"] == conc and s["ratio"]:
                        cells.setdefault((i, s["first"]), []).append(math.log(s["ratio"]))
            geo = math.exp(statistics.fmean(statistics.fmean(c) for c in cells.values()))
            assert f"per-step ratio {geo:.3f}" in row.name, (name, row.name)
            assert "+-2%: " in row.name and "-2% margin: " in row.name
    # both start orders in each series: lease 7 started plain's server first, lease 6 tqdeploy's; lease 9 both
    assert all("plain/tqdeploy started first" in r.name for r in rows)


def test_the_recorded_start_up_pairs_stay_in_the_bench():
    rows = startup.h200_rows()
    assert rows and rows[0].name.startswith("H200 recorded") and rows[0].ours < rows[0].theirs  # faster than plain


def test_runs_of_another_checkpoint_get_rows_of_their_own(tmp_path, monkeypatch):
    """A run recorded with DENSE_LAYERS=32 is a different comparison: never pooled with dense8w's runs."""
    for src in sorted(startup.H200_STARTUP.glob(startup.H200_AB))[:2]:
        (tmp_path / src.name).write_text(src.read_text())  # dense8w's, from before runs named their checkpoint
    steps = [
        {"round": r, "concurrency": c, "first": "tqdeploy" if (r + i) % 2 == 0 else "plain", "ratio": 1.0,
         "tqdeploy": {"output_tokens_per_s": 100.0 * c}, "plain": {"output_tokens_per_s": 100.0 * c}}
        for r in range(4) for i, c in enumerate((1, 8, 64))
    ]  # fmt: skip
    dense32 = {"a": "tqdeploy", "b": "plain", "tolerance": 0.02, "steps": steps, "started_first": "plain",
               "models": {"tqdeploy": "dense32w", "plain": "/tmp/tq-startup/build/models/dense32w"}}  # fmt: skip
    (tmp_path / "ab-lease9-1.json").write_text(json.dumps(dense32))
    monkeypatch.setattr(startup, "H200_STARTUP", tmp_path)
    rows = startup.h200_tok_rows()
    assert [r.name.split(", ")[1] for r in rows] == ["dense32w"] * 3 + ["dense8w"] * 3
    assert [r.ours for r in rows[:3]] == [100.0, 800.0, 6400.0] and "over 4 steps" in rows[0].name
    assert "per-step ratio 1.000" in rows[0].name and "1 interleaved runs (plain started first)" in rows[0].name
    assert "2 interleaved runs (tqdeploy started first)" in rows[3].name
