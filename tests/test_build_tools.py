"""Rendered files under the real tools: hadolint, shellcheck, the compose schema, Kubernetes schemas
(offline), `tqdeploy lint` on serve.sh, and the scripts themselves run with sh."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tqdeploy.deployspec import load_spec
from tqdeploy.render import render_files, skipped_outputs, write_build

TESTS = Path(__file__).resolve().parent
FIX = TESTS / "fixtures" / "build"
BIN = Path(sys.executable).parent
CASES = {
    "qwen36-27b-tq": dict(),
    "tiny-cpu-demo": dict(embedded="tiny-cpu-demo"),
    "multinode": dict(path=FIX / "multinode.toml"),
}
# Any attempt to reach the network fails fast: the validators must work offline.
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}


def _tool(name: str) -> str:
    exe = BIN / name
    assert exe.exists(), f"{exe} missing: pip install the test tools (see the build docs)"
    return str(exe)


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    out = {}
    for case, kw in CASES.items():
        spec = load_spec(kw.get("path"), embedded=kw.get("embedded"))
        d = tmp_path_factory.mktemp(case)
        write_build(d, render_files(spec))
        out[case] = d
    return out


def _run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hadolint_passes_at_warning_level(builds, case):
    dockerfile = builds[case] / "Dockerfile"
    res = _run([_tool("hadolint"), "--no-color", "--failure-threshold", "warning", dockerfile])
    assert res.returncode == 0, res.stdout + res.stderr
    # Ignores are allowed only with a reason next to them.
    for line in dockerfile.read_text().splitlines():
        if "hadolint ignore" in line:
            assert re.search(r"hadolint ignore=\S+\s+#?\s*\S+", line), f"ignore without a reason: {line}"


def test_hadolint_would_catch_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM vllm/vllm-openai:latest\nENV API_KEY=secret\nENTRYPOINT vllm serve\n")
    res = _run([_tool("hadolint"), "--no-color", "--failure-threshold", "warning", bad])
    assert res.returncode == 1 and "DL3007" in res.stdout


@pytest.mark.parametrize("case", sorted(CASES))
def test_shellcheck_passes_rendered_scripts(builds, case):
    scripts = sorted(builds[case].glob("*.sh"))
    assert {"serve.sh", "healthcheck.sh"} <= {s.name for s in scripts}
    res = _run([_tool("shellcheck"), "--shell=sh", *scripts])
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("case", sorted(set(CASES) - {"multinode"}))
def test_compose_file_matches_the_compose_spec_offline(builds, case):
    env = {**os.environ, **OFFLINE}
    res = _run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", builds[case] / "compose.yaml"], env=env
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_compose_schema_check_rejects_a_broken_file(tmp_path):
    bad = tmp_path / "compose.yaml"
    bad.write_text("services:\n  x:\n    ipc: host\n    ulimits: 5\n    restart: sometimes-maybe\n")
    res = _run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", bad], env={**os.environ, **OFFLINE}
    )
    assert res.returncode == 1


def _k8s_validate(doc: dict) -> list[str]:
    import kubernetes_validate

    try:
        kubernetes_validate.validate(doc, "1.30.0", strict=True)
    except kubernetes_validate.ValidationError as err:
        return [str(err.message)]
    return []


def test_kubernetes_manifests_validate_offline(builds):
    res = _run(
        [
            _tool("kubernetes-validate"),
            "--strict",
            "-k",
            "1.30.0",
            *sorted((builds["qwen36-27b-tq"] / "k8s").glob("*.yaml")),
        ],
        env={**os.environ, **OFFLINE},
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("passed") == 5  # deployment, service, two PVCs, the warm-up Job


def test_leaderworkerset_pod_templates_validate(builds):
    import yaml

    k8s = builds["multinode"] / "k8s"
    assert sorted(p.name for p in k8s.glob("*.yaml")) == ["leaderworkerset.yaml", "pvc.yaml", "service.yaml"]
    lws = yaml.safe_load((k8s / "leaderworkerset.yaml").read_text())
    assert lws["kind"] == "LeaderWorkerSet" and lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    # The CRD is not in Kubernetes' schemas: validate each pod template as a core PodTemplate.
    for role in ("leaderTemplate", "workerTemplate"):
        tpl = lws["spec"]["leaderWorkerTemplate"][role]
        doc = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": role.lower()}, "template": tpl}
        assert _k8s_validate(doc) == []
        env = {e["name"]: e["value"] for e in tpl["spec"]["containers"][0]["env"]}
        assert env["TQ_ROLE"] == role.replace("Template", "")
    for doc in yaml.safe_load_all((k8s / "pvc.yaml").read_text()):
        if doc:
            assert doc["spec"]["accessModes"] == ["ReadWriteMany"]
            assert _k8s_validate(doc) == []
    assert (
        _k8s_validate(
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": "x"},
                "template": {"spec": {"containers": [{"name": "c", "image": 5}]}},
            }
        )
        != []
    )


def test_deployment_carries_probes_gpu_requests_shm_and_anti_affinity(builds):
    import yaml

    dep = yaml.safe_load((builds["qwen36-27b-tq"] / "k8s" / "deployment.yaml").read_text())
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    for probe in ("startupProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["path"] == "/health"
    # readiness sends a real request (tests/test_readyprobe.py runs the script), the key read from the Secret's file
    command = c["readinessProbe"]["exec"]["command"]
    assert command[:2] == ["python3", "/opt/tqdeploy/readyprobe.py"] and command[2] == "--key-file"
    mount = next(m for m in c["volumeMounts"] if m["name"] == "api-key")
    assert command[3].startswith(mount["mountPath"] + "/") and c["readinessProbe"]["timeoutSeconds"] == 10
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 2000
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Gi"}
    assert pod["affinity"]["podAntiAffinity"]


def test_compose_binds_loopback_and_reserves_gpus(builds):
    import yaml

    svc = yaml.safe_load((builds["qwen36-27b-tq"] / "compose.yaml").read_text())["services"]["qwen36-27b-tq"]
    assert svc["ports"] == ["127.0.0.1:8000:8000"]
    assert svc["ipc"] == "host" and svc["ulimits"]["memlock"] == {"soft": -1, "hard": -1}
    assert svc["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}
    ]
    assert svc["healthcheck"]["test"] == ["CMD", "python3", "/opt/tqdeploy/readyprobe.py"]  # a real request
    # compose runs one host: a multi-node spec gets none (a Ray leader would wait for workers forever)
    assert not (builds["multinode"] / "compose.yaml").exists()
    assert "compose runs on one host" in skipped_outputs(load_spec(FIX / "multinode.toml"))["compose.yaml"]


def test_compose_publishes_where_the_spec_says_and_reserves_the_listed_gpus(tmp_path):
    import yaml

    from tqdeploy.deployspec.load import embedded_spec_path

    text = embedded_spec_path("qwen36-27b-tq").read_text().replace('host = "127.0.0.1"', 'host = "0.0.0.0"')
    text = text.replace('gpus = "all"', "gpus = [2, 3]").replace("tensor_parallel_size = 1", "tensor_parallel_size = 2")
    (tmp_path / "s.toml").write_text(text)
    write_build(tmp_path / "b", render_files(load_spec(tmp_path / "s.toml")))
    svc = yaml.safe_load((tmp_path / "b" / "compose.yaml").read_text())["services"]["qwen36-27b-tq"]
    assert svc["ports"] == ["0.0.0.0:8000:8000"]
    assert svc["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "device_ids": ["2", "3"], "capabilities": ["gpu"]}
    ]
    res = _run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", tmp_path / "b" / "compose.yaml"],
        env={**os.environ, **OFFLINE},
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_monitoring_uses_vllms_real_metric_names(builds):
    import yaml

    dash = json.loads((builds["qwen36-27b-tq"] / "monitoring" / "grafana-dashboard.json").read_text())
    exprs = " ".join(t["expr"] for p in dash["panels"] for t in p["targets"])
    for metric in (
        "vllm:kv_cache_usage_perc",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
        "vllm:num_preemptions_total",
    ):
        assert metric in exprs
    assert "gpu_cache_usage" not in exprs  # the pre-0.9 name
    assert 'model_name="qwen3.6-27b"' in exprs
    prom = yaml.safe_load((builds["qwen36-27b-tq"] / "monitoring" / "prometheus.yml").read_text())
    assert prom["scrape_configs"][0]["static_configs"][0]["targets"] == ["127.0.0.1:8000"]
    nginx = (builds["qwen36-27b-tq"] / "nginx.conf").read_text()
    assert "proxy_buffering off;" in nginx and "proxy_read_timeout 3600s;" in nginx


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_serve_sh_passes_tqdeploy_lint(builds, case, run_cli):
    code, stdout, err = run_cli("lint", "--file", str(builds[case] / "serve.sh"), "--json", "--no-live")
    assert code == 0, stdout + err
    report = json.loads(stdout)
    found = sorted((f["id"], f["severity"]) for f in report["findings"])
    # Every embedded spec is keyed (the demo too, since issue 17), so no TQ322 (an unkeyed wildcard bind);
    # `make run` lints build/default/serve.sh: it must stay free of findings. The TurboQuant specs keep vLLM's
    # prefix caching (a coding client's throughput rests on it), so they carry TQ349's warning and nothing else.
    turboquant = "turboquant_" in (builds[case] / "tqdeploy.toml").read_text()
    assert found == ([("TQ349", "warn")] if turboquant else [])


def test_lint_refuses_a_spec_with_a_false_flag(run_cli, tmp_path):
    from tqdeploy.deployspec.load import embedded_spec_path

    text = (
        embedded_spec_path("qwen36-27b-tq")
        .read_text()
        .replace("extra_args = []", 'extra_args = ["--quantization", "turboquant"]')
    )
    (tmp_path / "s.toml").write_text(text)
    code, _, err = run_cli("build", str(tmp_path / "s.toml"), "--out", str(tmp_path / "b"))
    assert code == 2 and not (tmp_path / "b").exists()
    assert re.match(rf"tqdeploy: error: {re.escape(str(tmp_path / 's.toml'))}:\d+: vllm.extra_args: ", err)


def _sh(script: Path, env: dict[str, str]):
    return subprocess.run(
        ["sh", str(script)], capture_output=True, text=True, timeout=30, env={"PATH": os.environ["PATH"], **env}
    )


def test_serve_sh_fails_fast_when_the_model_is_missing(builds, tmp_path):
    res = _sh(
        builds["qwen36-27b-tq"] / "serve.sh",
        {
            "TQ_MODEL_DIR": str(tmp_path / "absent"),
            "VLLM_CACHE_ROOT": str(tmp_path / "c"),
            "HF_HOME": str(tmp_path / "h"),
        },
    )
    assert res.returncode == 66
    assert res.stderr.splitlines()[0] == f"serve.sh: exit 66 (model-missing): {tmp_path / 'absent'} has no config.json"


def test_a_multi_node_worker_fails_fast_on_a_missing_model_too(builds, tmp_path):
    res = _sh(
        builds["multinode"] / "serve.sh",
        {"TQ_ROLE": "worker", "TQ_MODEL_DIR": str(tmp_path / "absent"), "LWS_LEADER_ADDRESS": "leader.example"},
    )
    assert res.returncode == 66 and "(model-missing)" in res.stderr


def test_serve_sh_refuses_to_start_without_its_api_key(builds, tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    res = _sh(
        builds["qwen36-27b-tq"] / "serve.sh",
        {
            "TQ_MODEL_DIR": str(tmp_path / "m"),
            "TQ_API_KEY_FILE": str(tmp_path / "nokey"),
            "VLLM_CACHE_ROOT": str(tmp_path / "c"),
            "HF_HOME": str(tmp_path / "h"),
        },
    )
    assert res.returncode == 67
    assert "API key file" in res.stderr and "never goes on the command line" in res.stderr


def test_download_sh_calls_tqdeploy_download_with_every_mirror_in_order(builds, tmp_path):
    # A stand-in `tqdeploy` on PATH records its argv: download.sh's contract with the download command
    # (whose own tests fetch from a loopback mirror).
    fake = tmp_path / "bin" / "tqdeploy"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "$*" > "$TQ_CALLS"\nexit 3\n')
    fake.chmod(0o755)
    calls = tmp_path / "calls"
    res = subprocess.run(
        ["sh", str(builds["multinode"] / "download.sh")],
        capture_output=True,
        text=True,
        env={"PATH": f"{fake.parent}:/usr/bin:/bin", "TQ_CALLS": str(calls), "TQ_MODELS_DIR": str(tmp_path / "models")},
    )
    assert res.returncode == 3  # its exit status is download.sh's
    rev = "Qwen/Qwen3.6-27B@0123456789abcdef0123456789abcdef01234567"
    assert calls.read_text().splitlines() == [
        f"download {rev} --mirror https://hf-mirror.internal.example --mirror https://huggingface.co "
        f"--to {tmp_path / 'models' / 'Qwen--Qwen3.6-27B'}"
    ]


def test_download_sh_explains_a_missing_tqdeploy(builds, tmp_path):
    res = subprocess.run(
        ["/bin/sh", str(builds["qwen36-27b-tq"] / "download.sh")],
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path)},
    )
    assert res.returncode == 69 and "tqdeploy is not on PATH" in res.stderr


@pytest.fixture(scope="module")
def nginx_binary(tmp_path_factory):
    """Debian's nginx binary, downloaded and unpacked (not installed); its libraries are the system's."""
    import shutil

    if shutil.which("nginx"):
        return shutil.which("nginx")
    tmp = tmp_path_factory.mktemp("nginx")
    for _attempt in (0, 1):
        res = _run(["apt-get", "download", "nginx"], cwd=tmp)
        if res.returncode == 0:
            break
        _run(["apt-get", "update", "-qq"])
    else:
        pytest.skip(f"nginx not downloadable here: {res.stderr.strip()[-200:]}")
    deb = next(tmp.glob("nginx_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "root")], check=True)
    return str(tmp / "root" / "usr" / "sbin" / "nginx")


def _nginx_conf(tmp_path: Path, include: Path) -> tuple[Path, Path]:
    """A minimal nginx.conf around the rendered file (its http {} block), with every path under tmp_path."""
    prefix = tmp_path / "prefix"
    (prefix / "logs").mkdir(parents=True)
    temp = "\n".join(
        f"  {kind}_temp_path {prefix / 'tmp'};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        f"pid {prefix / 'nginx.pid'};\nerror_log stderr;\nevents {{}}\nhttp {{\n  access_log off;\n"
        f"{temp}\n  include {include};\n}}\n"
    )
    return prefix, conf


@pytest.mark.parametrize("case", sorted(CASES))
def test_nginx_accepts_the_rendered_proxy_config(builds, case, nginx_binary, tmp_path):
    prefix, conf = _nginx_conf(tmp_path, builds[case] / "nginx.conf")
    res = _run([nginx_binary, "-t", "-p", prefix, "-c", conf])
    assert res.returncode == 0, res.stderr
    assert "test is successful" in res.stderr
    broken = tmp_path / "broken.conf"
    broken.write_text((builds[case] / "nginx.conf").read_text().replace("proxy_buffering off;", "proxy_buffering of;"))
    conf.write_text(conf.read_text().replace(str(builds[case] / "nginx.conf"), str(broken)))
    assert _run([nginx_binary, "-t", "-p", prefix, "-c", conf]).returncode == 1


def test_an_ipv6_address_is_bracketed_where_a_port_follows(nginx_binary, tmp_path):
    import yaml

    from tqdeploy.deployspec.load import embedded_spec_path

    (tmp_path / "s.toml").write_text(
        embedded_spec_path("qwen36-27b-tq").read_text().replace('host = "127.0.0.1"', 'host = "::1"')
    )
    out = tmp_path / "b"
    write_build(out, render_files(load_spec(tmp_path / "s.toml")))
    svc = yaml.safe_load((out / "compose.yaml").read_text())["services"]["qwen36-27b-tq"]
    assert svc["ports"] == ["[::1]:8000:8000"]
    prom = yaml.safe_load((out / "monitoring" / "prometheus.yml").read_text())
    assert prom["scrape_configs"][0]["static_configs"][0]["targets"] == ["[::1]:8000"]
    assert "    server [::1]:8000;\n" in (out / "nginx.conf").read_text()
    prefix, conf = _nginx_conf(tmp_path, out / "nginx.conf")
    res = _run([nginx_binary, "-t", "-p", prefix, "-c", conf])
    assert res.returncode == 0, res.stderr


def test_cpu_variant_manifests_validate_and_request_no_gpu(tmp_path):
    import yaml

    from tqdeploy.deployspec.load import embedded_spec_path

    text = embedded_spec_path("tiny-cpu-demo").read_text()
    assert 'api_key_file = "./secrets/vllm-api-key"' in text  # keyed, so k8s/ is rendered
    (tmp_path / "s.toml").write_text(text)
    out = tmp_path / "b"
    write_build(out, render_files(load_spec(tmp_path / "s.toml")))
    manifests = sorted((out / "k8s").glob("*.yaml"))
    res = _run([_tool("kubernetes-validate"), "--strict", "-k", "1.30.0", *manifests], env={**os.environ, **OFFLINE})
    assert res.returncode == 0, res.stdout + res.stderr
    pod = yaml.safe_load((out / "k8s" / "deployment.yaml").read_text())["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in json.dumps(pod)
    assert pod["containers"][0]["resources"]["requests"] == {"cpu": "2", "memory": "8Gi"}
