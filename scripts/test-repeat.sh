#!/usr/bin/env bash
# Runs the built test suite N times in a row and says, per test, how often it failed and how
# (docs/testing.md): flakes are found before they land. With LOAD=1 one core is kept busy all
# along (stress-ng if installed, else a shell loop), as another job on the machine would.
#   scripts/test-repeat.sh N      (make test-repeat N=10 [LOAD=1] builds first)
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 N (a number of runs)" >&2; exit 2; }
logs=.build/test-repeat
rm -rf "$logs"
mkdir -p "$logs"

busy=
stop_busy() { [[ -n $busy ]] && kill "$busy" 2>/dev/null; wait 2>/dev/null; busy=; }
trap stop_busy EXIT
if [[ ${LOAD:-0} == 1 ]]; then
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu 1 --timeout 0 --quiet &
  else
    (while :; do :; done) &
  fi
  busy=$!
  echo "one core kept busy (pid $busy)"
fi

failed=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  "${SWIFT:-swift}" test --skip-build >"$logs/run-$i.log" 2>&1
  status=$?
  end=$(date +%s)
  summary=$(grep -aoE "Test run with [0-9]+ tests? in [0-9]+ suites? (passed|failed) after [0-9.]+ seconds( with [0-9]+ issues?)?" "$logs/run-$i.log" | tail -1)
  echo "run $i: exit $status, $((end - start)) s: ${summary:-no summary (see $logs/run-$i.log)}"
  [[ $status == 0 ]] || failed=$((failed + 1))
done
stop_busy
python3 scripts/test-report.py --runs "$logs"/run-*.log
echo "$failed of $runs runs failed (logs in $logs)"
[[ $failed == 0 ]]
