#!/usr/bin/env bash
# Cluster benchmark (docs/benchmarks.md, "Cluster benchmark"): a real `berth server`
# (embedded etcd) and `berth sim --nodes NODES` on this machine. It waits until every
# simulated node is Ready and SETTLE seconds more (default 35: every agent has sent its
# first report), then measures the cost of their heartbeats for MEASURE seconds:
# the server's CPU (user+system, from /proc), its RSS, how far etcd's revision and its
# database moved, and how many nodes were ever marked Lost.
#
#   NODES=5000 RAMP=60 MEASURE=60 ./scripts/bench-cluster.sh
#
# Then, unless LOAD=none, it submits LOAD (APPSxINSTANCES, default 100x100; several, space
# separated, run one after the other) through the API
# with `berth sim load` (placements/s, submit -> Running p50/p99, API p99 during the burst;
# LOAD_NAMESPACES, default 1; LOAD_CONCURRENCY applies in flight, default 4), and measures the server idle for IDLE seconds (default 60)
# with those task groups: CPU, RSS and etcd growth. In between, it freezes one simulated
# node (NODELOSS_NODE, default the one that runs the most instances) and measures until its instances run elsewhere
# (`berth sim nodeloss`; the burst's processes restart Always).
#
# SERVICES=1 applies a service with each process of the bursts and has every simulated
# node follow the services, as agents with the cluster DNS server do: the simulators then
# log how soon a ready instance reaches every node's catalog (docs/benchmarks.md,
# "Service catalog"), printed after each burst. After the bursts, the cluster at rest
# gets REST_APPS more processes (default 30) of REST_INSTANCES (default 10), one every
# REST_PACE (default 2s), each with its service: the same latency, apart from the burst's.
#
# SIM_PROFILE=DIR keeps each simulator's CPU profile, from its start to its end, in
# DIR/simN-cpu.pprof.
#
# Each phase prints the simulators' CPU beside the server's; the run fails (exit 3),
# naming the phases, when the simulators took more than the server in any of them.
#
# The run also asserts, under load, what the cluster must keep (exit 4 when it does not,
# naming what failed): after each burst, every instance of every process exists exactly
# once and is Running as the server reports it (`berth sim load`), and the simulators run
# as many task groups as the server has Running (`berth sim check`: a status report lost
# shows as a difference); no node but the frozen one is marked Lost from the first burst
# to the end; the frozen node's instances run elsewhere within MAX_AFTER_TTL (default
# 15s) of its TTL's expiry. Each phase ends with a `RESULT phase=NAME key=value ...` line
# (scripts/bench-compare.sh reads them).
#
# SERVER_FLAGS are more flags for `berth server` (SERVER_FLAGS="--node-ttl 5s"). BERTH_BIN
# is the berth binary (default bin/berth), SIM_BIN that of the simulators and of the
# measuring commands (default BERTH_BIN).
# NODES over a few thousand need file descriptors: the script raises its limit to the
# hard limit, and runs simulators of PER_SIM nodes each (default 2,500; at 10,000 nodes,
# PER_SIM=5000: two simulators cost less than four, and more than the server with four).
#
# PROFILE=DIR keeps the server's CPU profile of the measured phase and its heap profile
# at the end in DIR (go tool pprof DIR/cpu.pprof), and those of the burst's first
# BURST_PROFILE seconds (default 30) and of the idle phase; with BURST_TRACE=SECONDS, an
# execution trace of the burst's first seconds instead of its CPU profile (go tool trace
# -pprof=sync DIR/burst1.trace: where the burst's goroutines waited). AGENT_LOG_LEVEL=warn logs the
# simulated agents' warnings too (to the sim log kept at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

nodes=${NODES:-1000}
ramp=${RAMP:-30}
measure=${MEASURE:-60}
heartbeat=${HEARTBEAT:-3s}
listen=${BENCH_LISTEN:-127.0.0.1:7490}
# The benchmark's own reads (readiness, revision, profiles) go to a loopback listener
# without TLS, outside the API's connection limit, so they answer while agents saturate it.
probe=${BENCH_PROBE:-127.0.0.1:7491}
berth=${BERTH_BIN:-./bin/berth}
# The simulators and the measuring commands (sim load, nodeloss, check) may be another
# binary than the server's: scripts/bench-compare.sh measures an earlier server with
# this tree's tools.
simbin=${SIM_BIN:-$berth}
per_sim=${PER_SIM:-2500}

