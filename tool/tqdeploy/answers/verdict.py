"""From what the probes observed to findings (TQ480-TQ488, pages in checks/docs/): pure, so each finding's pass
and fail examples run on recorded answers (tests/test_answers_verdict.py).

Perplexity is judged against the reference (ratio per KV dtype) when one fits, and always against an absolute
ceiling: a trained model on plain English is in the tens, garbage in the thousands. Greedy answers are judged on
their own (the expected word, no loop, the same tokens when asked again), never by token identity with the
reference: quantized KV caches change greedy tokens while the answers stay right (docs/answers.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tqdeploy.answers import detect
from tqdeploy.answers.fixed import Inputs
from tqdeploy.answers.probes import ChatAnswer
from tqdeploy.answers.reference import Reference
from tqdeploy.answers.thresholds import Thresholds
from tqdeploy.findings import Finding, Severity

AREA = "answers"
PERPLEXITY, CHANGED, LOOP, WRONG, RECALL = "TQ480", "TQ481", "TQ482", "TQ483", "TQ484"
NO_REFERENCE, STALE, NO_ANSWER, BUDGET = "TQ485", "TQ486", "TQ487", "TQ488"
# One wrong answer of seven is a warning (a quantized cache may cost a 135M model one); two are an error.
WRONG_ALLOWED = 1
RECORD_FIX = "record one: `tqdeploy check BUILD --record-reference` (starts the build with kv_cache_dtype auto)"
TQ_PREFIX = "turboquant_"


@dataclass
class Observed:
    """What the probes got from the server; a probe that did not run leaves its part empty."""

    kv_dtype: str | None = None
    prefix_caching: bool | None = None
    perplexity: float | None = None
    tokens: int = 0
    answers: dict[str, ChatAnswer] = field(default_factory=dict)  # prompt id -> its greedy answer
    recall: dict[float, ChatAnswer] = field(default_factory=dict)
    repeat: list[ChatAnswer] = field(default_factory=list)  # one long prompt: uncached, then cached


def _f(fid: str, sev: Severity, title: str, fix: str = "", **evidence: Any) -> Finding:
    return Finding(fid, sev, title, evidence, fix, AREA)


def _fix_for(kv_dtype: str | None) -> str:
    if kv_dtype and kv_dtype.startswith(TQ_PREFIX):
        return (
            f"this server's KV dtype {kv_dtype} breaks the answers: try another preset (turboquant_4bit_nc or "
            "k8v4 on a CUDA GPU; the CPU build does not run TurboQuant), fp8, or kv_cache_dtype auto; no "
            "speculative decoding with TurboQuant"
        )
    return "the answers are broken with an unquantized KV cache too: check the model files, dtype and vLLM release"


def perplexity_findings(obs: Observed, ref: Reference | None, limits: Thresholds) -> list[Finding]:
    if obs.perplexity is None:
        return []
    ppl, ceiling = obs.perplexity, limits.ceiling
    ev: dict[str, Any] = {"perplexity": round(ppl, 3), "tokens": obs.tokens, "kv_cache_dtype": obs.kv_dtype}
    if ppl > ceiling.value:
        title = f"perplexity {ppl:,.1f} on plain English: the answers are garbage (ceiling {ceiling.value:g})"
        return [_f(PERPLEXITY, Severity.ERROR, title, _fix_for(obs.kv_dtype), **ev, ceiling=ceiling.value)]
    if ref is None:
        title = f"perplexity {ppl:.2f}, under the ceiling {ceiling.value:g} (no reference to compare with)"
        return [_f(PERPLEXITY, Severity.OK, title, **ev, ceiling=ceiling.value)]
    bound = limits.ratio_for(obs.kv_dtype)
    ratio = ppl / ref.perplexity
    ev |= {"reference": round(ref.perplexity, 3), "ratio": round(ratio, 4), "max_ratio": bound.value}
    if ratio > bound.value:
        title = f"perplexity {ppl:.2f} is {100 * (ratio - 1):+.1f}% over the reference (at most {bound.value:g}x)"
        return [_f(PERPLEXITY, Severity.ERROR, title, _fix_for(obs.kv_dtype), **ev, source=bound.source)]
    title = f"perplexity {ppl:.2f}, {100 * (ratio - 1):+.1f}% against the reference (at most {bound.value:g}x)"
    return [_f(PERPLEXITY, Severity.OK, title, **ev)]


def changed_findings(obs: Observed) -> list[Finding]:
    """A warning, never an error: the answer may be right both times. Measured: TurboQuant with prefix caching
    changed 13 of 16 (H200); bf16 on the CPU build changed one long prompt of two (docs/answers.md)."""
    if len(obs.repeat) != 2:
        return []
    first, second = obs.repeat
    at = detect.first_difference(first.tokens, second.tokens)
    if at is None:
        return [_f(CHANGED, Severity.OK, "a long prompt asked again (its prefix cached) gave the same tokens")]
    title = f"a long prompt asked again (its prefix now cached) gave other greedy tokens from token {at}"
    ev = {"changed_at_token": at, "kv_cache_dtype": obs.kv_dtype, "prefix_caching": obs.prefix_caching}
    fix = "where answers must be reproducible, turn prefix caching off (--no-enable-prefix-caching)"
    if obs.kv_dtype and obs.kv_dtype.startswith(TQ_PREFIX):  # the prefix is read back quantized (#46460)
        fix += "; with TurboQuant, no speculative decoding either"
    return [_f(CHANGED, Severity.WARN, title, fix, **ev, first=first.text[:120], second=second.text[:120])]


def loop_findings(obs: Observed) -> list[Finding]:
    asked = {**obs.answers, **{f"recall@{d}": a for d, a in obs.recall.items()}}
    asked |= {f"repeat#{i + 1}": a for i, a in enumerate(obs.repeat)}
    looped = {name: p for name, a in asked.items() if (p := detect.loop_period(a.tokens)) is not None}
    if not asked:
        return []
    if not looped:
        return [_f(LOOP, Severity.OK, "no greedy answer ends in a loop")]
    title = f"{len(looped)} greedy answer(s) end in a loop (a unit of tokens said again and again)"
    return [_f(LOOP, Severity.ERROR, title, _fix_for(obs.kv_dtype), loop_period=looped, kv_cache_dtype=obs.kv_dtype)]


def wrong_findings(obs: Observed, inputs: Inputs) -> list[Finding]:
    wrong = {}
    for p in inputs.prompts:
        answer = obs.answers.get(p.id)
        if answer is not None and not detect.mentions(answer.text, p.expect):
            wrong[p.id] = answer.text[:120]
    asked = sum(1 for p in inputs.prompts if p.id in obs.answers)
    if not asked:
        return []
    if not wrong:
        return [_f(WRONG, Severity.OK, f"all {asked} greedy answers hold the expected word")]
    sev = Severity.WARN if len(wrong) <= WRONG_ALLOWED else Severity.ERROR
    title = f"{len(wrong)} of {asked} greedy answers miss the expected word"
    return [_f(WRONG, sev, title, _fix_for(obs.kv_dtype), answers=wrong)]


def recall_findings(obs: Observed, inputs: Inputs) -> list[Finding]:
    if not obs.recall:
        return []
    missed = [d for d, a in sorted(obs.recall.items()) if not detect.mentions(a.text, inputs.recall.expect)]
    ev: dict[str, Any] = {"depths": sorted(obs.recall), "missed": missed}
    if not missed:
        return [_f(RECALL, Severity.OK, f"the planted fact was recalled at all {len(obs.recall)} depths", **ev)]
    title = f"the planted fact was missed at {len(missed)} of {len(obs.recall)} depths of the context"
    answers = {str(d): obs.recall[d].text[:120] for d in missed}
    return [_f(RECALL, Severity.ERROR, title, _fix_for(obs.kv_dtype), **ev, answers=answers)]


def verdict(obs: Observed, ref: Reference | None, limits: Thresholds, inputs: Inputs) -> list[Finding]:
    return [
        *perplexity_findings(obs, ref, limits),
        *changed_findings(obs),
        *loop_findings(obs),
        *wrong_findings(obs, inputs),
        *recall_findings(obs, inputs),
    ]
