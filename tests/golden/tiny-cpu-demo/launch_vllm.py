# Rendered by tqdeploy 0.1.0 from spec tiny-cpu-demo
# (spec sha256 675a31358f523a7dfcd373efec9fad3f88825c38626cc421ed7ec24366f9246f).
"""Start vLLM 0.32.0's `vllm serve` with the API key read from a file into the API server alone.

Usage: python3 launch_vllm.py MODEL [vllm serve flags]; the key file is $TQ_API_KEY_FILE (serve.sh sets it).

Why not `export VLLM_API_KEY`: every process vLLM starts inherits its environment, and vLLM 0.25.0's
vllm/envs.py compile_factors() hashes every VLLM_* variable it knows except an ignore list without
VLLM_API_KEY into the torch.compile cache key, and vllm/compilation/backends.py writes the raw values to
torch_compile_cache/<hash>/.../cache_key_factors.json on the cache volume (0.32.0 ignores it). Why not
--api-key: argv is readable by every user (ps, /proc/PID/cmdline).

Here the key never enters os.environ or argv: the flags are parsed by vLLM's own `serve` parser
(vllm/entrypoints/cli/serve.py ServeSubcommand.subparser_init + validate, as `vllm serve` does) and the key is
set on the parsed args in this process. The API server reads `args.api_key` before VLLM_API_KEY
(0.25.0 vllm/entrypoints/openai/api_server.py build_app; 0.32.0 vllm/entrypoints/serve/middleware/register.py);
the EngineCore gets only the engine's fields (AsyncEngineArgs.from_cli_args), never api_key. The key is a str
whose repr and str are "[redacted]": vLLM 0.25.0 logs "non-default args" unredacted (serve/utils/api_utils.py
log_non_default_args), and the middleware hashes the real characters (t.encode("utf-8")).
"""

import multiprocessing
import multiprocessing.context
import os
import stat
import sys
from typing import NoReturn

KEY_MAX_BYTES = 4096
EXIT_KEY = 67  # as serve.sh: the key file is missing, empty or not a key
EXIT_REFUSED = 68  # the environment or the flags would put the key where others read it


class _Key(str):
    """The API key; logs and reprs print a placeholder."""

    def __repr__(self) -> str:
        return "'[redacted]'"

    def __str__(self) -> str:
        return "[redacted]"


def _exit(code: int, reason: str, message: str, fix: str) -> NoReturn:
    # The first line is the reason line `tqdeploy up` classifies a failed start by (runtime/exitreason.py):
    # `<script>: exit <code> (<reason>): <message>`; an exit status alone says nothing about why.
    print(f"launch_vllm.py: exit {code} ({reason}): {message}", file=sys.stderr)
    print(f"  fix: {fix}", file=sys.stderr)
    sys.exit(code)


def _fail(message: str) -> NoReturn:
    _exit(EXIT_KEY, "key-file", message, "put the key (one line of printable ASCII, no spaces, <= 4 KiB) in that file")


