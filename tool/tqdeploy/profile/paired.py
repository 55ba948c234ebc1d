"""Tokens/s of two servers under one load, interleaved: short steps at each concurrency, the two servers taking
turns (A B, then B A), so that drift of the host falls on both alike. On the lent H200 one server's own 15 s steps,
run twice a minute apart, differed by up to 34% (docs/startup.md), so back-to-back whole loads cannot show a 2%
difference; the ratio of two steps run seconds apart can. The verdict rests on the geometric mean of those
per-step ratios and its 95% interval (Student's t over the log ratios). The rounds are even, so each side goes
first equally often at every concurrency: on the CPU demo the side that went second was 1.2-1.9x faster at
concurrency 4 in each of 3 rounds (an order effect that balance cancels); the summary gives both orders' means
apart to show it.

Two readings of each interval: `verdict` (equivalence: the whole interval inside 1 +- tolerance) and `margin`
(non-inferiority: A no slower than B by more than the tolerance, the interval's low end at or above 1 - tolerance;
issue 18's goal, since a start-up lever must not cost tokens/s). `adjusted` is the interval with the order as a
factor (the crossover analysis): the ratios grouped in cells of (run, which side went first), the estimate the
geometric mean of the cells' geometric means, its spread the pooled within-cell variance. The order effect is
then no longer part of the noise (on the H200 the side that went second was 13-19% faster at concurrency 8)."""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.net import Client
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.profile.load import LoadSpec, check_loopback, run_step, warm_up
from tqdeploy.profile.server import load_model, make_client

# Student's t, two-sided 95% (the 0.975 quantile), by degrees of freedom 1..30 (any printed t table); above 30,
# t_975() expands in 1/df around the normal's quantile.
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z_975 = 1.959964
MAX_ROUNDS = 100


@dataclass
class Side:
    label: str
    client: Client
    model: str


def side(label: str, url: str, key_file: Path | None, spec: LoadSpec) -> Side:
    """One server of the comparison: a loopback URL, its key, the model it serves (a refused key or a bad answer
    is a one-line error naming the side)."""
    client = make_client(check_loopback(url), key_file)
    model, problems = load_model(client, key_file, spec)
    if model is None:
        raise TQError(f"{label} ({client.shown_url}): {problems[0].title}", problems[0].remediation)
    return Side(label, client, model)


def order(round_no: int, step_no: int) -> tuple[int, int]:
    """Which side goes first: A in even (round + step), B in odd, so each side goes first as often, at every
    concurrency across rounds and across concurrencies within a round."""
    return (0, 1) if (round_no + step_no) % 2 == 0 else (1, 0)


def t_975(df: int) -> float:
    """Student's t 0.975 quantile for df >= 1 degrees of freedom: the table up to 30, above it the Cornish-Fisher
    expansion in 1/df (Abramowitz & Stegun 26.7.5), within 1e-4 of the exact quantile from df 30 up."""
    if df < 1:
        raise ValueError(f"t quantile for {df} degrees of freedom")
    if df <= len(T_975):
        return T_975[df - 1]
    z = Z_975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def interval(ratios: list[float]) -> tuple[float, float, float]:
    """Geometric mean of the ratios and its 95% interval (t over the logs); one ratio has no interval. The ratios
    as one cell of cell_interval."""
    geo, low, high, _ = cell_interval([ratios])
    return geo, low, high


def cell_interval(cells: list[list[float]]) -> tuple[float, float, float, int]:
    """The ratios grouped in cells (a cell's steps share what is held as a factor: the run, which side went
    first): the geometric mean of the cells' geometric means, its 95% interval from the variance pooled within
    the cells (t with steps - cells degrees of freedom), and those degrees of freedom. Each cell counts once,
    whatever its size, so an unbalanced factor does not tilt the estimate. No interval below 1 degree of freedom."""
    logs = [[math.log(r) for r in cell] for cell in cells if cell]
    if not logs:
        raise ValueError("no ratios in any cell")
    means = [statistics.fmean(c) for c in logs]
    mean = statistics.fmean(means)
    df = sum(len(c) for c in logs) - len(logs)
    if df < 1:
        return math.exp(mean), 0.0, math.inf, 0
    pooled = sum((x - m) ** 2 for c, m in zip(logs, means, strict=True) for x in c) / df
    half = t_975(df) * math.sqrt(pooled * sum(1 / len(c) for c in logs)) / len(logs)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half), df


