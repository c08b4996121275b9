#!/usr/bin/env bash
# Runs one fuzz target: Fuzz/run.sh TARGET [libFuzzer flags…]. TARGET is `sse` (ParserFuzz) or one
# of InputFuzz's targets; its seeds are Fuzz/corpus/TARGET, its working corpus Fuzz/corpus-run/TARGET,
# and a finding is written to Fuzz/findings/TARGET-crash-<sha1>. Build first: `make fuzz-build`.
set -euo pipefail
cd "$(dirname "$0")/.."
target=$1
shift
binary=.build-fuzz/release/InputFuzz
if [ "$target" = sse ]; then binary=.build-fuzz/release/ParserFuzz; fi
[ -d "Fuzz/corpus/$target" ] || { echo "Fuzz/run.sh: no seeds for '$target' in Fuzz/corpus" >&2; exit 2; }
work=${FUZZ_WORK_DIR:-Fuzz/corpus-run/$target}
mkdir -p "$work" Fuzz/findings
ORDERLIVE_FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 \
  "$binary" "$work" "Fuzz/corpus/$target" -max_len=4096 -artifact_prefix="Fuzz/findings/$target-" "$@"
