#!/usr/bin/env bash
# Runs one fuzz target: Fuzz/run.sh TARGET [libFuzzer flags…]. TARGET is `sse` (ParserFuzz) or one
# of InputFuzz's targets; its seeds are Fuzz/corpus/TARGET, its working corpus Fuzz/corpus-run/TARGET,
# and a finding is written to Fuzz/findings/TARGET-crash-<sha1>. Build first: `make fuzz-build`.
set -euo pipefail
cd "$(dirname "$0")/.."
target=$1
shift
# FUZZ_CONFIGURATION: the build to run, release (default) or debug, as `make fuzz-build` made it.
configuration=${FUZZ_CONFIGURATION:-release}
scratch=.build-fuzz
if [ "$configuration" = debug ]; then scratch=.build-fuzz-debug; fi
binary=$scratch/$configuration/InputFuzz
if [ "$target" = sse ]; then binary=$scratch/$configuration/ParserFuzz; fi
[ -x "$binary" ] || { echo "Fuzz/run.sh: no $binary; build it first: make fuzz-build FUZZ_CONFIGURATION=$configuration" >&2; exit 2; }
[ -d "Fuzz/corpus/$target" ] || { echo "Fuzz/run.sh: no seeds for '$target' in Fuzz/corpus" >&2; exit 2; }
work=${FUZZ_WORK_DIR:-Fuzz/corpus-run/$target}
mkdir -p "$work" Fuzz/findings
ORDERLIVE_FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 \
  "$binary" "$work" "Fuzz/corpus/$target" -max_len=4096 -artifact_prefix="Fuzz/findings/$target-" "$@"
