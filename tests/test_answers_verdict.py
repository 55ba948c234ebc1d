"""The answer check's detectors and findings on recorded answers: each finding id's pass and fail examples
(TQ480-TQ486), the reference's fingerprint, the thresholds file. The live runs are tests/test_answers_live.py."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from tqdeploy.answers import detect
from tqdeploy.answers.fixed import load_inputs
from tqdeploy.answers.probes import ChatAnswer
from tqdeploy.answers.reference import (
    Fingerprint,
    Reference,
    load_reference,
    model_files_digest,
    save_reference,
    shipped_references,
)
from tqdeploy.answers.run import choose_reference
from tqdeploy.answers.target import answer_flags
from tqdeploy.answers.thresholds import load_thresholds
from tqdeploy.answers.verdict import Observed, verdict
from tqdeploy.errors import TQError

INPUTS = load_inputs()
LIMITS = load_thresholds()
# What SmolLM2-135M-Instruct answered with bf16 KV on the CPU build (the shipped reference's answers).
SHIPPED = json.loads(shipped_references()[0].read_text(encoding="utf-8"))
GOOD = {pid: text for pid, text in SHIPPED["answers"].items()}
# What the same model answered with turboquant_k8v4 on the CPU build (docs/answers.md), cut to its start.
GARBAGE = "A by turn ( [ud the [c [ud [iceily people version"
# The long prompt asked twice, answered the same both times with bf16 on the CPU build.
REPEATED = "Clara did not sell the bakery, but she did not mind. She said that a bakery was a place for bread"


def _answer(text: str) -> ChatAnswer:
    return ChatAnswer(text, [t for t in text.replace("\n", " \n ").split(" ") if t])


def _observed(**changes) -> Observed:
    obs = Observed(
        kv_dtype="auto",
        prefix_caching=True,
        perplexity=17.41,
        tokens=1025,
        answers={pid: _answer(t) for pid, t in GOOD.items()},
        recall={d: _answer("The name of the doctor's dog was Biscuit.") for d in INPUTS.recall.depths},
        repeat=[_answer(REPEATED), _answer(REPEATED)],
    )
    for name, value in changes.items():
        setattr(obs, name, value)
    return obs


def _ids(findings, severity: str = "error") -> set[str]:
    return {f.id for f in findings if f.severity.value == severity}


def _reference(ppl: float = 17.41, **fp) -> Reference:
    base = Fingerprint("a" * 64, "0.32.0", "bfloat16", {})
    return Reference(replace(base, **fp), INPUTS.passage_sha256, 1025, ppl, {})


def test_the_good_answers_pass_every_finding():
    findings = verdict(_observed(), _reference(), LIMITS, INPUTS)
    assert {f.id for f in findings} == {"TQ480", "TQ481", "TQ482", "TQ483", "TQ484"}
    assert all(f.severity.value == "ok" for f in findings), [f.title for f in findings]


def test_perplexity_over_the_ceiling_fails_without_a_reference():
    findings = verdict(_observed(perplexity=14069.0, kv_dtype="turboquant_k8v4"), None, LIMITS, INPUTS)
    (f,) = [f for f in findings if f.id == "TQ480"]
    assert f.severity.value == "error" and "garbage" in f.title
    assert "turboquant_k8v4" in f.remediation


def test_perplexity_against_the_reference_uses_the_dtype_bound():
    ref = _reference(15.767)
    ok = verdict(_observed(perplexity=16.017, kv_dtype="turboquant_4bit_nc"), ref, LIMITS, INPUTS)  # +1.6%, H200
    assert "TQ480" not in _ids(ok)
    bad = verdict(_observed(perplexity=16.9, kv_dtype="turboquant_4bit_nc"), ref, LIMITS, INPUTS)  # +7.2%
    assert "TQ480" in _ids(bad)
    # the same 7.2% is within the 3-bit preset's bound, which vLLM itself puts at +20.59%
    assert "TQ480" not in _ids(verdict(_observed(perplexity=16.9, kv_dtype="turboquant_3bit_nc"), ref, LIMITS, INPUTS))


def test_a_changed_answer_is_a_warning_with_the_prefix_caching_fix():
    changed = [_answer(REPEATED), _answer("Clara did not sell the bakery, and she did not mind at all.")]
    bf16 = [f for f in verdict(_observed(repeat=changed), None, LIMITS, INPUTS) if f.id == "TQ481"]
    assert [(f.severity.value, f.evidence["changed_at_token"]) for f in bf16] == [("warn", 6)]  # "but" / "and"
    assert "--no-enable-prefix-caching" in bf16[0].remediation
    (tq,) = [
        f
        for f in verdict(_observed(repeat=changed, kv_dtype="turboquant_4bit_nc"), None, LIMITS, INPUTS)
        if f.id == "TQ481"
    ]
    assert tq.severity.value == "warn" and "speculative decoding" in tq.remediation
    assert "TQ481" not in {f.id for f in verdict(_observed(repeat=[]), None, LIMITS, INPUTS)}  # not asked: no verdict


@pytest.mark.parametrize(
    "tokens,period",
    [
        (["a", "b"] + ["the"] * 12, 1),
        (["x"] + ["Paris", " is", " nice", "."] * 4, 4),
        ("The capital of France is Paris .".split() * 3, 7),
        ("The capital of France is Paris .".split(), None),  # short and said once
        ([str(i) for i in range(40)], None),  # a list that counts on
        (["1", ".", " a", "\n"] + ["2", ".", " b", "\n"] + ["3", ".", " c", "\n"], None),
    ],
)
def test_loop_period(tokens, period):
    assert detect.loop_period(tokens) == period


def test_a_looping_answer_fails_tq482():
    answers = dict(_observed().answers)
    answers["sky"] = _answer("The sky is blue. " + "blue blue " * 10)
    findings = verdict(_observed(answers=answers), None, LIMITS, INPUTS)
    assert "TQ482" in _ids(findings) and "TQ481" not in _ids(findings)


def test_wrong_answers_one_is_a_warning_two_an_error():
    answers = dict(_observed().answers)
    answers["capital"] = _answer(GARBAGE)
    assert "TQ483" in _ids(verdict(_observed(answers=answers), None, LIMITS, INPUTS), "warn")
    answers["week"] = _answer("A week is long.")
    assert "TQ483" in _ids(verdict(_observed(answers=answers), None, LIMITS, INPUTS))


def test_expected_words_are_whole_words():
    assert detect.mentions("A week is approximately 7 days.", ["7", "seven"])
    assert not detect.mentions("It has 17 parts.", ["7"])
    assert detect.mentions("The chemical symbol for water is H2O.", ["H2O"])
    assert not detect.mentions("The sky is blueish.", ["blue"])


def test_recall_missed_at_a_depth_fails_tq484():
    recall = dict(_observed().recall)
    recall[0.5] = _answer("The town had one doctor, a quiet man.")
    (f,) = [f for f in verdict(_observed(recall=recall), None, LIMITS, INPUTS) if f.id == "TQ484"]
    assert f.severity.value == "error" and f.evidence["missed"] == [0.5]


def test_perplexity_of_logprobs():
    assert detect.perplexity([-1.0, -1.0]) == pytest.approx(2.718281828)
    with pytest.raises(ValueError):
        detect.perplexity([])


def test_fingerprint_differences_name_each_field_and_unknown_is_never_equal():
    a = Fingerprint("a" * 64, "0.32.0", "bfloat16", {"quantization": "awq"})
    assert a.differences(a) == {}
    b = Fingerprint("a" * 64, "0.25.0", "bfloat16", {})
    assert b.differences(a) == {"vllm_version": ["0.25.0", "0.32.0"], "flags.quantization": [None, "awq"]}
    unknown = Fingerprint(None, "0.32.0", None, {"quantization": "awq"})
    assert set(a.differences(unknown)) == {"model_sha256", "dtype"}


def test_stale_reference_is_refused_and_a_fitting_one_used(tmp_path: Path):
    server = Fingerprint("a" * 64, "0.32.0", "bfloat16", {})
    stale = tmp_path / "stale.json"
    save_reference(_reference(vllm_version="0.25.0"), stale)
    ref, findings = choose_reference(stale, None, server, INPUTS)
    assert ref is None and [(f.id, f.severity.value) for f in findings] == [("TQ486", "error")]
    assert findings[0].evidence["differs"] == {"vllm_version": ["0.25.0", "0.32.0"]}
    fits = tmp_path / "fits.json"
    save_reference(_reference(), fits)
    ref, findings = choose_reference(fits, None, server, INPUTS)
    assert ref is not None and ref.perplexity == pytest.approx(17.41) and findings == []
    # the build's own stale reference: a warning, then no reference (TQ485 says how to record one)
    ref, findings = choose_reference(None, stale, Fingerprint("b" * 64, "0.32.0", "bfloat16", {}), INPUTS)
    assert ref is None and [(f.id, f.severity.value) for f in findings] == [("TQ486", "warn"), ("TQ485", "info")]


def test_reference_file_bad_input_is_one_line(tmp_path: Path):
    bad = tmp_path / "ref.json"
    bad.write_text('{"schema": "tqdeploy.answers-reference/1", "perplexity": "high"}', encoding="utf-8")
    with pytest.raises(TQError, match="is not usable: perplexity"):
        load_reference(bad)
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(TQError, match="not a tqdeploy.answers-reference/1 file"):
        load_reference(bad)


def test_the_shipped_reference_loads_and_matches_the_shipped_passage():
    ref = load_reference(shipped_references()[0])
    assert ref.text_sha256 == INPUTS.passage_sha256
    assert ref.fingerprint.vllm_version == "0.32.0" and 10 < ref.perplexity < 30


def test_model_digest_reads_model_files_only_and_not_links_out(tmp_path: Path):
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / "README.md").write_text("not read", encoding="utf-8")
    outside = tmp_path.parent / f"{tmp_path.name}-secret.json"
    outside.write_text("{}", encoding="utf-8")
    (tmp_path / "tokenizer.json").symlink_to(outside)
    digest = model_files_digest(tmp_path)
    assert set(digest["files"]) == {"config.json", "model.safetensors"}
    (tmp_path / "model.safetensors").write_bytes(b"other weights")
    assert model_files_digest(tmp_path)["sha256"] != digest["sha256"]


def test_answer_flags_both_spellings():
    assert answer_flags(["--quantization", "awq", "--max-num-seqs", "8", "--speculative-config={}"]) == {
        "quantization": "awq",
        "speculative-config": "{}",
    }


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")


def test_every_bound_names_its_measurement_in_docs_answers():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "answers.md").read_text(encoding="utf-8")
    anchors = {_slug(line.lstrip("#")) for line in docs.splitlines() if line.startswith("#")}
    for bound in [LIMITS.ceiling, LIMITS.default_ratio, *LIMITS.ratios.values()]:
        path, _, rest = bound.source.partition("#")
        assert path == "docs/answers.md" and rest.split(":")[0] in anchors, bound.source


def test_recall_prompt_fits_a_short_context():
    full = INPUTS.recall_prompt(0.5, 100_000)
    short = INPUTS.recall_prompt(0.5, 1500)
    assert INPUTS.recall.fact in short and len(short) <= 1500 < len(full)


def test_state_keeps_the_summary_validated(tmp_path: Path):
    from tqdeploy.answers.result import CheckResult
    from tqdeploy.runtime.statefields import BadField, validated

    result = CheckResult("http://127.0.0.1:8000", "m", verdict(_observed(), None, LIMITS, INPUTS), 5.0)
    result.observed = _observed()
    summary = json.loads(json.dumps(result.summary()))
    assert summary["status"] == "pass" and summary["perplexity"] == pytest.approx(17.41)
    assert validated({"answer_check": summary}, tmp_path)["answer_check"] == summary
    for bad in ({"status": "maybe", "findings": []}, {"status": "pass", "findings": [{"id": 1}]}, "pass"):
        with pytest.raises(BadField, match="answer_check"):
            validated({"answer_check": bad}, tmp_path)
    failed = CheckResult("u", "m", verdict(_observed(perplexity=9000.0), None, LIMITS, INPUTS))
    assert failed.summary()["status"] == "fail" and failed.summary()["findings"][0]["id"] == "TQ480"


def test_cache_config_labels_without_prometheus_client():
    from tqdeploy.answers.probes import _cache_info_line

    text = (
        "# TYPE vllm:cache_config_info gauge\n"
        'vllm:cache_config_info{cache_dtype="fp8",enable_prefix_caching="False"} 1.0\n'
    )
    assert _cache_info_line(text) == {"cache_dtype": "fp8", "enable_prefix_caching": "False"}
    assert _cache_info_line("vllm:num_requests_running 0.0\n") == {}


def test_model_digests_are_reused_only_for_unchanged_files(tmp_path: Path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    cache = tmp_path / "model-digests.json"
    first = model_files_digest(model, cache)
    assert (
        json.loads(cache.read_text(encoding="utf-8"))["model.safetensors"]["sha256"]
        == first["files"]["model.safetensors"]["sha256"]
    )
    assert model_files_digest(model, cache) == first  # read back, not hashed again
    (model / "model.safetensors").write_bytes(b"other!!")  # same size, new mtime: hashed again
    assert model_files_digest(model, cache)["sha256"] != first["sha256"]
    cache.write_text('{"model.safetensors": {"sha256": "x"}}', encoding="utf-8")  # not what it writes: ignored
    assert model_files_digest(model, cache)["files"] == model_files_digest(model)["files"]


def test_profile_carries_the_check_up_kept_in_the_state(tmp_path: Path):
    from tqdeploy.profile.run import _answer_check

    summary = {"status": "fail", "seconds": 7.3, "perplexity": 9000.0, "findings": [{"id": "TQ480", "title": "x"}]}
    (tmp_path / ".tqdeploy").mkdir()
    (tmp_path / ".tqdeploy" / "state.json").write_text(
        json.dumps({"schema": "tqdeploy.state/1", "answer_check": summary}), encoding="utf-8"
    )
    assert _answer_check(tmp_path) == summary
    assert _answer_check(None) is None


def test_characters_per_token_from_the_perplexity_probe():
    from tqdeploy.answers.fixed import chars_per_token

    assert chars_per_token(4677, 1025, cut=False) == pytest.approx(0.9 * 4677 / 1026)  # SmolLM2's tokenizer
    assert chars_per_token(4677, 509, cut=True) == 1.0  # cut to fit: the ratio is unknown, 1 is safe for ASCII
    assert chars_per_token(100, 500, cut=False) == 1.0
