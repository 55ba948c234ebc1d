"""A build never takes over a folder that holds another deployment unasked (issue 21: `build --embedded X`
into ./build removed a Qwen deployment's files). Real builds into real folders, through the CLI."""

import hashlib
import json
from pathlib import Path

from tqdeploy.render.guard import RENDERABLE


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _lock(folder: Path) -> dict:
    return json.loads((folder / "tqdeploy.lock.json").read_text())


def test_another_embedded_deployment_is_refused_with_the_files_and_nothing_changes(run_cli, tmp_path):
    out = tmp_path / "build"
    assert run_cli("build", "--embedded", "qwen36-27b-tq", "--out", str(out))[0] == 0
    (out / "models").mkdir()
    (out / "models" / "weights.safetensors").write_bytes(b"user data")
    before = _digests(out)

    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out))
    assert code == 2 and stdout == ""
    message, fix = err.splitlines()
    assert f"{out} holds the deployment 'qwen36-27b-tq', not 'tiny-cpu-demo'" in message
    listed = message.split("its files: ", 1)[1].removesuffix("; nothing was changed").split(", ")
    assert "download.sh" in listed and "gpustack-backend.yaml" in listed  # what the demo would have removed
    assert set(listed) == set(_lock(out)["files"]) | {"tqdeploy.lock.json"}
    assert f"--out {out / 'tiny-cpu-demo'}" in fix and "--take-over" in fix
    assert _digests(out) == before  # not one byte moved

    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out), "--dry-run")
    assert code == 0 and stdout.startswith("--- a/Dockerfile")  # the diff; the notes go to stderr
    assert "note: a build would refuse: " in err and "--take-over" in err
    assert _digests(out) == before


def test_take_over_replaces_only_what_the_lock_proves_unchanged(run_cli, tmp_path):
    out = tmp_path / "build"
    assert run_cli("build", "--embedded", "qwen36-27b-tq", "--out", str(out))[0] == 0
    (out / "download.sh").write_text("#!/bin/sh\n# my edit\n")  # edited since the build: not provably ours

    code, _, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out), "--take-over")
    assert code == 2 and "download.sh" in err and "--force" in err  # the hash guard still stands
    assert (out / "download.sh").read_text() == "#!/bin/sh\n# my edit\n"
    assert _lock(out)["name"] == "qwen36-27b-tq"

    (out / "download.sh").unlink()
    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out), "--take-over", "--json")
    assert code == 0, err
    result = json.loads(stdout)
    assert result["changes"]["removed"] == ["gpustack-backend.yaml"]
    assert _lock(out)["name"] == "tiny-cpu-demo"
    assert set(_digests(out)) - {"secrets/vllm-api-key"} <= RENDERABLE


def test_an_embedded_spec_does_not_replace_a_build_of_a_spec_edited_from_it(run_cli, tmp_path):
    spec = tmp_path / "tqdeploy.toml"
    assert run_cli("init", "--from", "tiny-cpu-demo", "--no-probe", "--out", str(spec))[0] == 0
    text = spec.read_text()
    assert 'name = "tiny-cpu-demo"' in text  # init keeps the embedded name
    spec.write_text(text.replace("max_model_len = 2048", "max_model_len = 256"))
    out = tmp_path / "build"
    assert run_cli("build", str(spec), "--out", str(out))[0] == 0
    before, built_from = _digests(out), _lock(out)["spec_sha256"]

    code, _, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out))
    assert code == 2 and "'tiny-cpu-demo' built from another spec" in err, err
    assert _digests(out) == before

    spec.write_text(text.replace("max_model_len = 2048", "max_model_len = 384"))  # the normal edit-rebuild loop
    code, _, err = run_cli("build", str(spec), "--out", str(out))
    assert code == 0, err
    assert _lock(out)["spec_sha256"] != built_from


def test_rebuilding_the_same_embedded_spec_is_no_change(run_cli, tmp_path):
    out = tmp_path / "build"
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out))[0] == 0
    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out), "--json")
    assert code == 0, err
    assert json.loads(stdout)["changes"]["written"] == []
