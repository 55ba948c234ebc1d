"""Shell scripts: continuation lines, exec/nohup/env prefixes, exports, operators, redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from tqdeploy.errors import TQError
from tqdeploy.lint import lint_script
from tqdeploy.lint.script import find_command, logical_lines

FIX = Path(__file__).resolve().parent / "fixtures" / "lint"


def ids(report):
    return sorted({f.id for f in report.findings})


def test_continuations_are_joined():
    lines = logical_lines("a \\\n  b \\\n  c\nd\n")
    assert lines == [(1, "a    b    c"), (4, "d")]


def test_blog_script_is_caught_and_fixed():
    r = lint_script((FIX / "blog_turboquant_wrong.sh").read_text(), live=False)
    assert r.errors
    assert {"TQ301", "TQ310", "TQ322"} <= set(ids(r))
    assert r.fixed_argv[:3] == ["vllm", "serve", "Qwen/Qwen3.6-27B"]
    assert "--kv-cache-dtype" in r.fixed_argv and "--no-enable-chunked-prefill" in r.fixed_argv
    assert "tee" not in r.command and "2>&1" not in r.command  # the pipe ends the command
    messages = " ".join(f.title for f in r.findings)
    assert "FA014" in messages and "FA016" in messages  # claims in the comments


def test_good_script_is_clean():
    r = lint_script((FIX / "good_serve.sh").read_text(), live=False)
    assert r.findings == [] and not r.errors
    assert r.command[0] == "exec"


def test_docker_blog_script():
    r = lint_script((FIX / "docker_blog.sh").read_text(), live=False)
    assert ids(r) == ["TQ320", "TQ330", "TQ331", "TQ332", "TQ333", "TQ349"]
    fixed = r.fixed_command_text
    assert "--gpus '\"device=0,1\"'" in fixed and "--ipc=host" in fixed and "127.0.0.1:8000:8000" in fixed
    assert "~/.cache/huggingface:/root/.cache/huggingface" in fixed  # tilde left for the shell to expand


def test_docker_good_script_is_clean():
    assert lint_script((FIX / "docker_good.sh").read_text(), live=False).findings == []


def test_old_api_server_script_against_both_versions():
    text = (FIX / "api_server_old.sh").read_text()
    new = lint_script(text, live=False)
    assert ids(new) == ["TQ304"] and len(new.findings) == 2
    assert "--calculate-kv-scales" not in new.fixed_argv
    old = lint_script(text, vllm_version="0.25.0", live=False)
    assert old.findings == []
    assert find_command(text).argv[0] == "CUDA_VISIBLE_DEVICES=0"


def test_exported_secret_is_redacted_everywhere():
    text = (FIX / "blog_turboquant_wrong.sh").read_text()
    secret = "hf_BlogPostTokenDoNotShare123"
    script = f"export VLLM_API_KEY={secret}2\n" + text
    r = lint_script(script, live=False)
    dumped = str(r.to_dict())
    assert secret not in dumped and secret + "2" not in dumped
    assert "TQ322" not in ids(r)  # VLLM_API_KEY exported before the command counts as a key


def test_docker_secret_redacted_in_render(capsys):
    from tqdeploy.output import make_console

    r = lint_script((FIX / "docker_blog.sh").read_text(), live=False)
    r.render(make_console())
    out = capsys.readouterr().out
    assert "hf_DockerBlogSecretValue987" not in out and "[secret-1]" in out


def test_unbalanced_quote_is_a_one_line_error():
    with pytest.raises(TQError, match="line 1: cannot split"):
        lint_script("vllm serve m --chat-template 'oops\n", live=False)


def test_script_without_vllm_is_an_error():
    with pytest.raises(TQError, match="no vLLM command found"):
        lint_script("#!/bin/sh\necho hello\n", live=False)


def test_first_vllm_line_wins_and_operators_end_it():
    text = "set -e\ncd /srv && echo start\nvllm serve m --host 127.0.0.1 --port 8001; echo done\n"
    r = lint_script(text, live=False)
    assert r.command == ["vllm", "serve", "m", "--host", "127.0.0.1", "--port", "8001"]
    assert r.findings == []


def test_hash_inside_a_word_is_not_a_comment():
    r = lint_script("vllm serve m --served-model-name team#1 --host 127.0.0.1  # served as team#1\n", live=False)
    assert r.command == ["vllm", "serve", "m", "--served-model-name", "team#1", "--host", "127.0.0.1"]
    assert r.findings == []


def test_assigned_then_exported_key_counts_as_an_api_key():
    # serve.sh reads the key from a file into a shell variable, then exports it by name.
    script = (
        'KEY_FILE=/run/secrets/k\nVLLM_API_KEY="$(cat "$KEY_FILE")"\nexport VLLM_API_KEY\n'
        "exec vllm serve /models/m --host 0.0.0.0 --port 8000\n"
    )
    r = lint_script(script, live=False)
    assert "TQ322" not in ids(r)


def test_assigned_but_never_exported_key_does_not_count():
    script = 'VLLM_API_KEY="$(cat /run/secrets/k)"\nexec vllm serve /models/m --host 0.0.0.0 --port 8000\n'
    r = lint_script(script, live=False)
    assert "TQ322" in ids(r)


VARS_SCRIPT = """#!/bin/bash
MODEL=Qwen/Qwen3.6-27B
TP={tp}
{kv_line}
vllm serve "$MODEL" --tensor-parallel-size $TP --port "${{PORT:-8000}}" \\
  --max-model-len ${{MAX_LEN:-{mml}}} --kv-cache-dtype "$KV" --host 127.0.0.1