# Descriptors: the server holds one connection per node (docs/agent.md, "One connection
# per server") and keeps 1,024 for itself out of its limit (--max-connections defaults to
# the limit less that, --max-connections-per-source to half of it); a simulated node
# holds one (a simulator of 5,000 nodes held 5,016), besides a simulator's shared join
# connections. Go raises a process's soft limit to the hard one: this raises the
# script's (and curl's) too, and refuses a size the hard limit cannot hold.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fds=$(ulimit -n)
if [ "$fds" != unlimited ]; then
  if [ "$fds" -lt $(( nodes + 2048 )) ]; then
    echo "NODES=$nodes needs about $(( nodes + 2048 )) file descriptors for the server; the limit is $fds (raise the hard limit: ulimit -Hn)" >&2
    exit 2
  fi
  if [ "$fds" -lt $(( per_sim + 256 )) ]; then
    echo "PER_SIM=$per_sim simulated nodes need about $(( per_sim + 256 )) file descriptors a simulator; the limit is $fds: lower PER_SIM" >&2
    exit 2
  fi
fi

work=$(mktemp -d /tmp/berth-bench-XXXXXX)
export BERTH_SERVER="http://$probe" BERTH_CA_CERT="$work/server/ca.crt" BERTH_CONFIG=/dev/null HOME="$work"
pids=()
# shellcheck disable=SC2317 # the trap calls it
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  # The logs outlive the run, for the failures they explain.
  cp "$work/sim.log" "${TMPDIR:-/tmp}/berth-bench-sim.log" 2>/dev/null || true
  cp "$work/server.log" "${TMPDIR:-/tmp}/berth-bench-server.log" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=scripts/lib/bench-server.sh
. scripts/lib/bench-server.sh
start_bench_server

# Simulators of at most PER_SIM nodes each (a simulated node holds one file
# descriptor): each dials from loopback addresses of its own nodes' (127.1.x.y, by the
# node's index), so no source reaches the server's per-source limit. Each keeps its
# counts in a stats file, which `berth sim check` compares with the server.
sims=() stats=()
left=$nodes i=0
while [ "$left" -gt 0 ]; do
  n=$(( left < per_sim ? left : per_sim ))
  "$simbin" sim --server "$listen" --token-file "$work/server/join-token" --nodes "$n" --prefix "sim$i" --ramp "${ramp}s" \
    --heartbeat "$heartbeat" --agent-log-level "${AGENT_LOG_LEVEL:-error}" --data-dir "$work/sim$i" --freeze-file "$work/freeze" \
    --stats-file "$work/sim$i.stats" \
    ${SERVICES:+--follow-services} ${SIM_PROFILE:+--cpu-profile "$SIM_PROFILE/sim$i-cpu.pprof"} >>"$work/sim.log" 2>&1 &
  pids+=("$!") sims+=("$!") stats+=("$work/sim$i.stats")
  left=$(( left - n )) i=$(( i + 1 ))
done
stats_files=$(IFS=,; echo "${stats[*]}")

api() { curl -sf -H "Authorization: Bearer $BERTH_TOKEN" "http://$probe/$1"; }
ready() { api v1/nodes | grep -o '"phase":"Ready"' | wc -l || true; }
start=$(date +%s)
while :; do
  n=$(ready)
  [ "$n" -ge "$nodes" ] && break
  if [ $(( $(date +%s) - start )) -gt $(( ramp + 120 )) ]; then
    # Measured all the same: an overloaded server is what a profile should show.
    echo "only $n of $nodes nodes Ready after $(( ramp + 120 )) s; measuring anyway" >&2
    tail -5 "$work/sim.log" >&2
    break
  fi
  sleep 2
done
echo "$n of $nodes nodes Ready after $(( $(date +%s) - start )) s"
# The last registrations settle, and every agent sends its first periodic report (each
# opens its connection for calls then): the measurement is of the steady state.
sleep "${SETTLE:-35}"

