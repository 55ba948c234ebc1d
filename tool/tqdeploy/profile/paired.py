"""Tokens/s of two servers under one load, interleaved: short steps at each concurrency, the two servers taking
turns (A B, then B A), so that drift of the host falls on both alike. On the lent H200 one server's own 15 s steps,
run twice a minute apart, differed by up to 34% (docs/startup.md), so back-to-back whole loads cannot show a 2%
difference; the ratio of two steps run seconds apart can. The verdict rests on the geometric mean of those
per-step ratios and its 95% interval (Student's t over the log ratios). The rounds are even, so each side goes
first equally often at every concurrency: on the CPU demo the side that went second was 1.2-1.9x faster at
concurrency 4 in each of 3 rounds (an order effect that balance cancels); the summary gives both orders' means
apart to show it."""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.net import Client
from tqdeploy.profile.load import LoadSpec, run_step, warm_up

# Student's t, two-sided 95% (the 0.975 quantile), by degrees of freedom 1..30; above 30 the normal's 1.96
# understates it by under 2.5%, which the interval accepts.
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
MAX_ROUNDS = 100


@dataclass
class Side:
    label: str
    client: Client
    model: str


def side(label: str, url: str, key_file: Path | None, spec: LoadSpec) -> Side:
    """One server of the comparison: a loopback URL, its key, the model it serves (a refused key or a bad answer
    is a one-line error naming the side)."""
    from tqdeploy.profile.load import check_loopback
    from tqdeploy.profile.server import load_model, make_client

    client = make_client(check_loopback(url), key_file)
    model, problems = load_model(client, key_file, spec)
    if model is None:
        raise TQError(f"{label} ({client.shown_url}): {problems[0].title}", problems[0].remediation)
    return Side(label, client, model)


def order(round_no: int, step_no: int) -> tuple[int, int]:
    """Which side goes first: A in even (round + step), B in odd, so each side goes first as often, at every
    concurrency across rounds and across concurrencies within a round."""
    return (0, 1) if (round_no + step_no) % 2 == 0 else (1, 0)


def interval(ratios: list[float]) -> tuple[float, float, float]:
    """Geometric mean of the ratios and its 95% interval (t over the logs); one ratio has no interval."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), 0.0, math.inf
    df = len(logs) - 1
    t = T_975[df - 1] if df <= len(T_975) else 1.96
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def verdict(low: float, high: float, tolerance: float) -> str:
    """within: the whole interval lies inside 1 +- tolerance; outside: the whole interval lies beyond it;
    unresolved: the interval crosses the band's edge (more rounds, or a quieter host)."""
    if 1 - tolerance <= low and high <= 1 + tolerance:
        return "within"
    if high < 1 - tolerance or low > 1 + tolerance:
        return "outside"
    return "unresolved"


def summarize(steps: list[dict], tolerance: float, a_label: str = "a") -> dict:
    """Per concurrency: the per-step ratios A/B, their geometric mean, its interval and the verdict, and the
    geometric means of the steps where A went first and where B did (their gap is the order effect)."""
    out: dict[str, dict] = {}
    for conc in sorted({s["concurrency"] for s in steps}):
        mine = [s for s in steps if s["concurrency"] == conc and s["ratio"] is not None]
        ratios = [s["ratio"] for s in mine]
        if not ratios:
            out[str(conc)] = {"ratios": [], "verdict": "unresolved"}
            continue
        geo, low, high = interval(ratios)
        by_order = {
            which: [s["ratio"] for s in mine if (s.get("first") == a_label) == (which == "a_first")]
            for which in ("a_first", "b_first")
        }
        out[str(conc)] = {
            "ratios": [round(r, 4) for r in ratios],
            "geomean": round(geo, 4),
            "ci95": [round(low, 4), round(high, 4) if math.isfinite(high) else None],
            "verdict": verdict(low, high, tolerance),
            "by_order": {k: round(statistics.geometric_mean(v), 4) if v else None for k, v in by_order.items()},
        }
    return out


def compare(a: Side, b: Side, spec: LoadSpec, rounds: int, tolerance: float = 0.02) -> dict:
    """`rounds` rounds; in each, every concurrency of spec once on each side (its warm-up first, spec.warmup_s),
    the two sides on the same prompts, the order alternating (order()). Bounded: rounds x steps x 2 runs of at
    most spec.duration_s (+ warm-up) each."""
    if not 2 <= rounds <= MAX_ROUNDS:
        raise TQError(f"--rounds {rounds} is outside 2..{MAX_ROUNDS}", "e.g. --rounds 6")
    if rounds % 2:
        raise TQError(
            f"--rounds {rounds} is odd: each server goes first equally often only over an even count", "e.g. --rounds 6"
        )
    if not spec.duration_s:
        raise TQError("--duration is missing: each interleaved step needs one", "e.g. --duration 5")
    sides = (a, b)
    steps = []
    for r in range(rounds):
        for i, conc in enumerate(spec.concurrency):
            seed = r * len(spec.concurrency) + i  # new prompts each step, the same for both sides
            figures: dict[str, dict] = {}
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
    return {
        "a": a.label,
        "b": b.label,
        "tolerance": tolerance,
        "rounds": rounds,
        "spec": dataclasses.asdict(spec),
        "steps": steps,
        "by_concurrency": summarize(steps, tolerance, a.label),
    }


def _kept(step: dict) -> dict:
    return {k: step[k] for k in ("output_tokens_per_s", "requests", "completed", "errors", "seconds")}