"""


def _vars(tp=2, kv_line="", mml=32768):
    return VARS_SCRIPT.format(tp=tp, kv_line=kv_line, mml=mml)


def test_shell_variables_are_checked_by_their_values_not_their_names():
    from tqdeploy.model import load_model_facts

    q36 = load_model_facts(str(FIX / "qwen3.6-27b"))
    # $TP=2, ${PORT:-8000}, ${MAX_LEN:-32768}; $KV is set by nobody in the script: not a finding
    good = lint_script(_vars(), live=False, model=q36)
    assert good.findings == [], good.to_dict()
    assert "$TP" in good.command_text and good.fixed_argv == good.command  # variables stay in the command
    # the values the script assigns are what the rules see
    assert ids(lint_script(_vars(tp=3), live=False, model=q36)) == ["TQ340"]
    assert ids(lint_script(_vars(mml=300000), live=False, model=q36)) == ["TQ341"]
    bad_kv = lint_script(_vars(kv_line="export KV=turboquant_5bit"), live=False)
    assert ids(bad_kv) == ["TQ302"]
    assert ids(lint_script(_vars(kv_line="KV=turboquant_4bit_nc"), live=False)) == ["TQ349"]  # prefix caching on
    # a value only known at run time is left alone, as is an unset variable without a default
    assert ids(lint_script(_vars(kv_line='KV="$(cat /etc/kv)"'), live=False)) == []


def test_expand_shell_value():
    from tqdeploy.lint.validate import expand_shell_value

    v = {"A": "1", "B": "x"}
    assert expand_shell_value("$A", v) == "1" and expand_shell_value("${B}y", v) == "xy"
    assert expand_shell_value("${C:-7}", v) == "7" and expand_shell_value("${C-7}", v) == "7"
    assert expand_shell_value("${A:-7}", v) == "1"
    assert expand_shell_value("$C", v) == "$C" and expand_shell_value("$(nproc)", v) == "$(nproc)"


def test_a_trailing_dollar_at_is_left_to_run_time():
    # serve.sh of a multi-node build ends its exec line with "$@" (the node flags multinode.sh sets): lint checks
    # the words it can see, and a "$@" elsewhere is still an argument it reads.
    cmd = find_command('exec vllm serve /models/m --port 8000 "$@"\n')
    assert cmd is not None and cmd.argv == ["exec", "vllm", "serve", "/models/m", "--port", "8000"]
    assert not lint_script('vllm serve /models/m --max-model-len 4096 "$@"\n', live=False).errors
    assert lint_script('vllm serve /models/m "$@" --max-model-len 4096\n', live=False).errors