def verdict(low: float, high: float, tolerance: float) -> str:
    """within: the whole interval lies inside 1 +- tolerance; outside: the whole interval lies beyond it;
    unresolved: the interval crosses the band's edge (more rounds, or a quieter host)."""
    if 1 - tolerance <= low and high <= 1 + tolerance:
        return "within"
    if high < 1 - tolerance or low > 1 + tolerance:
        return "outside"
    return "unresolved"


def margin(low: float, high: float, tolerance: float) -> str:
    """A against B with a margin: "not slower" when the 95% interval's low end is at or above 1 - tolerance (A
    gives up at most the tolerance; one-sided that is a 97.5% bound), "slower" when its high end lies below
    1 - tolerance, else "unresolved"."""
    if low >= 1 - tolerance:
        return "not slower"
    if high < 1 - tolerance:
        return "slower"
    return "unresolved"


def _reading(geo: float, low: float, high: float, tolerance: float) -> JSONObject:
    return {
        "geomean": round(geo, 4),
        "ci95": [round(low, 4), round(high, 4) if math.isfinite(high) else None],
        "verdict": verdict(low, high, tolerance),
        "margin": margin(low, high, tolerance),
    }


def summarize(steps: list[JSONObject], tolerance: float, a_label: str = "a") -> dict[str, JSONObject]:
    """Per concurrency: the per-step ratios A/B, their geometric mean, its interval with both readings (verdict,
    margin), the geometric means of the steps where A went first and where B did (their gap is the order effect),
    and `adjusted`: the same with the order, and the run where steps carry one, as factors (cell_interval)."""
    out: dict[str, JSONObject] = {}
    for conc in sorted({s["concurrency"] for s in steps}):
        mine = [s for s in steps if s["concurrency"] == conc and s["ratio"] is not None]
        ratios = [s["ratio"] for s in mine]
        if not ratios:
            out[str(conc)] = {"ratios": [], "verdict": "unresolved", "margin": "unresolved"}
            continue
        by_order = {
            which: [s["ratio"] for s in mine if (s.get("first") == a_label) == (which == "a_first")]
            for which in ("a_first", "b_first")
        }
        cells: dict[tuple[int, bool], list[float]] = {}  # (run, A went first) -> ratios
        for s in mine:
            cells.setdefault((s.get("run", 0), s.get("first") == a_label), []).append(s["ratio"])
        geo, low, high, df = cell_interval(list(cells.values()))
        out[str(conc)] = {
            "ratios": [round(r, 4) for r in ratios],
            **_reading(*interval(ratios), tolerance),
            "by_order": {k: round(statistics.geometric_mean(v), 4) if v else None for k, v in by_order.items()},
            "adjusted": {**_reading(geo, low, high, tolerance), "cells": len(cells), "df": df},
        }
    return out


def pool(results: list[JSONObject]) -> JSONObject:
    """Several runs of compare() (each a fresh pair of starts) as one: every run's steps, each marked with its run,
    summarized together, so `adjusted` holds the run as a factor beside the order. The runs must compare the same
    two labels under one tolerance."""
    if not results:
        raise TQError("no interleaved runs to pool", "give at least one ab result file")
    first = results[0]
    for r in results[1:]:
        if (r.get("a"), r.get("b"), r.get("tolerance")) != (first.get("a"), first.get("b"), first.get("tolerance")):
            raise TQError("the runs compare different servers or tolerances", "pool runs of one comparison only")
    for label in (first["a"], first["b"]):
        served = sorted({name for r in results if (name := checkpoint(r, label))})
        if len(served) > 1:
            raise TQError(
                f"the runs' {label} servers served different checkpoints ({', '.join(served)})",
                "pool the runs of one checkpoint only",
            )
    steps = [{**s, "run": n} for n, r in enumerate(results) for s in r.get("steps", [])]
    return {
        "a": first["a"],
        "b": first["b"],
        "tolerance": first["tolerance"],
        "runs": len(results),
        "by_concurrency": summarize(steps, first["tolerance"], first["a"]),
    }


