#!/usr/bin/env bash
# A private 3-node RabbitMQ cluster with the MQTT plugin, on loopback only, for
# failover tests of the tools (a node dies, clients move to another node).
#
#   scripts/cluster.sh up        start rmq1..3@localhost, wait for the cluster and MQTT,
#                                print one mqtt://127.0.0.1:PORT per node (also in $CLUSTER_DIR/urls)
#   scripts/cluster.sh down      stop what `up` started and remove $CLUSTER_DIR
#   scripts/cluster.sh kill N    SIGKILL node N's Erlang VM (failure tests)
#   scripts/cluster.sh start N   start node N again (it rejoins) and wait for its MQTT port
#   scripts/cluster.sh status    which nodes run
#
# Everything lives in $CLUSTER_DIR (default ${TMPDIR:-/tmp}/argentic-cluster): configs, data,
# logs, pid files, and the Erlang cookie (HOME points there). The nodes use their own epmd
# on $CLUSTER_EPMD_PORT, so a system RabbitMQ (rabbit@..., epmd on 4369) is never touched.
# Ports, read by `up` and recorded for the other commands (node N = 1..3 uses BASE+N):
# CLUSTER_MQTT_PORT_BASE (18830 -> 18831..18833), CLUSTER_AMQP_PORT_BASE (15680),
# CLUSTER_DIST_PORT_BASE (25680), CLUSTER_EPMD_PORT (14369), CLUSTER_CTL_DIST_PORT_MIN
# (35700, rabbitmqctl's range of 11 ports). Also CLUSTER_TIMEOUT, CLUSTER_MEMORY_WATERMARK.
# Uses Debian's rabbitmq-server (installed with apt-get when missing) and python3.
# On 2 cores `up` takes 25-30 s (up to a minute on a busy machine); `start N` 7-12 s.
set -euo pipefail

DIR=$(realpath -m "${CLUSTER_DIR:-${TMPDIR:-/tmp}/argentic-cluster}")
MQTT_BASE=${CLUSTER_MQTT_PORT_BASE:-18830}
AMQP_BASE=${CLUSTER_AMQP_PORT_BASE:-15680}
DIST_BASE=${CLUSTER_DIST_PORT_BASE:-25680}
EPMD_PORT=${CLUSTER_EPMD_PORT:-14369}
CTL_DIST_MIN=${CLUSTER_CTL_DIST_PORT_MIN:-35700}
TIMEOUT=${CLUSTER_TIMEOUT:-120}              # seconds, for each wait
WATERMARK=${CLUSTER_MEMORY_WATERMARK:-1GB}   # per node, memory alarm threshold
NODES=(1 2 3)
# After `up`, the other commands use the ports it recorded (not the caller's environment).
if [[ ${1:-} != up && -f $DIR/settings ]]; then
  # shellcheck source=/dev/null
  source "$DIR/settings"
fi

die() { echo "cluster.sh: error: $*" >&2; exit 1; }
name() { echo "rmq$1@localhost"; }
mqtt_port() { echo $((MQTT_BASE + $1)); }

# The real scripts, not Debian's /usr/sbin wrapper (as root it would `su rabbitmq`,
# losing our HOME and so our cookie).
rabbit_bin() {
  local exe
  exe=$(command -v rabbitmq-server || echo /usr/sbin/rabbitmq-server)
  [[ -x $exe ]] || return 1
  dirname "$(readlink -f "$exe")"
}

ensure_rabbitmq() {
  rabbit_bin >/dev/null && return
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  echo "rabbitmq-server is missing: installing it with apt-get" >&2
  {
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y rabbitmq-server ||
      { "${sudo[@]}" apt-get update && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y rabbitmq-server; }
  } >&2  # stdout is for the URLs
  # The package may start a system broker (rabbit@..., epmd 4369): we leave it alone.
}

# Environment shared by the nodes and rabbitmqctl: private HOME (cookie), epmd, env file.
use_private_env() {
  export HOME=$DIR ERL_EPMD_PORT=$EPMD_PORT ERL_EPMD_ADDRESS=127.0.0.1
  export RABBITMQ_CONF_ENV_FILE=$DIR/rabbitmq-env.conf
  export RABBITMQ_CTL_DIST_PORT_MIN=$CTL_DIST_MIN RABBITMQ_CTL_DIST_PORT_MAX=$((CTL_DIST_MIN + 10))
  export RABBITMQ_MNESIA_BASE=$DIR/mnesia RABBITMQ_LOG_BASE=$DIR/log
  export RABBITMQ_ENABLED_PLUGINS_FILE=$DIR/enabled_plugins
  export RABBITMQ_ADVANCED_CONFIG_FILE=$DIR/advanced.config
  unset ERL_FLAGS ERL_AFLAGS ERL_ZFLAGS
}

