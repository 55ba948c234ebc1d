"""`tqdeploy download` under huggingface_hub 1.x, as it runs inside a vLLM environment that keeps its own hub client:
the lent H200's vLLM 0.25.0 stack has huggingface_hub 1.33.0 with httpx 0.28, and there the download died with
"TypeError: 'Timeout' object cannot be interpreted as an integer" (an httpx2 timeout handed to an httpx client).
`make test-deps` installs that release into .cache/hf1 (pip --target); it goes first on sys.path here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.hubmirror import HubMirror, Repo, clean_hub_env, repo  # noqa: F401 (fixtures)

REPO_ROOT = Path(__file__).resolve().parents[1]
HF1_SITE = REPO_ROOT / ".cache" / "hf1"


def test_download_through_a_mirror_with_huggingface_hub_1x(repo, tmp_path):  # noqa: F811
    assert (HF1_SITE / "huggingface_hub").is_dir(), "run `make test-deps`: it installs huggingface_hub 1.33.0 there"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "tool"), str(HF1_SITE)]))
    probe = "import huggingface_hub, sys; print(huggingface_hub.__version__)"
    version = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert version.stdout.strip().startswith("1."), version.stdout
    with HubMirror(repo) as m:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tqdeploy",
                "download",
                f"org/tiny@{repo.commit}",
                "--mirror",
                m.url,
                "--to",
                str(tmp_path / "m"),
                "--json",
            ],  # fmt: skip
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["complete"] is True and data["commit"] == repo.commit
    assert {f["endpoint"] for f in data["files"]} == {m.url}
