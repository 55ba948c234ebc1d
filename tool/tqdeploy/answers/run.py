"""Run the check against a running server: its facts, the reference that fits it, the probes within one time
budget, then the verdict. Every failure to get an answer is a finding (TQ487, or TQ468 for a refused key),
never an exception; only bad local input (a reference file that cannot be read) is a TQError."""

from __future__ import annotations

import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tqdeploy.answers import probes
from tqdeploy.answers.detect import perplexity
from tqdeploy.answers.fixed import PROMPT_OVERHEAD_TOKENS, Inputs, chars_per_token, load_inputs
from tqdeploy.answers.probes import ChatAnswer, Deadline, ProbeFailed
from tqdeploy.answers.reference import Fingerprint, Reference, load_reference, model_files_digest, shipped_references
from tqdeploy.answers.result import CheckResult
from tqdeploy.answers.thresholds import load_thresholds
from tqdeploy.answers.verdict import AREA, BUDGET, NO_ANSWER, NO_REFERENCE, RECORD_FIX, STALE, Observed, verdict
from tqdeploy.buildfolder import own_dir
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.net import Client, key_refused_finding

DEFAULT_BUDGET_S = 30.0
PER_REQUEST_S = 20.0
MAX_PARALLEL = 8  # the prompts are asked together: one batch costs about what one answer costs
MAX_SCORED_TOKENS = 4096


@dataclass
class Target:
    """What the check talks to and what it knows of the deployment beside the server's own answers."""

    url: str
    model: str
    key: str | None = None
    key_file: str | None = None
    model_dir: Path | None = None  # the build's model folder; None: the server's /v1/models root when local
    dtype: str | None = None  # the model dtype the build runs (None with --url alone: not known)
    flags: dict[str, str] = field(default_factory=dict)
    own_reference: Path | None = None  # BUILD/.tqdeploy/answers-reference.json


def fingerprint_of(target: Target, facts: probes.ServerFacts) -> Fingerprint:
    model_dir = target.model_dir
    if model_dir is None and facts.root and Path(facts.root).is_dir():
        model_dir = Path(facts.root)  # the server runs on this host: its model folder is readable here
    digest = model_files_digest(model_dir, _digest_cache(target))["sha256"] if model_dir is not None else None
    return Fingerprint(digest, facts.vllm_version, target.dtype, dict(target.flags))


def _digest_cache(target: Target) -> Path | None:
    """BUILD/.tqdeploy/model-digests.json beside the build's own reference, its folder made through the one helper
    that refuses links under the build; None without a build."""
    if target.own_reference is None:
        return None

    state = target.own_reference.parent
    return own_dir(state.parent, state) / "model-digests.json"


def choose_reference(
    explicit: Path | None, own: Path | None, fp: Fingerprint, inputs: Inputs
) -> tuple[Reference | None, list[Finding]]:
    """The reference whose fingerprint is this server's: --reference (refused with TQ486 when stale), else the
    build's own, else one that ships with tqdeploy; none: TQ485, which says how to record one."""
    candidates = [explicit] if explicit else [p for p in [own, *shipped_references()] if p and p.is_file()]
    refused: list[Finding] = []
    for path in candidates:
        ref = load_reference(path)
        diff = ref.fingerprint.differences(fp)
        if ref.text_sha256 != inputs.passage_sha256:
            diff["text_sha256"] = [ref.text_sha256[:12], inputs.passage_sha256[:12]]
        if not diff:
            return ref, []
        if path in (explicit, own):
            sev = Severity.ERROR if path == explicit else Severity.WARN
            title = f"reference {path} was recorded for another deployment: refused"
            refused.append(Finding(STALE, sev, title, {"reference": str(path), "differs": diff}, RECORD_FIX, AREA))
    if explicit:
        return None, refused
    title = "no reference recorded for this deployment: perplexity is judged against the absolute ceiling only"
    return None, [
        *refused,
        Finding(NO_REFERENCE, Severity.INFO, title, {"fingerprint": fp.to_dict()}, RECORD_FIX, AREA),
    ]


def _failed(err: ProbeFailed, what: str, target: Target) -> Finding:
    if err.answer is not None and err.answer.key_refused:
        fix = "pass the key file the server was started with (--api-key-file)"
        return key_refused_finding(
            err.answer, sent_key=target.key is not None, fix=fix, area=AREA, key_file=target.key_file
        )
    title = f"{what}: no usable answer from {target.url}"
    fix = "start the server (`tqdeploy up`) and check the address, or raise --check-timeout"
    return Finding(NO_ANSWER, Severity.ERROR, title, {"error": str(err)[:300]}, fix, AREA)


