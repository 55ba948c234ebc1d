"""The README's GPU loop, its build and download steps as written, against the loopback Hub mirror: `tqdeploy build
--out build/default` creates the key file, `tqdeploy download --spec build/default` from the folder above puts
the model where `tqdeploy up build/default` looks, so up's pre-flight finds neither TQ412 nor TQ413."""

from __future__ import annotations

import json
from pathlib import Path

from support.hubmirror import HubMirror, clean_hub_env, repo  # noqa: F401 (fixtures)
from tqdeploy.deployspec.load import embedded_spec_path


def _default_shaped_spec(tmp_path: Path, mirror: str) -> Path:
    """The embedded default, pointed at the mirror's small repository (the real 27B cannot be fetched here)."""
    text = embedded_spec_path("qwen36-27b-tq").read_text()
    text = text.replace('repo = "Qwen/Qwen3.6-27B"', 'repo = "org/tiny"')
    text = text.replace('mirrors = ["https://huggingface.co"]', f'mirrors = ["{mirror}"]')
    assert 'repo = "org/tiny"' in text and mirror in text
    spec = tmp_path / "tqdeploy.toml"
    spec.write_text(text)
    return spec


def test_download_with_the_build_dir_lands_where_up_looks(repo, tmp_path, run_cli, monkeypatch):  # noqa: F811
    from tqdeploy.runtime.deployment import load_deployment
    from tqdeploy.runtime.preflight import host_findings

    monkeypatch.chdir(tmp_path)
    with HubMirror(repo) as m:
        spec = _default_shaped_spec(tmp_path, m.url)
        code, out, err = run_cli("build", str(spec), "--out", "build/default")
        assert code == 0, err
        assert "created the API key file build/default/secrets/vllm-api-key (mode 0600)" in out
        code, out, err = run_cli("download", "--spec", "build/default", "--json")
    assert code == 0, err
    data = json.loads(out)
    dep = load_deployment(Path("build/default"))
    assert Path(data["dest"]) == dep.model_dir == (tmp_path / "build/default/models/org--tiny")
    assert (dep.model_dir / "config.json").is_file() and data["commit"] == repo.commit
    assert data["lock"]["resolved_commit"] == repo.commit  # recorded in the build's own lock
    assert not (tmp_path / "models").exists()  # nothing under the current folder, where up never looks
    found = {f.id for f in host_findings(dep)}
    assert not found & {"TQ412", "TQ413"}, found
    assert run_cli("build", "--check", "build/default")[0] == 0  # the key file and the model are no drift


def test_download_spec_of_a_folder_without_a_spec_is_one_line(tmp_path, run_cli):
    code, _, err = run_cli("download", "--spec", str(tmp_path))
    assert code == 2 and "Traceback" not in err and str(tmp_path / "tqdeploy.toml") in err
