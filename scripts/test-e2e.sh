#!/bin/sh
# Runs the end-to-end tests (test/e2e) with the race detector, as `make test` does, and
# prints how long each test and subtest took, longest first: the suite shares clusters
# among its tests to stay within CI's time (docs/development.md, Tests), and this says where the
# time goes. On a failure the whole verbose log follows.
set -u
GO=${GO:-go}
log=$(mktemp "${TMPDIR:-/tmp}/berth-e2e.XXXXXX")
trap 'rm -f "$log"' EXIT
$GO test -race -count=1 -timeout 45m -v ./test/e2e/ >"$log" 2>&1
rc=$?
echo "== e2e: time per test (top 40)"
grep -E '^ *--- (PASS|FAIL|SKIP): ' "$log" | sed -E 's/^( *)--- ([A-Z]+): (.*) \(([0-9.]+)s\)$/\4 \2 \1\3/' | sort -rn | head -40
grep -E '^(ok|FAIL|---.*FAIL)' "$log" | grep -v '^--- PASS' | tail -20
if [ "$rc" -ne 0 ]; then
  echo "== e2e failed: the whole log"
  cat "$log"
fi
exit "$rc"