def _ask_all(client: Client, model: str, contents: list[str], max_tokens: int, dl: Deadline) -> list[ChatAnswer]:
    with ThreadPoolExecutor(min(MAX_PARALLEL, len(contents))) as pool:
        futures = [pool.submit(probes.chat, client, model, c, max_tokens, dl) for c in contents]
        return [f.result() for f in futures]


def _ask_twice(client: Client, model: str, content: str, max_tokens: int, dl: Deadline) -> list[ChatAnswer]:
    """The same prompt alone, twice, under a salt of this run only: the first ask finds nothing of it in the
    prefix cache (not even from an earlier check), the second reads its prefix back from the cache. Alone, so
    the batch is the same both times (greedy tokens depend on the batch on the CPU build)."""
    salt = secrets.token_hex(16)
    return [probes.chat(client, model, content, max_tokens, dl, cache_salt=salt) for _ in range(2)]


def observe(client: Client, target: Target, facts: probes.ServerFacts, dl: Deadline, obs: Observed) -> list[Finding]:
    """The four probes in order of what they tell; a probe that fails ends the run with its finding (what ran
    before it is still judged)."""
    inputs = load_inputs()
    max_len = facts.max_model_len or 2048
    steps = ["perplexity", "greedy answers", "recall", "a long prompt asked twice"]
    try:
        scored_max = min(max_len - 2, MAX_SCORED_TOKENS)
        logprobs = probes.prompt_logprobs(client, target.model, inputs.passage, scored_max, dl)
        obs.perplexity, obs.tokens = perplexity(logprobs), len(logprobs)
        steps.pop(0)
        answers = _ask_all(client, target.model, [p.text for p in inputs.prompts], inputs.max_tokens, dl)
        obs.answers = {p.id: a for p, a in zip(inputs.prompts, answers, strict=True)}
        steps.pop(0)
        cut = obs.tokens >= scored_max - 1  # truncate_prompt_tokens took the passage's end only
        ratio = chars_per_token(len(inputs.passage), obs.tokens, cut)
        room = int((max_len - max(inputs.recall.max_tokens, inputs.repeat_max_tokens) - PROMPT_OVERHEAD_TOKENS) * ratio)
        depths = inputs.recall.depths
        recalls = [inputs.recall_prompt(d, room) for d in depths]
        obs.recall = dict(
            zip(depths, _ask_all(client, target.model, recalls, inputs.recall.max_tokens, dl), strict=True)
        )
        steps.pop(0)
        obs.repeat = _ask_twice(client, target.model, inputs.repeat_prompt(room), inputs.repeat_max_tokens, dl)
        return []
    except ProbeFailed as err:
        refused = err.answer is not None and err.answer.key_refused
        if dl.left() <= 0.5 and not refused:
            title = f"the check's time budget ran out: {', '.join(steps)} not run"
            fix = "raise --check-timeout (a busy server answers slower), or check the server's load"
            return [Finding(BUDGET, Severity.WARN, title, {"not_run": steps}, fix, AREA)]
        return [_failed(err, steps[0], target)]


def run_check(target: Target, *, reference: Path | None = None, budget: float = DEFAULT_BUDGET_S) -> CheckResult:
    started = time.monotonic()
    result = CheckResult(target.url, target.model)
    dl = Deadline.after(budget, min(PER_REQUEST_S, budget))
    try:
        client = Client(target.url, target.key, label="the server URL")
    except TQError as err:
        result.findings.append(Finding(NO_ANSWER, Severity.ERROR, err.message, {}, err.remediation, AREA))
        return result
    try:
        facts = probes.server_facts(client, target.model, dl)
    except ProbeFailed as err:
        result.findings.append(_failed(err, "the server's model list", target))
        result.seconds = time.monotonic() - started
        return result
    obs = Observed(kv_dtype=facts.cache.get("cache_dtype"), prefix_caching=_flag(facts.cache, "enable_prefix_caching"))
    failed = observe(client, target, facts, dl, obs)  # first: hashing the model files is not the probes' time
    fp = fingerprint_of(target, facts)
    ref, ref_findings = choose_reference(reference, target.own_reference, fp, load_inputs())
    if ref is not None and obs.tokens and obs.tokens != ref.tokens:  # another max-model-len cut the passage
        diff = {"tokens": [ref.tokens, obs.tokens]}
        title = f"reference {ref.source} scored {ref.tokens} tokens of the passage, this server {obs.tokens}: refused"
        ref_findings.append(Finding(STALE, Severity.WARN, title, {"differs": diff}, RECORD_FIX, AREA))
        ref = None
    result.facts, result.fingerprint, result.reference, result.observed = facts, fp, ref, obs
    result.findings = [*ref_findings, *failed, *verdict(obs, ref, load_thresholds(), load_inputs())]
    result.seconds = time.monotonic() - started
    return result


def _flag(labels: dict[str, str], name: str) -> bool | None:
    value = labels.get(name)
    return {"True": True, "False": False}.get(value) if value is not None else None
