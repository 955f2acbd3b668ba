#!/usr/bin/env bash
# Cluster DNS benchmark (docs/benchmarks.md, "Cluster DNS"): `berth sim dns` serves the
# node's cluster DNS server over SERVICES made-up services of INSTANCES ready instances
# each on loopback, and dnsperf (Debian's package) sends it queries for DURATION seconds
# with CLIENTS clients: first A queries of the services' full names (10 addresses an
# answer by default), then a mix of full and short names, instance names, SRV and
# missing names.
#
#   BERTH_BIN=./bin/berth SERVICES=1000 INSTANCES=10 DURATION=20 ./scripts/bench-dns.sh
set -euo pipefail
cd "$(dirname "$0")/.."

berth=$(realpath "${BERTH_BIN:-./bin/berth}")
services=${SERVICES:-1000}
instances=${INSTANCES:-10}
duration=${DURATION:-20}
clients=${CLIENTS:-8}
addr=${DNS_ADDR:-127.0.0.1:5300}
command -v dnsperf >/dev/null || { echo "dnsperf is needed: apt-get install dnsperf" >&2; exit 1; }

work=$(mktemp -d /tmp/berth-dns-bench-XXXXXX)
"$berth" sim dns --listen "$addr" --services "$services" --instances "$instances" >"$work/sim.log" 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; wait $sim 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do grep -q serving "$work/sim.log" && break; sleep 0.1; done

python3 - "$services" "$instances" "$work" <<'PY'
import random, sys
services, instances, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rnd = random.Random(1)
with open(work + "/full.txt", "w") as f:
    for _ in range(20000):
        f.write(f"svc{rnd.randrange(services)}.bench.svc.cluster.local A\n")
with open(work + "/mix.txt", "w") as f:
    for _ in range(20000):
        s, r = rnd.randrange(services), rnd.random()
        if r < 0.4: f.write(f"svc{s}.bench.svc.cluster.local A\n")
        elif r < 0.6: f.write(f"svc{s}.bench A\n")
        elif r < 0.8: f.write(f"{rnd.randrange(max(instances, 1))}-svc{s}.svc{s}.bench.svc.cluster.local A\n")
        elif r < 0.9: f.write(f"_http._tcp.svc{s}.bench.svc.cluster.local SRV\n")
        else: f.write(f"nosuch{s}.bench.svc.cluster.local A\n")
PY
host=${addr%:*} port=${addr##*:}
for q in full mix; do
  echo "== $q queries, $services services x $instances instances, $clients clients, ${duration} s"
  dnsperf -s "$host" -p "$port" -d "$work/$q.txt" -l "$duration" -c "$clients" -Q 1000000 2>&1 |
    grep -E "Queries (per second|lost)|Response codes|Average (Latency|packet)"
done
echo "server RSS $(awk '/VmRSS/ {print $2/1024 " MiB"}' "/proc/$sim/status")"
