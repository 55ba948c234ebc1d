"""One option, one meaning across commands (issue 21): read from the real command tree, not from a list."""

from collections import defaultdict

import pytest

from tqdeploy.cli import COMMANDS, load_command
from tqdeploy.clihelp import RENAMED_OPTIONS


def _options() -> dict[str, dict[str, object]]:
    """Each option spelling -> {command: the click parameter it sets}."""
    table: dict[str, dict[str, object]] = defaultdict(dict)
    for name in COMMANDS:  # every command of the table, loaded as a run loads it
        for param in load_command(name).params:
            for spelling in (*param.opts, *param.secondary_opts):
                if spelling.startswith("-"):
                    table[spelling][name] = param
    return table


def test_each_spelling_sets_the_same_parameter_in_every_command():
    clashes = {
        spelling: {cmd: p.name for cmd, p in users.items()}  # type: ignore[attr-defined]
        for spelling, users in _options().items()
        if len({p.name for p in users.values()}) > 1  # type: ignore[attr-defined]
    }
    assert clashes == {}


def test_the_options_issue_21_named_have_one_meaning():
    table = _options()
    assert set(table["-f"]) == {"logs"} and table["-f"]["logs"].name == "follow"  # type: ignore[attr-defined]
    assert set(table["--timeout"]) == {"up"}  # the wait for ready; down: --grace-period, connect: --request-timeout
    assert "connect" not in table["--model"]  # connect: --served-model-name, as vLLM's own flag
    for command, param in table["--model"].items():  # everywhere else a checkpoint
        assert "checkpoint" in (param.help or "").lower(), command  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("args", "old", "new"),
    [
        (["connect", "openai", "build", "--model", "m"], "--model", "--served-model-name"),
        (["connect", "openai", "build", "--timeout", "5"], "--timeout", "--request-timeout"),
        (["down", "build", "--timeout=5"], "--timeout=5", "--grace-period"),
        (["doctor", "-f", "serve.sh"], "-f", "--file"),
        (["lint", "-f", "serve.sh"], "-f", "--file"),
    ],
)
def test_an_old_spelling_is_refused_with_the_new_name(run_cli, args, old, new):
    code, out, err = run_cli(*args)
    assert code == 2 and out == ""
    message, fix = err.splitlines()
    assert message == f"tqdeploy: error: tqdeploy {args[0]} has no option {old.split('=')[0]}", err
    assert fix.startswith(f"  fix: did you mean {new}? "), err


def test_every_renamed_spelling_points_to_an_option_the_command_has():
    table = _options()
    for command, renames in RENAMED_OPTIONS.items():
        for old, new in renames.items():
            assert command not in table.get(old, {}), (command, old)  # still taken: the rename would hide it
            assert command in table[new], (command, new)


def test_the_new_names_work(run_cli, tmp_path):
    build = tmp_path / "b"
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(build))[0] == 0
    code, out, err = run_cli("down", str(build), "--grace-period", "1")
    assert code == 0 and out.strip() == f"{build}: nothing running", err
    code, out, err = run_cli("connect", "openai", str(build), "--served-model-name", "other", "--json")
    assert code == 0 and '"other"' in out, err
    code, _, err = run_cli("connect", "openai", str(build), "--request-timeout", "nan")
    assert code == 2 and "--request-timeout nan" in err
