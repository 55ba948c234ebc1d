import subprocess

from tqdeploy import __version__


def test_version(run_cli):
    code, out, _ = run_cli("--version")
    assert code == 0
    assert out.strip() == f"tqdeploy {__version__}"


def test_unknown_command_is_usage_error(run_cli):
    code, _, err = run_cli("no-such-command")
    assert code == 2
    assert "No such command" in err


def test_explain_unknown_id_is_one_line_error(run_cli):
    code, _, err = run_cli("explain", "TQ999")
    assert code == 2
    assert err.startswith("tqdeploy: error: no check named 'TQ999'")
    assert "Traceback" not in err


def test_help_does_not_import_heavy_libraries(tqdeploy_exe):
    # --help must stay instant: none of the heavy libraries may be imported for it.
    code = (
        "import sys; from tqdeploy.cli import app; "
        "heavy = [m for m in ('pynvml','docker','huggingface_hub','vllm','torch','jinja2') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    python = tqdeploy_exe.rsplit("/", 1)[0] + "/python"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
    res = subprocess.run([tqdeploy_exe, "--help"], capture_output=True, text=True)
    assert res.returncode == 0
    assert "Usage: tqdeploy" in res.stdout
