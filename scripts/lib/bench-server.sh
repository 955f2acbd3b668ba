# shellcheck shell=bash disable=SC2154 # berth, work, listen, probe: the sourcing script's
# Sourced by the benchmarks (bench-agent.sh, bench-cluster.sh) after they set berth, work,
# listen, probe and pids: start_bench_server runs `berth server` in $work/server, its
# log in $work/server.log, adds it to pids (for the cleanup) and sets server to its pid,
# waits up to 30 s for its tokens and exports its management token as BERTH_TOKEN.
# SERVER_FLAGS are more flags of `berth server`, split at spaces (--node-ttl 5s
# --max-heartbeats-per-second 1000): they come after the script's own, and win over them.
start_bench_server() {
  # shellcheck disable=SC2086 # SERVER_FLAGS is a list of flags, split on purpose
  "$berth" server --data-dir "$work/server" --listen "$listen" --insecure-listen "$probe" --log-level warn ${SERVER_FLAGS:-} 2>"$work/server.log" &
  server=$!
  pids+=("$server")
  for _ in $(seq 1 300); do
    [ -s "$work/server/admin-token" ] && [ -s "$work/server/join-token" ] && break
    sleep 0.1
  done
  if ! [ -s "$work/server/admin-token" ]; then
    echo "the server did not start (SERVER_FLAGS: ${SERVER_FLAGS:-none}):" >&2
    tail -5 "$work/server.log" >&2
    return 1
  fi
  BERTH_TOKEN=$(cat "$work/server/admin-token")
  export BERTH_TOKEN
}

# server_flag NAME DEFAULT prints the value SERVER_FLAGS gives --NAME (as --NAME VALUE or
# --NAME=VALUE; the last one wins), or DEFAULT.
server_flag() {
  local val=$2 prev='' w
  # shellcheck disable=SC2086 # split on purpose, as start_bench_server does
  for w in ${SERVER_FLAGS:-}; do
    case $w in --"$1"=*) val=${w#*=} ;; esac
    [ "$prev" = "--$1" ] && val=$w
    prev=$w
  done
  echo "$val"
}
