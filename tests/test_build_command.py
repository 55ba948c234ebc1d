"""The build makes the spec's vLLM command once, lints that value once, and every file repeats it (issue 36: before,
four callers recomputed the flags and lint rebuilt the command from the spec on its own)."""

from __future__ import annotations

import json
import shlex

import tqdeploy.deployspec.accel as accel_module
import tqdeploy.lint.specflags as specflags
import tqdeploy.render.build as build
import tqdeploy.render.files as files
from tqdeploy.deployspec import load_spec
from tqdeploy.deployspec.command import vllm_command
from tqdeploy.deployspec.load import embedded_spec_path


def test_a_build_makes_and_lints_its_command_once(tmp_path, monkeypatch):
    made, linted = [], []
    real_command, real_lint = build.vllm_command, specflags.lint_command
    monkeypatch.setattr(build, "vllm_command", lambda spec: made.append(spec) or real_command(spec))
    monkeypatch.setattr(specflags, "lint_command", lambda argv, **kw: linted.append(argv) or real_lint(argv, **kw))
    spec_file = tmp_path / "tqdeploy.toml"
    spec_file.write_text(embedded_spec_path("tiny-cpu-demo").read_text())
    result = build.run_build(spec_file, out=tmp_path / "b", dry_run=True, progress=False)
    assert len(made) == 1 and len(linted) == 1
    assert linted[0] == real_command(made[0]).argv  # lint saw the command the build made
    assert result.name == "tiny-cpu-demo"


def test_a_build_computes_its_start_up_accelerators_once(tmp_path, monkeypatch):
    """The notes, the templates and the cache fingerprint all read the one value make_build computed (before, each
    of the three computed its own)."""
    computed = []
    real = accel_module.accelerators

    def counting(spec):
        computed.append(spec)
        return real(spec)

    for module in (build, files):
        monkeypatch.setattr(module, "accelerators", counting)
    spec = load_spec(embedded="qwen36-27b-tq")
    built, notes = build.make_build(spec, tmp_path, None, resolve_digests=False)
    assert len(computed) == 1
    assert built.accel.summary() in notes
    lock = json.loads(built.files["tqdeploy.lock.json"].data)
    assert lock["cache_fingerprint"]["factors"]["env"]["startup_plan"] == built.accel.startup_plan


def test_every_file_repeats_the_linted_command(tmp_path):
    spec = load_spec(embedded="tiny-cpu-demo")
    command = vllm_command(spec)
    built, _ = build.make_build(spec, tmp_path, None, resolve_digests=False)
    assert built.command == command and built.flag_check.problems == ()
    serve = built.files["serve.sh"].data.decode()
    words = shlex.split(serve.split("exec ", 1)[1].replace("\\\n", " ").split("\n", 1)[0])
    flags = words[words.index(command.flags[0]) :]
    assert flags[: len(command.flags)] == list(command.flags)  # serve.sh execs the linted flags, in order
    lock = json.loads(built.files["tqdeploy.lock.json"].data)
    assert lock["cache_fingerprint"]["factors"]["flags"] == list(command.flags)


def test_tool_calling_flags_are_linted_with_the_rest(tmp_path):
    """Tool-call flags were rendered into serve.sh but not in the command lint checked; now they are one value."""
    text = (
        embedded_spec_path("qwen36-27b-tq")
        .read_text()
        .replace("extra_args = []", "extra_args = []\ntool_calling = true")
    )
    spec_file = tmp_path / "s.toml"
    spec_file.write_text(text)
    spec = load_spec(spec_file)
    command = vllm_command(spec)
    assert command.flags[-5:] == (
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "qwen3_coder",
        "--reasoning-parser",
        "qwen3",
    )
    check = specflags.check_flags(spec, command)
    assert check.problems == ()  # vLLM 0.32.0 knows the three flags and their values