def checkpoint(result: JSONObject, label: str) -> str | None:
    """The last path part of the model a side served in a run (a served name or a checkpoint's path): what tells a
    run of one checkpoint from another's. None when the run recorded none (runs written before `models` was)."""
    served = (result.get("models") or {}).get(label)
    return str(served).rstrip("/").rsplit("/", 1)[-1] if served else None


def compare(
    a: Side,
    b: Side,
    spec: LoadSpec,
    rounds: int,
    tolerance: float = 0.02,
    on_round: Callable[[JSONObject], None] | None = None,
    max_seconds: float | None = None,
) -> JSONObject:
    """`rounds` rounds; in each, every concurrency of spec once on each side (its warm-up first, spec.warmup_s),
    the two sides on the same prompts, the order alternating (order()). Bounded: rounds x steps x 2 runs of at
    most spec.duration_s (+ warm-up) each. on_round gets the result so far after each round ("complete" false
    until the last), so a run cut short by its caller's time limit still leaves its finished rounds. max_seconds
    bounds the whole: after each even number of rounds, two more start only when they fit at the pace so far, so
    the run ends balanced and inside its caller's limit ("rounds" is then what ran, "rounds_asked" the limit)."""
    if not 2 <= rounds <= MAX_ROUNDS:
        raise TQError(f"--rounds {rounds} is outside 2..{MAX_ROUNDS}", "e.g. --rounds 6")
    if rounds % 2:
        raise TQError(
            f"--rounds {rounds} is odd: each server goes first equally often only over an even count", "e.g. --rounds 6"
        )
    if not spec.duration_s:
        raise TQError("--duration is missing: each interleaved step needs one", "e.g. --duration 5")
    sides = (a, b)
    steps: list[JSONObject] = []
    started = time.monotonic()
    for r in range(rounds):
        if max_seconds is not None and r and r % 2 == 0:
            spent = time.monotonic() - started
            if spent + 2 * spent / r > max_seconds:
                return _result(a, b, spec, r, tolerance, steps, complete=True, asked=rounds)
        for i, conc in enumerate(spec.concurrency):
            seed = r * len(spec.concurrency) + i  # new prompts each step, the same for both sides
            figures: dict[str, JSONObject] = {}
            first = order(r, i)
            for which in first:
                side = sides[which]
                warm_up(side.client, side.model, spec, conc, seed=seed)
                figures[side.label] = run_step(side.client, side.model, spec, conc, seed=seed)
            tok_a, tok_b = (figures[s.label]["output_tokens_per_s"] for s in sides)
            steps.append(
                {
                    "round": r,
                    "concurrency": conc,
                    "first": sides[first[0]].label,
                    a.label: _kept(figures[a.label]),
                    b.label: _kept(figures[b.label]),
                    "ratio": tok_a / tok_b if tok_a and tok_b else None,
                }
            )
        if on_round is not None and r + 1 < rounds:
            on_round(_result(a, b, spec, r + 1, tolerance, steps, complete=False))
    return _result(a, b, spec, rounds, tolerance, steps, complete=True, asked=rounds)


def _result(
    a: Side,
    b: Side,
    spec: LoadSpec,
    rounds: int,
    tolerance: float,
    steps: list[JSONObject],
    complete: bool,
    asked: int = 0,
) -> JSONObject:
    return {
        "a": a.label,
        "b": b.label,
        "tolerance": tolerance,
        "rounds": rounds,
        "rounds_asked": asked or rounds,
        "complete": complete,
        "spec": dataclasses.asdict(spec),
        "models": {a.label: a.model, b.label: b.model},
        "steps": list(steps),
        "by_concurrency": summarize(steps, tolerance, a.label),
    }


def _kept(step: JSONObject) -> JSONObject:
    return {k: step[k] for k in ("output_tokens_per_s", "requests", "completed", "errors", "seconds")}