def read_key(path: str) -> str:
    """The key file's first line; a Kubernetes Secret volume links it, so links are followed, but only to a
    regular file, read with a size cap (a FIFO or /dev/zero would block or never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        _fail(f"API key file {path}: {err.strerror}")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            _fail(f"API key file {path} is not a regular file")
        data = os.read(fd, KEY_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > KEY_MAX_BYTES:
        _fail(f"API key file {path} is larger than {KEY_MAX_BYTES} bytes")
    # The rule tqdeploy's pre-flight applies too (safeio.read_key_file): one line of printable ASCII without
    # spaces, a trailing newline allowed. A key that passed one and failed the other was a start that failed late.
    key = data.rstrip(b"\r\n")
    if not key:
        _fail(f"API key file {path} is empty")
    if any(c < 0x21 or c > 0x7E for c in key):
        _fail(f"API key file {path} holds a space, a control or non-ASCII character, or more than one line")
    return key.decode("ascii")


# How the EngineCore process starts. "spawn" is what `vllm serve` does (cli_env_setup): a fresh interpreter that
# imports vLLM and torch again after the API server has built its config (18 s of a 50 s warm start on the H200,
# docs/startup.md). "forkserver": a clean interpreter started here, before this process imports vLLM, imports the
# EngineCore's modules in parallel with the API server's own imports, and the EngineCore is forked from it (Python's
# multiprocessing forkserver; vLLM's own API-server launcher preloads vllm.v1.engine.async_llm in one,
# vllm/entrypoints/launchers/api_server/entry.py in 0.32.0). Unlike a plain fork of the API server, the child gets
# none of the API server's state (threads, event loop, sockets). TQ_ENGINE_START overrides the rendered choice.
ENGINE_START = "spawn"
ENGINE_PRELOAD = ["vllm.v1.engine.core", "vllm.v1.worker.gpu_worker"]


class _InServerEnvironment:
    """The EngineCore's target, run with the API server's environment as it was when the engine started: a
    forkserver's children inherit the forkserver's environment (this launcher's, before vLLM ran), while vLLM sets
    variables as it builds its config and starts the engine (a device mask per data-parallel rank, its
    multiprocessing method) that a spawned EngineCore would see."""

    def __init__(self, target, environ: dict) -> None:
        self.target = target
        self.environ = environ

    def __call__(self, *args, **kwargs):
        try:  # vLLM titles the process VLLM::EngineCore with setproctitle, which must find the environment where
            import setproctitle  # exec left it, next to argv: set it up before the environment is replaced

            setproctitle.getproctitle()
        except ImportError:
            pass
        os.environ.clear()
        os.environ.update(self.environ)
        return self.target(*args, **kwargs)


class _EngineProcess(multiprocessing.context.ForkServerProcess):
    def start(self) -> None:
        self._target = _InServerEnvironment(self._target, dict(os.environ))
        super().start()


class _EngineContext(multiprocessing.context.ForkServerContext):
    Process = _EngineProcess


def engine_start() -> str:
    how = os.environ.get("TQ_ENGINE_START", ENGINE_START)
    return how if how in ("forkserver", "spawn") else "spawn"


def start_engine_forkserver() -> None:
    """Start the forkserver now, so that its imports run while this process imports vLLM."""
    import multiprocessing.forkserver

    multiprocessing.set_forkserver_preload(ENGINE_PRELOAD)
    multiprocessing.forkserver.ensure_running()


def route_engine_through_forkserver() -> None:
    """vLLM starts its EngineCore processes with vllm.v1.engine.utils.get_mp_context() (CoreEngineProcManager,
    0.25.0 and 0.32.0), which knows only fork and spawn: that one name is pointed at the forkserver."""
    import vllm.v1.engine.utils as engine_utils

    if not callable(getattr(engine_utils, "get_mp_context", None)):
        print("launch_vllm.py: this vLLM has no v1.engine.utils.get_mp_context; the EngineCore spawns", file=sys.stderr)
        return
    context = _EngineContext()
    engine_utils.get_mp_context = lambda: context


def main(argv: list) -> None:
    path = os.environ.get("TQ_API_KEY_FILE", "")
    if not path:
        _fail("TQ_API_KEY_FILE is not set")
    key = read_key(path)
    os.environ.pop("VLLM_API_KEY", None)  # one source for the key: the file
    if os.environ.get("VLLM_RUST_FRONTEND_PATH"):
        # vllm/v1/utils.py hands the Rust frontend the non-default args as JSON on its command line.
        _exit(
            EXIT_REFUSED,
            "environment",
            "VLLM_RUST_FRONTEND_PATH is set: that frontend gets the arguments, the key too, in argv",
            "unset VLLM_RUST_FRONTEND_PATH in the environment `tqdeploy up` runs in",
        )

    forkserver = engine_start() == "forkserver" and "--numa-bind" not in argv  # NUMA binding needs spawn (vLLM)
    if forkserver:
        start_engine_forkserver()

    import vllm.logger
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.entrypoints.serve.utils.api_utils import cli_env_setup
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cli_env_setup()  # what `vllm serve` does first (vllm/entrypoints/cli/main.py): multiprocessing = spawn
    parser = FlexibleArgumentParser(prog="vllm")
    serve = ServeSubcommand()
    serve.subparser_init(parser.add_subparsers(dest="subparser"))
    args = parser.parse_args(["serve", *argv])
    # 0.32.0's `vllm serve` applies the --log-* flags and keeps them for its child processes before validating
    # (vllm/entrypoints/cli/main.py, vllm/logger.py configure_logging_from_args); 0.25.0 has no such step.
    configure_logging = getattr(vllm.logger, "configure_logging_from_args", None)
    if configure_logging is not None:
        configure_logging(args)
    serve.validate(args)
    if args.api_key:
        _exit(
            EXIT_REFUSED,
            "arguments",
            "--api-key is on the command line",
            "drop it from the spec's extra_args: the key comes from $TQ_API_KEY_FILE",
        )
    args.api_key = [_Key(key)]
    if forkserver:
        route_engine_through_forkserver()
    ServeSubcommand.cmd(args)


if __name__ == "__main__":  # a spawned or forkserver-started EngineCore imports this file again
    main(sys.argv[1:])
