#!/usr/bin/env bash
# The cluster benchmark of two revisions side by side (docs/benchmarks.md, "Cluster
# benchmark"): BASE (default HEAD~1) built into a temporary binary (a detached git
# worktree in a temporary directory, removed at the end) and this tree's bin/berth, each
# run by scripts/bench-cluster.sh with the same environment (NODES, LOAD, SERVER_FLAGS...),
# alternating: ROUNDS=1 (default) base then head, 2 base, head, head, base, and so on.
# Only the server is the revision's: the simulators and the measuring commands are this
# tree's (SIM_BIN), so that both are measured by the same tools. It prints one table of
# the key figures of the runs' RESULT lines, the mean of each side's runs, and fails
# (exit 1) when a run failed.
#
#   BASE=main ROUNDS=2 NODES=5000 RAMP=60 ./scripts/bench-compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."

base=${BASE:-HEAD~1}
rounds=${ROUNDS:-1}
case $rounds in '' | *[!0-9]* | 0)
  echo "ROUNDS=$rounds: give a count of rounds, 1 or more" >&2
  exit 2
  ;;
esac
base_rev=$(git rev-parse --verify --short "$base^{commit}") || {
  echo "BASE=$base is not a revision" >&2
  exit 2
}
head_rev=$(git rev-parse --short HEAD)
[ -n "$(git status --porcelain --untracked-files=no)" ] && head_rev="$head_rev+changes"

tmp=$(mktemp -d /tmp/berth-compare-XXXXXX)
# shellcheck disable=SC2317 # the trap calls it
cleanup() {
  git worktree remove --force "$tmp/src" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "building the base, $base ($base_rev)"
git worktree add --detach --quiet "$tmp/src" "$base_rev"
(cd "$tmp/src" && go build -ldflags "-X github.com/berthhq/berth/internal/cli.Version=$base_rev" -o "$tmp/berth-base" ./cmd/berth)
git worktree remove --force "$tmp/src"
echo "building the head, $head_rev"
make build >/dev/null
cp bin/berth "$tmp/berth-head" # the tree may be rebuilt while the runs last

# Rounds alternate which side goes first, so that neither always runs on a machine
# warmed (or worn) by the other.
order=()
for r in $(seq "$rounds"); do
  if [ $(( r % 2 )) = 1 ]; then order+=(base head); else order+=(head base); fi
done
failed=()
k=0
for side in "${order[@]}"; do
  k=$(( k + 1 ))
  echo
  echo "=== run $k of ${#order[@]}: $side ($([ "$side" = base ] && echo "$base_rev" || echo "$head_rev"))"
  rc=0
  BERTH_BIN="$tmp/berth-$side" SIM_BIN="$tmp/berth-head" ./scripts/bench-cluster.sh 2>&1 | tee "$tmp/$k-$side.log" || rc=$?
  [ "$rc" = 0 ] || failed+=("run $k ($side): exit $rc")
done

# The table: each figure of the RESULT lines (phase.key), the mean of each side's runs.
echo
echo "base $base ($base_rev) against head $head_rev; ${#order[@]} runs; NODES=${NODES:-1000} LOAD=${LOAD:-100x100}${SERVER_FLAGS:+ SERVER_FLAGS=$SERVER_FLAGS}"
for f in "$tmp"/*.log; do
  side=${f##*-} side=${side%.log}
  sed -n "s/^RESULT /$side /p" "$f"
done | awk '
  BEGIN {
    # The rows, in order: phase, key, label. burst1 stands for every burst.
    n = split("heartbeats server_cpu heartbeats:_server_CPU_(%_core);" \
      "heartbeats sim_cpu heartbeats:_simulators_CPU_(%_core);" \
      "heartbeats rss_mb heartbeats:_server_RSS_(MB);" \
      "burst placements_per_s BURST:_placements/s;" \
      "burst all_running_s BURST:_all_Running_(s);" \
      "burst apply_p99_ms BURST:_apply_p99_(ms);" \
      "burst get_p99_ms BURST:_GET_p99_(ms);" \
      "burst apply_server_p99_ms BURST:_apply_p99,_server'"'"'s_bucket_(ms);" \
      "burst get_server_p99_ms BURST:_GET_p99,_server'"'"'s_bucket_(ms);" \
      "burst local_reads BURST:_reads_served_by_the_sole_etcd_member;" \
      "burst local_reads_asked_again BURST:_of_them_asked_again_through_raft;" \
      "burst server_cpu BURST:_server_CPU_(%_core);" \
      "burst sim_cpu BURST:_simulators_CPU_(%_core);" \
      "nodeloss lost_after_s node_loss:_Lost_after_(s);" \
      "nodeloss replaced_after_s node_loss:_replaced_after_(s);" \
      "nodeloss ttl_s node_loss:_the_node'"'"'s_TTL_(s);" \
      "nodeloss after_ttl_s node_loss:_replaced_after_the_TTL_(s);" \
      "idle server_cpu idle:_server_CPU_(%_core);" \
      "idle rss_mb idle:_server_RSS_(MB);" \
      "idle etcd_revisions idle:_etcd_revisions", rows, ";")
  }
  {
    side = $1; phase = ""
    for (i = 2; i <= NF; i++) if ($i ~ /^phase=/) phase = substr($i, 7)
    if (phase ~ /^burst[0-9]+$/ && !(phase in seen)) { seen[phase] = 1; bursts[++nb] = phase }
    for (i = 2; i <= NF; i++) {
      eq = index($i, "="); if (eq == 0) continue
      key = phase "." substr($i, 1, eq - 1)
      sum[side, key] += substr($i, eq + 1); cnt[side, key]++
    }
  }
  function cell(side, key) {
    return cnt[side, key] ? sprintf("%.1f", sum[side, key] / cnt[side, key]) : "-"
  }
  function row(label, key,   b, h, d) {
    b = cell("base", key); h = cell("head", key); d = ""
    if (b != "-" && h != "-" && b + 0 != 0) d = sprintf("%+.0f%%", 100 * (h - b) / b)
    gsub(/_/, " ", label)
    printf "%-42s %12s %12s %8s\n", label, b, h, d
  }
  END {
    printf "%-42s %12s %12s %8s\n", "", "base", "head", "change"
    for (r = 1; r <= n; r++) {
      split(rows[r], f, " ")
      if (f[1] != "burst") { row(f[3], f[1] "." f[2]); continue }
      for (j = 1; j <= nb; j++) {
        label = f[3]; sub(/BURST/, bursts[j], label)
        row(label, bursts[j] "." f[2])
      }
    }
  }'
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'FAIL: %s\n' "${failed[@]}" >&2
  exit 1
fi
