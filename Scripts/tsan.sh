#!/usr/bin/env bash
# `make tsan`: the whole suite under ThreadSanitizer (docs/SANITIZERS.md).
#
# Every process the tests start (the agent and the Sandbox run as `orderlive` subprocesses, built with
# TSan too) writes its reports to one directory, so a race in a child is counted as well as one in the
# test process. It fails on any test failure and on any report not matched by
# Scripts/tsan-suppressions.txt, whose every entry must name an upstream issue.
#
# One suite is left out: CrashReportTests crashes the agent on purpose and reads Swift's crash report,
# which ThreadSanitizer's own signal handling replaces; it runs in `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
reports=$(mktemp -d)
suppressions=$PWD/Scripts/tsan-suppressions.txt
export SWIFT_BACKTRACE=enable=no
export TSAN_OPTIONS="log_path=$reports/tsan suppressions=$suppressions halt_on_error=0 second_deadlock_stack=1"
status=0
# As `make test` runs it: at most TEST_WIDTH tests at once, the suites that measure time on real
# sockets (TIMING_TESTS, from the Makefile) left out of the parallel run and run alone after it.
# Under ThreadSanitizer's slowdown the parallel run is narrower still (TSAN_WIDTH, default 4), and
# the tests scale their time bounds by TestKit's `TestTime.scale`, which this build sets (the
# Makefile builds with -DORDERLIVE_TSAN: TSAN_SWIFTC).
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${TSAN_WIDTH:-4}
timing=${TIMING_TESTS:-}
skip="CrashReportTests"
[ -n "$timing" ] && skip="$skip|$(echo $timing | tr ' ' '|')"
# Each run's exit status is read before anything else runs: PIPESTATUS after `|| true` would be
# `true`'s, and a failed suite would be reported as passed.
run() {
  set +e
  swift test --skip-build --sanitize=thread --scratch-path .build-tsan "$@" 2>&1 \
    | tee -a "$reports/test.log" | grep -E "^(✘|✔ Test run|Test run)|ThreadSanitizer"
  local statuses=("${PIPESTATUS[@]}")
  set -e
  [ "${statuses[0]}" = 0 ] || status=1
}
run --skip "$skip"
for suite in $timing; do
  echo "timing suite, alone: $suite"
  run --filter "$suite"
done
count=$(cat "$reports"/tsan.* 2>/dev/null | grep -c "^WARNING: ThreadSanitizer" || true)
if [ "$count" -gt 0 ]; then
  echo "tsan: $count unexplained report(s):"
  cat "$reports"/tsan.* | grep -A24 "^WARNING: ThreadSanitizer" | head -n 200
  echo "tsan: all reports are in $reports"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  grep -E "^✘" "$reports/test.log" | head -n 40
  echo "tsan: the suite failed under ThreadSanitizer; log in $reports/test.log"
  exit 1
fi
echo "tsan: the suite passed with no ThreadSanitizer report ($(grep -o 'Test run with [0-9]* tests' "$reports/test.log" | awk '{n += $4} END {print n}') tests)"
rm -rf "$reports"