ctl() { "$BIN/rabbitmqctl" "$@"; }

# Is pid $1 alive and started by this script (its HOME is our state dir)?
ours() {
  [[ -n ${1:-} && -r /proc/$1/environ ]] && grep -qzxF "HOME=$DIR" "/proc/$1/environ" 2>/dev/null
}
beam_pid() { cat "$DIR/rmq$1.pid" 2>/dev/null || true; }
running() { ours "$(beam_pid "$1")"; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Does 127.0.0.1:$1 answer an MQTT 3.1.1 CONNECT with CONNACK "accepted"?
mqtt_ok() {
  python3 - "$1" <<'EOF'
import socket, sys
port = int(sys.argv[1])
cid = b"cluster-sh-probe-%d" % port
body = b"\x00\x04MQTT\x04\x02\x00\x0a" + len(cid).to_bytes(2, "big") + cid
try:
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(bytes([0x10, len(body)]) + body)
        ok = s.recv(4) == b"\x20\x02\x00\x00"
        s.sendall(b"\xe0\x00")
except OSError:
    ok = False
sys.exit(0 if ok else 1)
EOF
}

wait_mqtt() {
  local n=$1 deadline=$((SECONDS + TIMEOUT))
  until mqtt_ok "$(mqtt_port "$n")"; do
    running "$n" || fail "$n" "node rmq$n died while starting"
    ((SECONDS < deadline)) || fail "$n" "MQTT on port $(mqtt_port "$n") not ready after ${TIMEOUT}s"
    sleep 0.5
  done
}

fail() {
  echo "cluster.sh: error: $2; last lines of $DIR/log/$(name "$1").log:" >&2
  tail -n 15 "$DIR/log/$(name "$1").log" >&2 2>/dev/null || true
  echo "cluster.sh: the cluster is left as it is; 'scripts/cluster.sh down' stops it" >&2
  exit 1
}

write_config() {
  local n=$1 m
  {
    echo "listeners.tcp.default = 127.0.0.1:$((AMQP_BASE + n))"
    echo "mqtt.listeners.tcp.default = 127.0.0.1:$(mqtt_port "$n")"
    echo "mqtt.allow_anonymous = true"
    echo "mqtt.durable_queue_type = quorum"
    echo "mqtt.tcp_listen_options.nodelay = true"
    echo "cluster_formation.peer_discovery_backend = classic_config"
    for m in "${NODES[@]}"; do echo "cluster_formation.classic_config.nodes.$m = $(name "$m")"; done
    # Nodes boot one after another (rmq1 first): a peer that is down will not come, so
    # rmq1 need not retry discovery for 5 s before it forms the cluster.
    echo "cluster_formation.discovery_retry_limit = 1"
    echo "cluster_partition_handling = pause_minority"
    echo "vm_memory_high_watermark.absolute = $WATERMARK"
    echo "raft.wal_max_size_bytes = 64000000"
  } >"$DIR/rmq$n.conf"
}

start_node() {
  local n=$1
  rm -f "$DIR/rmq$n.pid"
  # One scheduler per VM, unbound (3 VMs share 2 cores); Erlang distribution on loopback only.
  RABBITMQ_NODENAME=$(name "$n") RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT=$((AMQP_BASE + n)) RABBITMQ_DIST_PORT=$((DIST_BASE + n)) \
    RABBITMQ_CONFIG_FILE=$DIR/rmq$n.conf RABBITMQ_PID_FILE=$DIR/rmq$n.pid \
    RABBITMQ_SCHEDULER_BIND_TYPE=u \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} +S 1:1 +SDcpu 1:1" \
    setsid "$BIN/rabbitmq-server" >>"$DIR/log/rmq$n.out" 2>&1 </dev/null &
  echo $! >"$DIR/rmq$n.shpid"
}

# Wait for node $1 to have booted (its pid file written and the rabbit app running).
wait_booted() {
  ctl -q -n "$(name "$1")" wait "$DIR/rmq$1.pid" --timeout "$TIMEOUT" >/dev/null 2>&1 ||
    fail "$1" "node rmq$1 did not boot within ${TIMEOUT}s"
}

