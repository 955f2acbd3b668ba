#!/usr/bin/env bash
# Agent benchmark (docs/benchmarks.md, "Agent: idle tasks and exit latency"): a real
# `berth server` and one `berth agent` on this machine, TASKS idle tasks (default 100),
# first as processes (`sleep 3600`), then as containers (busybox `sleep 3600`). For each:
# the agent's CPU (user+system, from /proc) over MEASURE seconds (default 60) once every
# task runs, dockerd's over the same window, the shims' memory (RSS and PSS, per shim),
# and the time from a task's end (SIGKILL of its process) to its Failed status in a watch
# of the API, over EXITS tasks (default 20).
#
#   BERTH_BIN=./bin/berth TASKS=100 MEASURE=60 ./scripts/bench-agent.sh
#
# Run it as root with Docker running; KINDS="process" skips the containers. Nothing is
# pulled: the container image is imported from the host's static busybox.
set -euo pipefail
cd "$(dirname "$0")/.."

tasks=${TASKS:-100}
measure=${MEASURE:-60}
exits=${EXITS:-20}
kinds=${KINDS:-process container}
berth=$(realpath "${BERTH_BIN:-./bin/berth}")
listen=${BENCH_LISTEN:-127.0.0.1:7480}
probe=${BENCH_PROBE:-127.0.0.1:7481}
image=berth-bench/busybox:1
hz=$(getconf CLK_TCK)

work=$(mktemp -d /tmp/berth-agent-bench-XXXXXX)
chmod 755 "$work"
export BERTH_SERVER="http://$probe" BERTH_CONFIG=/dev/null HOME="$work"
pids=()
cleanup() {
  "$berth" delete process idle -n bench --ignore-not-found >/dev/null 2>&1 || true
  "$berth" delete application idle -n bench --ignore-not-found >/dev/null 2>&1 || true
  sleep 5
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  docker ps -aq --filter label=berth.node=bench | xargs -r docker rm -f >/dev/null 2>&1 || true
  pkill -f "^$berth shim" 2>/dev/null || true
  cp "$work/agent.log" "${TMPDIR:-/tmp}/berth-agent-bench-agent.log" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=scripts/lib/bench-server.sh
. scripts/lib/bench-server.sh
start_bench_server
"$berth" agent --server "https://$listen" --token "$(cat "$work/server/join-token")" --data-dir "$work/agent" \
  --node-name bench --listen 127.0.0.1:0 --ip 127.0.0.1 --port-range 31000-31999 --docker on --log-level warn 2>"$work/agent.log" &
agent=$!
pids+=("$agent")
for _ in $(seq 1 300); do
  "$berth" get node bench -o json 2>/dev/null | grep -q '"phase": "Ready"' && break
  sleep 0.1
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# running counts the task groups of namespace bench in phase Running.
running() {
  curl -sf -H "Authorization: Bearer $BERTH_TOKEN" "http://$probe/v1/namespaces/bench/taskgroups" |
    grep -o '"phase": *"Running"' | wc -l || true
}

ensure_image() {
  docker image inspect "$image" >/dev/null 2>&1 && return
  local root="$work/rootfs"
  mkdir -p "$root/bin" "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  for a in sh sleep; do ln -s busybox "$root/bin/$a"; done
  tar -C "$root" -c . | docker import - "$image" >/dev/null
}

spec() {
  local kind=$1
  if [ "$kind" = process ]; then
    printf '{"apiVersion":"v4","kind":"process","metadata":{"name":"idle","namespace":"bench"},
      "restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},
      "spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"sleep","startCmd":"sleep 3600",
      "resources":{"limits":{"cpu":"0.005","memory":"32"}}}]}}}}' "$tasks"
  else
    printf '{"apiVersion":"v4","kind":"application","metadata":{"name":"idle","namespace":"bench"},
      "restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},
      "spec":{"instance":%d,"template":{"spec":{"networkMode":"NONE","containers":[{"name":"main","image":"%s",
      "command":"/bin/sleep","args":["3600"],"resources":{"limits":{"cpu":"0.005","memory":"32"}}}]}}}}' "$tasks" "$image"
  fi
}

