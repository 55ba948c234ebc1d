#!/bin/bash
# `make run-multinode`: the rendered multi-node build on this host. Build scripts/multinode/tiny-cpu-multinode.toml
# into build/multinode-demo, put the tiny model where serve.sh expects it (.cache/tiny-qwen2, as the tests make
# it), `tqdeploy up` it (leader and worker: two process groups, each the rendered serve.sh + multinode.sh with
# its own TMPDIR and log, joined over loopback in vLLM's own multi-node mode, pipeline parallel 2), send one
# keyed completion through the leader, show both nodes, `tqdeploy down` (each group by the deployment's
# marker), then prove that no process of it and no Ray process is left. Usage: run.sh TQ PY VLLM_PY [BUILD]
set -euo pipefail
TQ=$1 PY=$2 VLLM_PY=$3 BUILD=${4:-build/multinode-demo}
HERE="$(cd -- "$(dirname -- "$0")" && pwd)"

"$TQ" build "$HERE/tiny-cpu-multinode.toml" --out "$BUILD"
if [ ! -f "$BUILD/models/tiny/config.json" ]; then
  [ -f .cache/tiny-qwen2/.complete ] || "$VLLM_PY" tests/support/make_tiny_model.py .cache/tiny-qwen2
  mkdir -p "$BUILD/models/tiny" && cp -p .cache/tiny-qwen2/* "$BUILD/models/tiny/"
fi
stopped=0
finish() {
  [ "$stopped" = 1 ] || "$TQ" down "$BUILD" || true
  echo "logs: $BUILD/.tqdeploy/logs/ (server.log: the leader, worker-1.log: the worker)"
}
trap finish EXIT
"$TQ" up "$BUILD" --python "$VLLM_PY"
"$PY" "$HERE/complete.py" "$BUILD"
"$TQ" status "$BUILD"
"$TQ" down "$BUILD"
stopped=1
"$PY" "$HERE/leftovers.py" "$BUILD"
