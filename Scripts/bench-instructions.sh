#!/usr/bin/env bash
# `make bench-instructions`: instructions per unit of work, counted by valgrind's callgrind
# (docs/PERFORMANCE.md, "Instruction counts"). Each workload runs twice under callgrind, doing N and
# then 2N units over the same prepared input of 2N; the difference divided by N is one unit's count,
# with start-up and preparation cancelled out. Counts repeat on any machine and under any load.
# The workloads are synchronous (Benchmarks/Sources/orderlive-instructions): valgrind 3.19 stops on
# Swift concurrency, so the push server's HTTP side (Hummingbird, NIO, the task hand-offs) is not
# counted here; `push` counts what the endpoint does between the body and the answer.
#
#   BENCH_INSTRUCTIONS=parse,parse-batched,store,store-at-once,push,push-keyed,page,page-again   the workloads (default: all eight;
#                                         store-unlaned, the store workload without the lanes' walk, on request)
#   BENCH_INSTRUCTIONS_SCALE=1            multiplies every N (larger: steadier, slower)
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
bench="$here/.build-bench/release/orderlive-instructions"
command -v valgrind >/dev/null || { echo "bench-instructions: valgrind is missing (make bench-instructions installs it)" >&2; exit 1; }
[ -x "$bench" ] || { echo "bench-instructions: build the benchmarks first (make bench-instructions does)" >&2; exit 1; }

workloads="${BENCH_INSTRUCTIONS:-parse,parse-batched,store,store-at-once,push,push-keyed,page,page-again}"
scale="${BENCH_INSTRUCTIONS_SCALE:-1}"
case "$scale" in ''|*[!0-9]*|0) echo "bench-instructions: BENCH_INSTRUCTIONS_SCALE must be a whole number above 0, not '$scale'" >&2; exit 2;; esac

# Valgrind 3.19 (Debian 12) cannot read the DWARF 5 debug information Swift's toolchain writes and
# gives up; the counts need none, so callgrind runs a copy without it.
plain="$(mktemp -d)/orderlive-bench"
trap 'rm -rf "$(dirname "$plain")"' EXIT
objcopy --strip-debug "$bench" "$plain"

# Hashing seeds are random per process unless fixed; the rest of a run is deterministic up to thread
# interleaving, which moves a count by well under 1 %.
export SWIFT_DETERMINISTIC_HASHING=1

collected() { # workload count prepared → instructions of the whole process
    local log
    log="$(mktemp)"
    if ! valgrind --tool=callgrind --callgrind-out-file=/dev/null "$plain" "$1" "$2" "$3" >/dev/null 2>"$log"; then
        echo "bench-instructions: the $1 workload failed under callgrind:" >&2
        tail -20 "$log" >&2
        rm -f "$log"
        exit 1
    fi
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log" | tail -1
    rm -f "$log"
}

echo "| unit of work | N | instructions per unit | whole run at N / 2N |"
echo "| --- | ---: | ---: | --- |"
IFS=',' read -ra list <<<"$workloads"
for workload in "${list[@]}"; do
    case "$workload" in
        parse) n=$((20000 * scale)); unit="parsed event (ServerSentEventParser, in memory, a String per event)";;
        parse-batched) n=$((20000 * scale)); unit="parsed event into batches (in memory, data left as bytes, as EventSource)";;
        store) n=$((1000 * scale)); unit="event translated, journaled (batches of 100) and applied (SQLite)";;
        store-at-once) n=$((1000 * scale)); unit="event translated and applied as journaled (batches of 100, as orderlive run)";;
        store-unlaned) n=$((1000 * scale)); unit="the same as store without the per-order lanes' walk (the executor before issue 54)";;
        push) n=$((1000 * scale)); unit="push request (one notification with a whole order) parsed, translated and applied in its own group commit";;
        push-keyed) n=$((1000 * scale)); unit="the same push with a notif_id and a webhook-id, both stored with their content's fingerprint";;
        page) n=$((1000 * scale)); unit="order of a cold start: pages of 500 decoded and applied into an empty store, then the full sync's end";;
        page-again) n=$((1000 * scale)); unit="order of a second full sync of the same orders, unchanged (its pages decoded and applied; a resync after a lost cursor)";;
        *) echo "bench-instructions: unknown workload '$workload' (parse, parse-batched, store, store-at-once, store-unlaned, push, push-keyed, page, page-again)" >&2; exit 2;;
    esac
    one="$(collected "$workload" "$n" $((2 * n)))"
    two="$(collected "$workload" $((2 * n)) $((2 * n)))"
    per=$(( (two - one) / n ))
    echo "| $unit | $n | $per | $one / $two |"
done
