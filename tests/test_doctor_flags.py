"""doctor with a launch command: the command is linted (TQ3xx) and its values feed the checkpoint checks."""

import json

from conftest import FIXTURES

H200 = str(FIXTURES / "hosts" / "h200-1gpu-live.json")
QWEN = str(FIXTURES / "models" / "qwen3.6-27b")
GOOD_SCRIPT = str(FIXTURES / "lint" / "good_serve.sh")


def doctor_json(run_cli, *args):
    code, out, err = run_cli("doctor", "--snapshot", H200, "--json", *args)
    assert err == "" or "Traceback" not in err
    return code, json.loads(out)


def by_id(report, check_id):
    return [f for f in report["findings"] if f["id"] == check_id]


def test_command_is_linted_and_its_tp_feeds_the_checkpoint_check(run_cli):
    code, rep = doctor_json(
        run_cli,
        "--model",
        QWEN,
        "--",
        "vllm",
        "serve",
        "Qwen/Qwen3.6-27B",
        "--tensor-parallel-size",
        "3",
        "--quantization",
        "turboquant",
    )
    assert code == 1
    assert rep["options"]["tensor_parallel_size"] == 3
    assert any(f["area"] == "flags" and f["severity"] == "error" for f in by_id(rep, "TQ310"))
    titles = [f["title"] for f in by_id(rep, "TQ203")]
    assert any("3 GPUs" in t and "4 KV heads" in t for t in titles)  # the heads do not split over 3
    assert any(t == "TP=3 needs 3 GPUs; the host has 1" for t in titles)  # and the host has one GPU
    assert all("corrected_command" in f["evidence"] for f in rep["findings"] if f["area"] == "flags")


def test_model_rules_are_not_reported_twice(run_cli):
    _, rep = doctor_json(
        run_cli, "--model", QWEN, "--", "vllm", "serve", "Qwen/Qwen3.6-27B", "--tensor-parallel-size", "3"
    )
    assert not [f for f in rep["findings"] if f["id"] in ("TQ340", "TQ341", "TQ342", "TQ343")]


def test_valid_script_passes_and_its_values_reach_the_checks(run_cli):
    code, rep = doctor_json(run_cli, "--model", QWEN, "--file", GOOD_SCRIPT)
    assert [f["severity"] for f in by_id(rep, "TQ300")] == ["ok"]
    assert rep["options"]["tensor_parallel_size"] == 2 and rep["options"]["max_model_len"] == 262144
    assert rep["options"]["kv_cache_dtype"] == "turboquant_4bit_nc"
    # the script asks for TP=2 on a one-GPU host: an error, whatever the heads allow
    assert any(f["title"] == "TP=2 needs 2 GPUs; the host has 1" for f in by_id(rep, "TQ203"))
    assert code == 1


def test_explicit_options_win_over_the_command(run_cli):
    code, rep = doctor_json(run_cli, "--model", QWEN, "--tp", "1", "--file", GOOD_SCRIPT)
    assert rep["options"]["tensor_parallel_size"] == 1
    assert [f["severity"] for f in by_id(rep, "TQ203")] == ["ok"]


def test_secrets_in_the_command_are_not_in_the_report(run_cli):
    secret = "sk-live-Do-Not-Print-42"
    code, out, _ = run_cli("doctor", "--snapshot", H200, "--json", "--", "vllm", "serve", "m", "--api-key", secret)
    assert secret not in out
    assert any(f["id"] == "TQ323" for f in json.loads(out)["findings"])


def test_command_and_file_together_is_a_usage_error(run_cli):
    code, _, err = run_cli("doctor", "--snapshot", H200, "--file", GOOD_SCRIPT, "--", "vllm", "serve", "m")
    assert code == 2 and err.startswith("tqdeploy: error: give either a command")


def test_script_variables_are_expanded_for_the_checks():
    from tqdeploy.lint import lint_script

    report = lint_script('TP=4\nexec vllm serve m --tensor-parallel-size "$TP" --max-model-len "$LEN"\n', live=False)
    values = report.serving_values()
    assert values == {"tensor_parallel_size": 4}  # $LEN is only known at run time: left out