tck=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
# The simulators' CPU: they share the machine with the server, and agents starved of it
# beat late.
simcpu() { for p in "${sims[@]}"; do cat "/proc/$p/stat"; done | awk '{s += $14 + $15} END {print s + 0}'; }
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$server/status"; }
# etcd's revision: the resourceVersion of a list (the API writes it before the items).
rev() { api v1/nodes | grep -o '"resourceVersion":"[0-9]*"' | head -1 | tr -dc 0-9; }
dbsize() { "$berth" cluster -o json 2>/dev/null | awk -F'[:,]' '/"dbSize"/ {gsub(/ /, "", $2); print $2; exit}'; }

# The benchmark measures the server only while the simulators cost less: every phase
# compares their CPU, and the run fails at the end (exit 3) when they took more.
sim_over=()
check_sim() { # PHASE SERVER_TICKS SIM_TICKS
  if [ "$3" -gt "$2" ]; then
    sim_over+=("$1")
    echo "WARNING: the simulators took more CPU than the server during $1 ($3 ticks against $2): this measures the simulator" >&2
  fi
}
# What the cluster failed to keep (exit 4), each named.
fails=()
# errof FILE: the error a berth command printed in FILE (its last lines from "error:";
# else its last line), on one line.
errof() {
  local e
  e=$(sed -n '/^error: /,$p' "$1" | grep -v '^RESULT' | sed 's/^error: //' | paste -sd ' ' -)
  echo "${e:-$(tail -1 "$1")}"
}
fail() { fails+=("$1"); echo "FAIL: $1" >&2; }
finish() {
  local f
  for f in "${fails[@]}"; do echo "FAIL: $f" >&2; done
  if [ "${#sim_over[@]}" -gt 0 ]; then
    echo "FAIL: the simulators took more CPU than the server during: ${sim_over[*]}" >&2
  fi
  [ "${#fails[@]}" -gt 0 ] && exit 4
  [ "${#sim_over[@]}" -gt 0 ] && exit 3
  exit 0
}
# check PHASE: `berth sim check` (every instance once and Running, the simulators' count
# of running task groups the server's, no node Lost but the frozen one); its RESULT line
# becomes that of PHASE.
check() {
  BERTH_SERVER="https://$listen" "$simbin" sim check --stats-file "$stats_files" >"$work/check.out" 2>&1 || fail "$1: $(errof "$work/check.out")"
  grep -v '^RESULT' "$work/check.out" || true
  sed -n "s/^RESULT /RESULT phase=$1 /p" "$work/check.out"
}

pprof() { api "v1/debug/pprof/$1" >"$2" || echo "profile $1 failed" >&2; }
# Nodes marked Lost so far, from the server's log: events may be dropped in a burst.
lost_nodes() { grep -c 'msg="node lost"' "$work/server.log" || true; }
# lost_since N: the names of the nodes marked Lost after the first N such lines.
lost_since() { grep 'msg="node lost"' "$work/server.log" | tail -n +"$(( $1 + 1 ))" | sed 's/.* node=\([^ ]*\).*/\1/' | sort -u; }
# Connections the API accepted so far: each costs the server a TLS handshake.
conns() { api metrics | awk '/^berth_http_connections_opened_total / {printf "%d", $2}'; }
# Connections open now: one per agent over HTTP/2 (docs/agent.md), the probe's own aside.
open_conns() { api metrics | awk '/^berth_http_connections_open / {printf "%d", $2}'; }

c0=$(cpu) s0=$(simcpu) r0=$(rev) d0=$(dbsize) k0=$(conns) t0=$(date +%s.%N)
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  pprof "profile?seconds=$measure" "$PROFILE/cpu.pprof"
  pprof heap "$PROFILE/heap.pprof"
  pprof "goroutine?debug=1" "$PROFILE/goroutines.txt"
else
  sleep "$measure"
fi
c1=$(cpu) s1=$(simcpu) r1=$(rev) d1=$(dbsize) k1=$(conns) t1=$(date +%s.%N)
lost=$(lost_nodes)

