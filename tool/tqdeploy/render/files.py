"""Render a validated spec into the build files, in memory: {relative path: RenderedFile}."""

from __future__ import annotations

from dataclasses import dataclass

from tqdeploy.deployspec.accel import Accelerators, accelerators
from tqdeploy.deployspec.command import VllmCommand, vllm_command
from tqdeploy.deployspec.model import Spec
from tqdeploy.filenames import SPEC_FILE_NAME
from tqdeploy.render.cacheimport import PYZ
from tqdeploy.render.context import build_context
from tqdeploy.render.env import make_env
from tqdeploy.render.fingerprint import cache_fingerprint
from tqdeploy.render.lock import LOCK_NAME, make_lock
from tqdeploy.resources import data_dir
from tqdeploy.startcache.zipapp import build_pyz

EXECUTABLE = 0o755
REGULAR = 0o644


@dataclass(frozen=True)
class RenderedFile:
    data: bytes
    mode: int = REGULAR


def template_plan(spec: Spec) -> list[tuple[str, str, int]]:
    """(output path, template name, mode) for every file this spec renders."""
    keyed = bool(spec.server.api_key_file)
    plan = [
        ("Dockerfile", f"Dockerfile.{spec.variant}.j2", REGULAR),
        ("serve.sh", "serve.sh.j2", EXECUTABLE),
        ("healthcheck.sh", "healthcheck.sh.j2", EXECUTABLE),
        ("readyprobe.py", "readyprobe.py.j2", REGULAR),  # compose's healthcheck and k8s readiness: a real request
        ("nginx.conf", "nginx.conf.j2", REGULAR),
        ("monitoring/prometheus.yml", "monitoring/prometheus.yml.j2", REGULAR),
        ("monitoring/grafana-dashboard.json", "monitoring/grafana-dashboard.json.j2", REGULAR),
    ]
    if not spec.multi_node:  # compose runs one host; see skipped_outputs
        plan.append(("compose.yaml", "compose.yaml.j2", REGULAR))
        plan.append(("warmup.sh", "warmup.sh.j2", EXECUTABLE))
    else:  # the leader's and workers' node flags, sourced by serve.sh; what the node checks read (multinode.json)
        plan.append(("multinode.sh", "multinode.sh.j2", REGULAR))
        plan.append(("multinode.json", "multinode.json.j2", REGULAR))
    if keyed:
        plan.append(("launch_vllm.py", "launch_vllm.py.j2", REGULAR))
    if spec.model.repo:
        plan.append(("download.sh", "download.sh.j2", EXECUTABLE))
    if spec.variant == "gpu" and not spec.multi_node:  # see skipped_outputs
        plan.append(("gpustack-backend.yaml", "gpustack-backend.yaml.j2", REGULAR))
    if keyed:
        # A Service reaches the pod from the whole cluster: only with an API key (see skipped_outputs).
        workload = "leaderworkerset" if spec.multi_node else "deployment"
        plan += [
            (f"k8s/{workload}.yaml", f"k8s/{workload}.yaml.j2", REGULAR),
            ("k8s/service.yaml", "k8s/service.yaml.j2", REGULAR),
            ("k8s/pvc.yaml", "k8s/pvc.yaml.j2", REGULAR),
        ]
        if not spec.multi_node:  # a warm-up Job of one pod; a LeaderWorkerSet group warms up on its first start
            plan.append(("k8s/warmup-job.yaml", "k8s/warmup-job.yaml.j2", REGULAR))
    return plan


def skipped_outputs(spec: Spec) -> dict[str, str]:
    """Outputs left out for this spec, with the reason (shown by `build`)."""
    out = {}
    if not spec.server.api_key_file:
        out["k8s/"] = (
            "a cluster Service exposes the server beyond loopback, which needs an API key: "
            "set server.api_key_file to render Kubernetes manifests"
        )
    if not spec.model.repo:
        out["download.sh"] = "model.path is a local directory: nothing to download"
    if spec.variant != "gpu":
        out["gpustack-backend.yaml"] = 'GPUStack runs the official vLLM CUDA image: only for variant = "gpu"'
    elif spec.multi_node:
        out["gpustack-backend.yaml"] = (
            f"resources.nodes = {spec.resources.nodes}: the GPUStack backend file is for one node"
        )
    if spec.multi_node:
        # One compose service on one host would start a leader waiting for workers that never join.
        out["compose.yaml"] = (
            f"resources.nodes = {spec.resources.nodes}: compose runs on one host; "
            "k8s/leaderworkerset.yaml serves across nodes"
            if spec.server.api_key_file
            else f"resources.nodes = {spec.resources.nodes}: compose runs on one host"
        )
        out["warmup.sh"] = (
            f"resources.nodes = {spec.resources.nodes}: the one-shot warm-up starts one node; "
            "a LeaderWorkerSet group fills the cache volume on its first start"
        )
    return out


def render_files(
    spec: Spec, command: VllmCommand | None = None, accel: Accelerators | None = None
) -> dict[str, RenderedFile]:
    """Every file of the build. command: the spec's vLLM command as the build linted it; accel: its start-up
    accelerators as the build reported them (each computed here when not given). The templates, GPUStack's
    parameters, the cache fingerprint and the lock all repeat those one values."""
    command = command or vllm_command(spec)
    accel = accel or accelerators(spec)
    fingerprint = cache_fingerprint(spec, command, accel)
    ctx = build_context(spec, command, fingerprint, accel)
    env = make_env([data_dir("templates"), data_dir("dockerfiles")])
    files: dict[str, RenderedFile] = {}
    for out, template, mode in template_plan(spec):
        files[out] = RenderedFile(env.get_template(template).render(**ctx).encode("utf-8"), mode)
    if ctx["cache_import"]:  # the image's one-shot cache import runs tqdeploy's own checks (startcache/zipapp.py)
        files[PYZ] = RenderedFile(build_pyz(), REGULAR)
    files[SPEC_FILE_NAME] = RenderedFile(_spec_copy(spec), REGULAR)
    files[LOCK_NAME] = RenderedFile(make_lock(spec, fingerprint, {k: v.data for k, v in files.items()}), REGULAR)
    return dict(sorted(files.items()))


def _spec_copy(spec: Spec) -> bytes:
    """The spec as given (comments kept), so the build dir says what it was made from."""
    text = spec.text if spec.text.endswith("\n") else spec.text + "\n"
    return text.encode("utf-8")
