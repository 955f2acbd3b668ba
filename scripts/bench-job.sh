#!/usr/bin/env bash
# Indexed job benchmark (docs/benchmarks.md, "Jobs"): a real `berth server` (embedded
# etcd) and NODES `berth sim` nodes whose runs end after RUN_TIME with the exit codes
# EXIT_CODES; an Indexed job of COMPLETIONS runs, PARALLELISM at a time, is applied and
# the script prints how long it took to complete, completions per second, and the
# server's RSS and CPU time.
#
#   BERTH_BIN=./bin/berth COMPLETIONS=10000 PARALLELISM=1000 NODES=20 ./scripts/bench-job.sh
set -euo pipefail
cd "$(dirname "$0")/.."

berth=$(realpath "${BERTH_BIN:-./bin/berth}")
completions=${COMPLETIONS:-10000}
parallelism=${PARALLELISM:-1000}
nodes=${NODES:-20}
run_time=${RUN_TIME:-200ms}
exit_codes=${EXIT_CODES:-0:100}
backoff=${BACKOFF_LIMIT:-10000}
addr=${ADDR:-127.0.0.1:17470}

work=$(mktemp -d /tmp/berth-job-bench-XXXXXX)
mkdir -p "$work/data" "$work/home"
"$berth" server --listen "$addr" --data-dir "$work/data" \
	--join-token berth-jbench.0123456789abcdef0123456789abcdef >"$work/server.log" 2>&1 &
server=$!
sim=""
trap 'kill $sim $server 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 200); do [ -s "$work/data/admin-token" ] && [ -s "$work/data/join-token" ] && break; sleep 0.2; done
export BERTH_SERVER="https://$addr" BERTH_CA_CERT="$work/data/ca.crt" BERTH_TOKEN="$(cat "$work/data/admin-token")" \
	BERTH_CONFIG= HOME="$work/home"
"$berth" sim --server "$addr" --token-file "$work/data/join-token" --nodes "$nodes" \
	--run-time "$run_time" --exit-codes "$exit_codes" --data-dir "$work/sim" >"$work/sim.log" 2>&1 &
sim=$!
for _ in $(seq 1 300); do
	[ "$("$berth" get nodes -o name 2>/dev/null | wc -l)" -ge "$nodes" ] && break
	sleep 0.5
done

cat >"$work/job.json" <<JOB
{"apiVersion":"v4","kind":"job","metadata":{"name":"bench","namespace":"bench"},
 "spec":{"completions":$completions,"parallelism":$parallelism,"completionMode":"Indexed","backoffLimit":$backoff,
  "template":{"spec":{"processes":[{"procName":"w","startCmd":"./w","resources":{"limits":{"cpu":"0.01","memory":"1"}}}]}}}}
JOB
start=$(date +%s.%N)
"$berth" apply -f "$work/job.json" >/dev/null
row=""
for _ in $(seq 1 2400); do
	row=$("$berth" get job bench -n bench | tail -n 1)
	case "$row" in *Complete* | *Failed*) break ;; esac
	sleep 0.25
done
end=$(date +%s.%N)
echo "NAME STATUS COMPLETIONS ACTIVE FAILED ..."
echo "$row"
awk -v s="$start" -v e="$end" -v n="$completions" 'BEGIN { printf "%.1f s, %.0f completions/s\n", e - s, n / (e - s) }'
echo "server RSS (KiB) and CPU time: $(ps -o rss=,time= -p "$server")"
