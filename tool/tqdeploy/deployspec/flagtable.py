"""The one table of vLLM flags that the spec owns: which spec key renders each flag, and which ones
vllm.extra_args may not set a second time.

Three readers, one table: Spec.vllm_flags renders the rows with a `value` key (in this order, which is the
order of the rendered command line), validate refuses an extra_args item that reads as a `managed` row
(in this order: the first row a flag prefix reaches is the one named), and lint's spec check
(tqdeploy.lint.specflags) files a lint error on a flag under the spec key of its row (`findings_key`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecFlag:
    flag: str  # vLLM's spelling
    key: str  # the spec key that owns it (dotted; text for the rows that several keys own)
    value: str | None = None  # the [vllm] key whose value Spec.vllm_flags renders after the flag
    managed: bool = True  # whether vllm.extra_args may not set it (the spec has a key for it)
    owner: str = ""  # how a refusal names the owner, when not just `key`
    findings_key: bool = False  # whether a lint finding on this flag is filed under `key`

    @property
    def use_instead(self) -> str:
        return self.owner or self.key


NODES_OWNER = "resources.nodes"  # one pipeline stage per node, Ray across nodes (Spec.vllm_flags)

FLAG_TABLE: tuple[SpecFlag, ...] = (
    SpecFlag("--model", "model.repo / model.path"),
    SpecFlag("--served-model-name", "model.served_name", findings_key=True),  # rendered first, always
    SpecFlag("--revision", "model.revision"),
    SpecFlag("--tensor-parallel-size", "vllm.tensor_parallel_size", "tensor_parallel_size", findings_key=True),
    SpecFlag("-tp", "vllm.tensor_parallel_size"),
    SpecFlag("--dtype", "vllm.dtype", "dtype", findings_key=True),
    SpecFlag("--kv-cache-dtype", "vllm.kv_cache_dtype", "kv_cache_dtype", findings_key=True),
    SpecFlag("--max-model-len", "vllm.max_model_len", "max_model_len", findings_key=True),
    SpecFlag("--max-num-seqs", "vllm.max_num_seqs", "max_num_seqs", findings_key=True),
    SpecFlag("--gpu-memory-utilization", "vllm.gpu_memory_utilization", "gpu_memory_utilization", findings_key=True),
    # extra_args may give --load-format itself; deployspec/accel.py refuses it only beside vllm.load_format
    SpecFlag("--load-format", "vllm.load_format", "load_format", managed=False, findings_key=True),
    SpecFlag("--host", "server.host", findings_key=True),  # VllmCommand.argv and serve.sh add host and port
    SpecFlag("--port", "server.port", findings_key=True),
    SpecFlag(
        "--api-key",
        "server.api_key_file",
        owner="server.api_key_file (the key is read from a file into the server's arguments, never argv or env)",
    ),
    SpecFlag("--pipeline-parallel-size", NODES_OWNER),
    SpecFlag("--distributed-executor-backend", NODES_OWNER),
)

# flag -> how a refusal names its owner, in table order (validate: extra_args may not set these)
MANAGED_FLAGS = {row.flag: row.use_instead for row in FLAG_TABLE if row.managed}
# flag -> the spec key a lint finding on it is filed under (the rest go to vllm.extra_args)
FLAG_TO_KEY = {row.flag: row.key for row in FLAG_TABLE if row.findings_key}
# (flag, [vllm] key) in command-line order, for Spec.vllm_flags
RENDERED_FLAGS = tuple((row.flag, row.value) for row in FLAG_TABLE if row.value is not None)