# exit_latency kills the processes of the first EXITS running task groups one at a time and
# prints the milliseconds from each kill to the Failed event in a watch of the API.
exit_latency() {
  local watch="$work/watch.log"
  : >"$watch"
  curl -sN -H "Authorization: Bearer $BERTH_TOKEN" "http://$probe/v1/namespaces/bench/taskgroups?watch=true" |
    while IFS= read -r line; do printf '%s %s\n' "$(date +%s%N)" "$line"; done >"$watch" &
  local watcher=$!
  sleep 1
  local list
  list=$(curl -sf -H "Authorization: Bearer $BERTH_TOKEN" "http://$probe/v1/namespaces/bench/taskgroups")
  local lat=()
  while read -r name pid; do
    [ "${#lat[@]}" -ge "$exits" ] && break
    local t0
    t0=$(date +%s%N)
    kill -KILL "$pid"
    for _ in $(seq 1 500); do
      local t1
      t1=$(grep -F "\"$name\"" "$watch" | grep -E '"phase": ?"Failed"' | head -1 | cut -d' ' -f1 || true)
      if [ -n "$t1" ]; then
        lat+=($(((t1 - t0) / 1000000)))
        break
      fi
      sleep 0.02
    done
  done < <(python3 -c '
import json, sys
for tg in json.load(sys.stdin)["items"]:
    st = tg.get("status", {})
    if st.get("phase") == "Running" and st.get("tasks"):
        print(tg["metadata"]["name"], st["tasks"][0]["info"]["Pid"])
' <<<"$list")
  kill "$watcher" 2>/dev/null || true
  printf '%s\n' "${lat[@]}" | sort -n | awk '{a[NR]=$1; s+=$1} END {if (NR) printf "exit->API: n=%d mean %.0f ms, p50 %d ms, max %d ms\n", NR, s/NR, a[int((NR+1)/2)], a[NR]}'
}

ensure_image
for kind in $kinds; do
  echo "== $tasks idle tasks: $kind"
  spec "$kind" | "$berth" apply -f - >/dev/null
  start=$(date +%s)
  until [ "$(running)" -ge "$tasks" ]; do
    if [ $(($(date +%s) - start)) -gt 300 ]; then
      echo "only $(running) of $tasks running after 300 s:" >&2
      "$berth" describe "$( [ "$kind" = process ] && echo process || echo application)" idle -n bench >&2 || true
      exit 1
    fi
    sleep 1
  done
  echo "all running after $(($(date +%s) - start)) s; settling 10 s"
  sleep 10
  dockerd=$(pgrep -xo dockerd || echo "")
  a0=$(cpu_ticks "$agent")
  d0=$([ -n "$dockerd" ] && cpu_ticks "$dockerd" || echo 0)
  sleep "$measure"
  a1=$(cpu_ticks "$agent")
  d1=$([ -n "$dockerd" ] && cpu_ticks "$dockerd" || echo 0)
  awk -v a=$((a1 - a0)) -v d=$((d1 - d0)) -v hz="$hz" -v m="$measure" \
    'BEGIN {printf "agent CPU %.2f%% of a core, dockerd %.2f%% (over %d s)\n", 100*a/hz/m, 100*d/hz/m, m}'
  echo "agent RSS $(awk '/VmRSS/ {print $2/1024 " MiB"}' "/proc/$agent/status")"
  shims=$(pgrep -f "^$berth shim" || true)
  if [ -n "$shims" ]; then
    n=0 rss=0 pss=0 uss=0
    for p in $shims; do
      n=$((n + 1))
      rss=$((rss + $(awk '/VmRSS/ {print $2}' "/proc/$p/status")))
      pss=$((pss + $(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup")))
      uss=$((uss + $(awk '/^Private_(Clean|Dirty):/ {s += $2} END {print s}' "/proc/$p/smaps_rollup")))
    done
    # RSS counts the binary's pages every shim shares; USS (private) is what one more
    # shim costs, PSS the shared pages split between those that map them.
    awk -v n=$n -v r=$rss -v p=$pss -v u=$uss 'BEGIN {printf "%d shims, each: RSS %.1f MiB, PSS %.1f MiB, private %.1f MiB (all shims: %.0f MiB PSS)\n", n, r/n/1024, p/n/1024, u/n/1024, p/1024}'
  fi
  exit_latency
  if [ "$kind" = process ]; then
    "$berth" delete process idle -n bench >/dev/null
  else
    "$berth" delete application idle -n bench >/dev/null
  fi
  until [ "$(running)" -eq 0 ]; do sleep 1; done
  sleep 5
done
