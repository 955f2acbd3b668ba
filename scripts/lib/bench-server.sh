# Sourced by the benchmarks (bench-agent.sh, bench-cluster.sh) after they set berth, work,
# listen, probe and pids: start_bench_server runs `berth server` in $work/server, its
# log in $work/server.log, adds it to pids (for the cleanup) and sets server to its pid,
# waits up to 30 s for its tokens and exports its management token as BERTH_TOKEN.
start_bench_server() {
  "$berth" server --data-dir "$work/server" --listen "$listen" --insecure-listen "$probe" --log-level warn 2>"$work/server.log" &
  server=$!
  pids+=("$server")
  for _ in $(seq 1 300); do
    [ -s "$work/server/admin-token" ] && [ -s "$work/server/join-token" ] && break
    sleep 0.1
  done
  BERTH_TOKEN=$(cat "$work/server/admin-token")
  export BERTH_TOKEN
}
