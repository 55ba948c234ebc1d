# Rendered by tqdeploy 0.1.0 from spec qwen36-multinode (sha256 1c0f35a07cf4c4a6ed052e2fd9137a61836ee771b7f3952c95a9dc0c286e01ee).
# Sourced by serve.sh when resources.nodes > 1: which node this is, where the leader is, and the node flags of
# vLLM 0.32.0's own multi-node mode (vllm/engine/arg_utils.py --nnodes/--node-rank/--master-addr/
# --master-port; vllm/entrypoints/cli/serve.py run_headless: a node of rank > 0 runs `--headless`, its
# workers only, and joins the leader's torch.distributed group at MASTER_ADDR:MASTER_PORT). Not Ray: the
# CPU build of vLLM 0.32.0 cannot place Ray workers (vllm/platforms/cpu.py sets no ray_device_key;
# vllm/v1/executor/ray_utils.py initialize_ray_cluster: "current platform cpu does not support ray"), and
# one mode for every variant is what `make run-multinode` proves on loopback.
#
# LeaderWorkerSet sets LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX in every pod of a group; on
# one host `tqdeploy up` sets TQ_ROLE, TQ_NODE_RANK, TQ_MASTER_ADDR and TQ_MASTER_PORT instead.
# Leaves the node flags in "$@" for serve.sh's exec line.

NNODES=2
ROLE="${TQ_ROLE:-leader}"
MASTER_ADDR="${TQ_MASTER_ADDR:-${LWS_LEADER_ADDRESS:-}}"
MASTER_PORT="${TQ_MASTER_PORT:-29501}"
# The interface torch.distributed's Gloo and NCCL use between nodes (their own variables; unset, they pick
# the first non-loopback one, which may be the wrong network).
export GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-eth0}"
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-eth0}"

mn_fail() {
  echo "multinode.sh: $1" >&2
  echo "  fix: $2" >&2
  exit 78
}

case "$ROLE" in
  leader) NODE_RANK=0 ;;
  worker) NODE_RANK="${TQ_NODE_RANK:-${LWS_WORKER_INDEX:-}}" ;;
  *) mn_fail "TQ_ROLE=$ROLE is neither leader nor worker" "set TQ_ROLE=leader on the first node, worker on the others" ;;
esac
case "$NODE_RANK" in
  '' | *[!0-9]*) mn_fail "worker rank '$NODE_RANK' is not a number" "set TQ_NODE_RANK (1..$((NNODES - 1))) or run in a LeaderWorkerSet pod" ;;
esac
if [ "$ROLE" = worker ] && { [ "$NODE_RANK" -lt 1 ] || [ "$NODE_RANK" -ge "$NNODES" ]; }; then
  mn_fail "worker rank $NODE_RANK is outside 1..$((NNODES - 1))" "set TQ_NODE_RANK to this node's rank"
fi
if [ -n "${LWS_GROUP_SIZE:-}" ] && [ "$LWS_GROUP_SIZE" != "$NNODES" ]; then
  mn_fail "LWS_GROUP_SIZE=$LWS_GROUP_SIZE but the build has $NNODES nodes" "set leaderWorkerTemplate.size to $NNODES or build again"
fi
if [ -z "$MASTER_ADDR" ]; then
  [ "$ROLE" = leader ] || mn_fail "the leader's address is unknown" "set TQ_MASTER_ADDR or run in a LeaderWorkerSet pod"
  MASTER_ADDR=127.0.0.1
fi
case "$MASTER_PORT" in
  '' | *[!0-9]*) mn_fail "TQ_MASTER_PORT '$MASTER_PORT' is not a port" "set a port number 1024-65535" ;;
esac
if [ "$MASTER_PORT" -lt 1024 ] || [ "$MASTER_PORT" -gt 65535 ]; then
  mn_fail "TQ_MASTER_PORT $MASTER_PORT is outside 1024-65535" "set a port number 1024-65535"
fi

# Every node runs the vLLM this build was rendered for: a worker of another version fails later, in the
# middle of torch.distributed's set-up, with an error that does not name the version.
MN_VLLM=$(python3 -c 'import vllm; print(vllm.__version__)' 2>/dev/null) || MN_VLLM=""
if [ "$MN_VLLM" != "0.32.0" ]; then
  echo "multinode.sh: node $NODE_RANK runs vLLM '${MN_VLLM:-none}', the build was rendered for 0.32.0" >&2
  echo "  fix: install vLLM 0.32.0 on every node (the image pins it), or build again" >&2
  exit 79
fi
echo "multinode.sh: node $NODE_RANK of $NNODES ($ROLE), vLLM $MN_VLLM, leader $MASTER_ADDR:$MASTER_PORT, interface $GLOO_SOCKET_IFNAME"

set -- --nnodes "$NNODES" --node-rank "$NODE_RANK" --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT"
if [ "$ROLE" = worker ]; then
  set -- "$@" --headless
fi