awk -v c0="$c0" -v c1="$c1" -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v tck="$tck" -v n="$nodes" -v hb="$heartbeat" \
  -v r0="$r0" -v r1="$r1" -v d0="${d0:-0}" -v d1="${d1:-0}" -v rss="$(rss_mb)" -v lost="$lost" -v k0="${k0:-0}" -v k1="${k1:-0}" -v open="$(open_conns)" 'BEGIN {
  secs = t1 - t0
  printf "nodes %d, heartbeat %s, measured %.0f s\n", n, hb, secs
  printf "server CPU: %.1f%% of one core\n", 100 * (c1 - c0) / tck / secs
  printf "simulators CPU: %.1f%% of one core\n", 100 * (s1 - s0) / tck / secs
  printf "server RSS: %d MB\n", rss
  printf "etcd revisions: %d (%.2f per second; revision %d to %d)\n", r1 - r0, (r1 - r0) / secs, r0, r1
  printf "etcd database: %+.1f MB (%.1f MB per hour)\n", (d1 - d0) / 1048576, (d1 - d0) / 1048576 * 3600 / secs
  printf "nodes marked Lost (the ramp included): %d\n", lost
  printf "connections opened: %d, open: %d\n", k1 - k0, open
  printf "RESULT phase=heartbeats nodes=%d secs=%.0f server_cpu=%.1f sim_cpu=%.1f rss_mb=%d etcd_revisions=%d db_mb_per_h=%.1f lost=%d conns_opened=%d\n",
    n, secs, 100 * (c1 - c0) / tck / secs, 100 * (s1 - s0) / tck / secs, rss, r1 - r0, (d1 - d0) / 1048576 * 3600 / secs, lost, k1 - k0
}'
check_sim "the heartbeats" $(( c1 - c0 )) $(( s1 - s0 ))

loads=${LOAD:-100x100}
[ "$loads" = none ] && finish
# From here on no node may be Lost but the one the node loss freezes.
lost_mark=$(lost_nodes)
n=0
for load in $loads; do
  n=$(( n + 1 ))
  apps=${load%x*} instances=${load#*x}
  echo
  echo "burst: $apps x $instances instances"
  c0=$(cpu) s0=$(simcpu) k0=$(conns) t0=$(date +%s.%N) lost0=$(lost_nodes)
  burst_profile=
  if [ -n "${PROFILE:-}" ]; then
    if [ -n "${BURST_TRACE:-}" ]; then
      pprof "trace?seconds=$BURST_TRACE" "$PROFILE/burst$n.trace" &
    else
      pprof "profile?seconds=${BURST_PROFILE:-30}" "$PROFILE/burst$n-cpu.pprof" &
    fi
    burst_profile=$!
  fi
  BERTH_SERVER="https://$listen" "$simbin" sim load --apps "$apps" --instances "$instances" \
    --namespaces "${LOAD_NAMESPACES:-1}" --concurrency "${LOAD_CONCURRENCY:-4}" --restart-policy Always ${SERVICES:+--services} >"$work/load.out" 2>&1 \
    || fail "burst $load: $(errof "$work/load.out")"
  c1=$(cpu) s1=$(simcpu) k1=$(conns) t1=$(date +%s.%N)
  grep -v '^RESULT' "$work/load.out" || true
  [ -n "$burst_profile" ] && wait "$burst_profile"
  check_sim "burst $load" $(( c1 - c0 )) $(( s1 - s0 ))
  lost1=$(lost_nodes)
  awk -v c0="$c0" -v c1="$c1" -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v tck="$tck" -v rss="$(rss_mb)" -v lost=$((lost1 - lost0)) -v k=$(( ${k1:-0} - ${k0:-0} )) \
    -v n="$n" -v load="$load" -v sim="$(sed -n 's/^RESULT //p' "$work/load.out")" 'BEGIN {
    printf "server during the burst: CPU %.1f%% of one core over %.1f s, RSS %d MB, nodes marked Lost %d, connections opened %d; simulators %.1f%% of one core\n", 100 * (c1 - c0) / tck / (t1 - t0), t1 - t0, rss, lost, k, 100 * (s1 - s0) / tck / (t1 - t0)
    printf "RESULT phase=burst%d load=%s %s secs=%.1f server_cpu=%.1f sim_cpu=%.1f rss_mb=%d server_lost=%d conns_opened=%d\n", n, load, sim, t1 - t0, 100 * (c1 - c0) / tck / (t1 - t0), 100 * (s1 - s0) / tck / (t1 - t0), rss, lost, k
  }'
  sleep 10 # the last reports settle
  check "check$n"
  if [ -n "${SERVICES:-}" ]; then
    sleep 10 # the simulators log every 10 s
    grep "every node's service catalog" "$work/sim.log" | tail -"$i" || true
  fi
done

