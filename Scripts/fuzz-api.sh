#!/usr/bin/env bash
# `make fuzz-api`: schemathesis against a live agent (DESIGN §4; issue 13 part 5).
#
# Starts the Sandbox (auth, a changing order book) and `orderlive run` against it with
# `ingest.auth: bearer`, both on free loopback ports in a temporary directory, then runs
# schemathesis with every check over the document each of the agent's listeners serves at
# /openapi.json: the push listener's, then the orders API's (change feed included). It fails when
# schemathesis finds anything (a 5xx, an answer that does not match the document, a hang past the
# request timeout), when the agent is no longer running afterwards, when it does not stop with exit
# 0 on SIGTERM, or when its log holds the secret or a crash report.
#
#   Scripts/fuzz-api.sh [BINARY]          FUZZ_API_EXAMPLES (per operation, default 200),
#                                         FUZZ_API_SECONDS (whole run's budget, default 600),
#                                         FUZZ_API_SEED (default: random; printed for a replay)
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-.build/debug/orderlive}
examples=${FUZZ_API_EXAMPLES:-200}
seconds=${FUZZ_API_SECONDS:-600}
seed=${FUZZ_API_SEED:-$RANDOM$RANDOM}
[ -x "$binary" ] || { echo "fuzz-api: no executable at $binary; build it first (swift build)" >&2; exit 2; }
python3 -m schemathesis.cli --version >/dev/null 2>&1 \
  || { echo "fuzz-api: schemathesis is not installed for python3; run make deps" >&2; exit 2; }

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  if [ "${keep:-0}" = 0 ]; then rm -rf "$work"; else echo "fuzz-api: logs kept in $work" >&2; fi
}
trap cleanup EXIT
keep=1

# Waits up to 60 s for a pattern in a file and prints the first match.
wait_for() {
  local pattern=$1 file=$2
  for _ in $(seq 600); do
    if grep -o -m1 -E "$pattern" "$file" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "fuzz-api: gave up waiting for '$pattern' in $file" >&2
  tail -n 20 "$file" >&2
  return 1
}

"$binary" sandbox --port 0 --orders --require-auth --event-interval 500 2> "$work/sandbox.log" &
pids+=($!)
sandbox=$(wait_for 'listening on http://127\.0\.0\.1:[0-9]+' "$work/sandbox.log" | grep -o 'http://.*')

secret="fuzz-api-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s' "$secret" > "$work/ingest-secret"
printf '%s' 'orderlive-demo' > "$work/password"
chmod 600 "$work/ingest-secret" "$work/password"
cat > "$work/orderlive.yaml" <<YAML
upstream:
  base_url: "$sandbox"
auth:
  identifier: "courier@example.com"
  password_file: "$work/password"
ingest:
  listen: "127.0.0.1:0"
  auth: "bearer"
  secret_file: "$work/ingest-secret"
api:
  listen: "127.0.0.1:0"
store:
  state_dir: "$work/state"
log:
  level: "info"
  format: "json"
YAML

SWIFT_BACKTRACE=enable=yes,registers=none,sanitize=yes "$binary" run --config "$work/orderlive.yaml" 2> "$work/agent.log" &
agent=$!
pids+=($agent)
listen=$(wait_for '"push.listen":"127\.0\.0\.1:[0-9]+"' "$work/agent.log" | grep -o '127[0-9.]*:[0-9]*')
api_listen=$(wait_for '"api.listen":"127\.0\.0\.1:[0-9]+"' "$work/agent.log" | grep -o '127[0-9.]*:[0-9]*')
base="http://$listen"
api="http://$api_listen"
for _ in $(seq 300); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] && break
  sleep 0.1
done

# Each listener for half the budget, over the document it serves: the push listener with the ingest
# bearer token, the orders API (auth none on loopback) with its change feed, whose events
# schemathesis checks one by one against the document's per-event schema.
half=$(( (seconds + 1) / 2 ))
# The change feed never ends: schemathesis reads a stream up to this many events (or its request
# timeout) and checks each against the document; a snapshot of the Sandbox's book has more.
printf 'max-stream-events = 8\n' > "$work/schemathesis.toml"
status=0
for target in "$base" "$api"; do
  echo "fuzz-api: schemathesis against $target/openapi.json ($examples examples per operation, at most $half s, seed $seed)"
  # The feed reads until its request timeout when a filter matches few orders: 3 s is enough to see
  # the snapshot and the first live changes, and leaves time for the other operations.
  headers=(--request-timeout 3)
  [ "$target" = "$base" ] && headers=(--header "Authorization: Bearer $secret" --request-timeout 10)
  # From the temporary directory: schemathesis keeps a cache folder where it runs.
  (cd "$work" && timeout --kill-after=30 $((half + 120)) \
    python3 -m schemathesis.cli run "$target/openapi.json" --url "$target" --checks all \
      "${headers[@]}" \
      --max-examples "$examples" --max-time "$half" --seed "$seed" \
      --max-response-time 5 --workers 2 \
      --generation-database none --no-color --output-sanitize true \
      --report junit --report-dir "$work/report-${target##*:}") || status=$?
done

kill -0 "$agent" 2>/dev/null || { echo "fuzz-api: the agent is no longer running" >&2; tail -n 40 "$work/agent.log" >&2; exit 1; }
outcomes=$(curl -s "$base/metrics" | grep '^orderlive_push_requests_total' | grep -v ' 0$' \
  | sed -E 's/.*outcome="([a-z_]+)"\} ([0-9]+)/\1 \2/' | tr '\n' ',' | sed 's/,$//; s/,/, /g')
kill -TERM "$agent"
agent_status=0
wait "$agent" || agent_status=$?
[ "$agent_status" = 0 ] || { echo "fuzz-api: the agent exited $agent_status on SIGTERM" >&2; tail -n 40 "$work/agent.log" >&2; exit 1; }
if grep -q 'Program crashed' "$work/agent.log"; then echo "fuzz-api: the agent wrote a crash report" >&2; exit 1; fi
if grep -qF "$secret" "$work/agent.log"; then echo "fuzz-api: the ingest secret reached the agent's log" >&2; exit 1; fi
[ "$status" = 0 ] || { echo "fuzz-api: schemathesis found problems (exit $status; replay with FUZZ_API_SEED=$seed)" >&2; exit 1; }
echo "fuzz-api: clean; pushes answered by outcome: ${outcomes:-none}; the agent stopped with exit 0"
keep=0