cmd_up() {
  ensure_rabbitmq
  BIN=$(rabbit_bin)
  local n p start=$SECONDS ports=("$EPMD_PORT")
  for n in "${NODES[@]}"; do
    running "$n" && die "already up (rmq$n runs); run: $0 down"
    ports+=("$(mqtt_port "$n")" $((AMQP_BASE + n)) $((DIST_BASE + n)))
  done
  for p in "${ports[@]}"; do
    port_free "$p" || die "port 127.0.0.1:$p is taken (set CLUSTER_*_PORT* to move the cluster)"
  done
  rm -rf "$DIR"
  mkdir -p "$DIR/log" "$DIR/mnesia"
  use_private_env
  : >"$RABBITMQ_CONF_ENV_FILE"
  echo "[rabbitmq_mqtt]." >"$RABBITMQ_ENABLED_PLUGINS_FILE"
  (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(20).upper(), end="")' >"$DIR/.erlang.cookie")
  chmod 400 "$DIR/.erlang.cookie"
  setsid epmd -port "$EPMD_PORT" -address 127.0.0.1 >"$DIR/log/epmd.out" 2>&1 </dev/null &
  echo $! >"$DIR/epmd.pid"
  for n in "${NODES[@]}"; do write_config "$n"; done
  for p in MQTT_BASE AMQP_BASE DIST_BASE EPMD_PORT CTL_DIST_MIN; do echo "$p=${!p}"; done >"$DIR/settings"

  # rmq1 first: with classic_config, nodes that boot together could each form their own cluster.
  start_node 1
  wait_booted 1
  for n in "${NODES[@]:1}"; do start_node "$n"; done
  for n in "${NODES[@]:1}"; do wait_booted "$n"; done
  ctl -q -n "$(name 1)" await_online_nodes "${#NODES[@]}" --timeout "$((TIMEOUT * 1000))" >/dev/null ||
    fail 1 "the cluster did not reach ${#NODES[@]} nodes"
  : >"$DIR/urls"
  for n in "${NODES[@]}"; do
    wait_mqtt "$n"
    echo "mqtt://127.0.0.1:$(mqtt_port "$n")" >>"$DIR/urls"
  done
  echo "cluster up in $((SECONDS - start)) s ($DIR):" >&2
  cat "$DIR/urls"
}

# Ask node $1 to stop; SIGKILL whatever of it is left after the timeout.
stop_node() {
  local n=$1 pid
  pid=$(beam_pid "$n")
  if ours "$pid"; then
    timeout 60 "$BIN/rabbitmqctl" -q -n "$(name "$n")" stop "$DIR/rmq$n.pid" >/dev/null 2>&1 || true
  fi
  for pid in "$pid" "$(cat "$DIR/rmq$n.shpid" 2>/dev/null || true)"; do
    if ours "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  done
}

cmd_down() {
  [[ -d $DIR ]] || { echo "no cluster at $DIR" >&2; return 0; }
  BIN=$(rabbit_bin) || BIN=/nonexistent
  use_private_env
  local n pid
  for n in "${NODES[@]}"; do stop_node "$n" & done
  wait
  pid=$(cat "$DIR/epmd.pid" 2>/dev/null || true)
  if ours "$pid"; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$DIR"
  echo "cluster down" >&2
}

node_arg() {
  [[ " ${NODES[*]} " == *" ${1:-x} "* ]] || die "expected a node number: ${NODES[*]}"
  [[ -d $DIR ]] || die "no cluster at $DIR (run: $0 up)"
}

cmd_kill() {
  node_arg "${1:-}"
  local pid
  pid=$(beam_pid "$1")
  ours "$pid" || die "rmq$1 is not running"
  kill -KILL "$pid"
  echo "killed rmq$1 (pid $pid)" >&2
}

cmd_start() {
  node_arg "${1:-}"
  running "$1" && die "rmq$1 already runs"
  BIN=$(rabbit_bin)
  use_private_env
  local start=$SECONDS
  start_node "$1"
  wait_booted "$1"
  wait_mqtt "$1"
  echo "rmq$1 up in $((SECONDS - start)) s: mqtt://127.0.0.1:$(mqtt_port "$1")" >&2
}

cmd_status() {
  [[ -d $DIR ]] || { echo "no cluster at $DIR"; return 0; }
  local n url
  for n in "${NODES[@]}"; do
    url="mqtt://127.0.0.1:$(mqtt_port "$n")"
    if ! running "$n"; then
      echo "$(name "$n") stopped $url"
    elif mqtt_ok "$(mqtt_port "$n")"; then
      echo "$(name "$n") running pid $(beam_pid "$n") $url"
    else
      echo "$(name "$n") running pid $(beam_pid "$n") $url (MQTT not accepting)"
    fi
  done
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  kill) cmd_kill "${2:-}" ;;
  start) cmd_start "${2:-}" ;;
  status) cmd_status ;;
  *) echo "usage: $0 up|down|status|kill N|start N" >&2; exit 2 ;;
esac