if [ -n "${SERVICES:-}" ] && [ "${REST_APPS:-30}" != 0 ]; then
  # The simulated nodes first take the burst's last endpoints: the phase at rest starts
  # once no simulator has logged a new latency for 25 s (they log every 10 s while
  # samples come), within 10 minutes.
  last=
  for _ in $(seq 24); do
    now=$(grep -c "every node's service catalog" "$work/sim.log" || true)
    [ "$now" = "$last" ] && break
    last=$now
    sleep 25
  done
  echo
  echo "at rest: ${REST_APPS:-30} processes of ${REST_INSTANCES:-10} instances, one every ${REST_PACE:-2s}"
  BERTH_SERVER="https://$listen" "$simbin" sim load --apps "${REST_APPS:-30}" --instances "${REST_INSTANCES:-10}" \
    --pace "${REST_PACE:-2s}" --concurrency 1 --prefix rest --restart-policy Always --services >"$work/load.out" 2>&1 \
    || fail "the phase at rest: $(errof "$work/load.out")"
  grep -v '^RESULT' "$work/load.out" || true
  sed -n 's/^RESULT /RESULT phase=rest /p' "$work/load.out"
  sleep 20 # the last reports settle, and the simulators log every 10 s
  grep "every node's service catalog.*prefix=rest" "$work/sim.log" | tail -1 || true
fi

idle=${IDLE:-60}
# Node loss: one node (with the burst's instances) stops dead; the time until it is Lost
# and until its instances run on other nodes.
# Its TTL follows from the interval the server told it and the server's --node-ttl.
echo
BERTH_SERVER="https://$listen" "$simbin" sim nodeloss --node "${NODELOSS_NODE:-}" --freeze-file "$work/freeze" \
  --node-ttl "$(server_flag node-ttl 10s)" --max-after-ttl "${MAX_AFTER_TTL:-15s}" >"$work/nodeloss.out" 2>&1 \
  || fail "$(errof "$work/nodeloss.out")"
grep -v '^RESULT' "$work/nodeloss.out" || true
sed -n 's/^RESULT /RESULT phase=nodeloss /p' "$work/nodeloss.out"
frozen=$(sed -n 's/^RESULT .*node=\([^ ]*\).*/\1/p' "$work/nodeloss.out")
sleep 5
c0=$(cpu) s0=$(simcpu) r0=$(rev) d0=$(dbsize) t0=$(date +%s.%N)
if [ -n "${PROFILE:-}" ]; then
  pprof "profile?seconds=$idle" "$PROFILE/idle-cpu.pprof"
  pprof heap "$PROFILE/idle-heap.pprof"
else
  sleep "$idle"
fi
c1=$(cpu) s1=$(simcpu) r1=$(rev) d1=$(dbsize) t1=$(date +%s.%N)
awk -v c0="$c0" -v c1="$c1" -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v tck="$tck" -v rss="$(rss_mb)" \
  -v r0="$r0" -v r1="$r1" -v d0="${d0:-0}" -v d1="${d1:-0}" 'BEGIN {
  secs = t1 - t0
  printf "idle with the burst'"'"'s task groups, %.0f s: CPU %.1f%% of one core, RSS %d MB, %d etcd revisions, database %+.1f MB (%.1f MB per hour); simulators %.1f%% of one core\n",
    secs, 100 * (c1 - c0) / tck / secs, rss, r1 - r0, (d1 - d0) / 1048576, (d1 - d0) / 1048576 * 3600 / secs, 100 * (s1 - s0) / tck / secs
  printf "RESULT phase=idle secs=%.0f server_cpu=%.1f sim_cpu=%.1f rss_mb=%d etcd_revisions=%d db_mb_per_h=%.1f\n",
    secs, 100 * (c1 - c0) / tck / secs, 100 * (s1 - s0) / tck / secs, rss, r1 - r0, (d1 - d0) / 1048576 * 3600 / secs
}'
check_sim "the idle phase" $(( c1 - c0 )) $(( s1 - s0 ))
check final
# Every node the server marked Lost since the first burst, from its log (a node Lost and
# back since would not show in the check's list), but the frozen one.
others=$(lost_since "$lost_mark" | grep -vxF "${frozen:-none}" || true)
[ -n "$others" ] && fail "nodes marked Lost during the bursts and the idle phase that were not frozen: $(echo "$others" | head -10 | tr '\n' ' ')($(echo "$others" | wc -l) in all)"
finish
