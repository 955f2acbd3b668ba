#!/usr/bin/env bash
# Starts `berth dev` with its data in .berth-dev/ (/var/lib/berth/demo for root), applies
# examples/, shows the result and keeps the server in the foreground until Ctrl-C (which
# shuts it down cleanly).
set -euo pipefail
cd "$(dirname "$0")/.."

berth=./bin/berth
listen=${BERTH_LISTEN:-127.0.0.1:7470}
# Root's agent runs the demo's processes under uids of their own (80000-89999), which must
# pass through to their work dirs: a checkout under /root (0700) is closed to it.
default_data=$PWD/.berth-dev
if [ "$(id -u)" = 0 ]; then default_data=/var/lib/berth/demo; fi
data=${BERTH_DATA_DIR:-$default_data}
export BERTH_SERVER="https://$listen"
# The server writes its cluster's CA certificate here on its first start; the CLI trusts it.
export BERTH_CA_CERT="$data/ca.crt"

"$berth" dev --listen "$listen" --data-dir "$data" --packages-dir build/packages &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server' INT TERM

for _ in $(seq 1 100); do
  # The management token, made at the first start (berth dev also puts it in the CLI
  # config file, unless you have a config file of your own).
  if [ -s "$data/admin-token" ]; then BERTH_TOKEN=$(cat "$data/admin-token"); export BERTH_TOKEN; fi
  if "$berth" get configmaps -A >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server" 2>/dev/null; then echo "berth dev exited" >&2; exit 1; fi
  sleep 0.2
done

echo
echo "== berth apply -f examples/"
"$berth" apply -f examples/
echo
echo "== waiting for the 3 instances of process demo/web to run"
for _ in $(seq 1 120); do
  if "$berth" get process web -n demo -o json 2>/dev/null | grep -q '"phase": "Running"'; then break; fi
  sleep 0.5
done
echo
echo "== berth get processes / configmaps / services -A"
"$berth" get processes -A
"$berth" get configmaps -A
"$berth" get services -A
echo
echo "== berth get taskgroups -n demo"
"$berth" get taskgroups -n demo
echo
echo "== berth describe process web -n demo"
"$berth" describe process web -n demo
echo
echo "berth dev keeps running at $BERTH_SERVER (data in $data); press Ctrl-C to stop it."
wait "$server"
