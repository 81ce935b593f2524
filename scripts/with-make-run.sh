#!/usr/bin/env bash
# Runs a command against `make run` on a fresh embedded database (a temporary data directory),
# then stops the service: `bash scripts/with-make-run.sh COMMAND...`. The command gets API_URL
# (http://127.0.0.1:$PORT/api) and PAGE_URL (the payment page). Ports: WITH_RUN_PORT (18480)
# and WITH_RUN_PAY_PORT (18481). Used by `make workflows`, `make client-example`, `make guides`,
# `make samples` and CI. Many clients log in as the same demo users from one address in a few
# minutes (every guide, every sample), so the login limits are raised for this run
# (RATE_LIMIT_LOGIN, RATE_LIMIT_LOGIN_PER_IP; set them to keep the defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
port=${WITH_RUN_PORT:-18480}
pay_port=${WITH_RUN_PAY_PORT:-18481}
export API_URL="http://127.0.0.1:$port/api" PAGE_URL="http://127.0.0.1:$pay_port"
work=$(mktemp -d)
export MAKE_RUN_LOG="$work/run.log"

env -u DATABASE_URL -u REDIS_URL NODE_ENV=development EMBEDDED_DATA_DIR="$work/pg" PORT="$port" PAY_PORT="$pay_port" \
  PAY_URL="$PAGE_URL" METRICS_PORT=0 LOG_FORMAT=json \
  RATE_LIMIT_LOGIN="${RATE_LIMIT_LOGIN:-1000}" RATE_LIMIT_LOGIN_PER_IP="${RATE_LIMIT_LOGIN_PER_IP:-1000}" setsid make run >"$MAKE_RUN_LOG" 2>&1 &
runner=$!
cleanup() {
  kill -TERM -- -"$runner" 2>/dev/null || true
  for _ in $(seq 1 40); do pgrep -g "$runner" >/dev/null || break; sleep 0.5; done
  kill -KILL -- -"$runner" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

for _ in $(seq 1 180); do
  curl -fsS "$API_URL/health" >/dev/null 2>&1 && break
  if ! kill -0 "$runner" 2>/dev/null; then echo "make run exited early:"; cat "$MAKE_RUN_LOG"; exit 1; fi
  sleep 1
done
curl -fsS "$API_URL/health" >/dev/null || { echo "make run did not answer within 180 s"; tail -n 30 "$MAKE_RUN_LOG"; exit 1; }
echo "make run answers on $API_URL (payment page $PAGE_URL)"
set +e
"$@"
status=$?
set -e
if grep -q '"level":50' "$MAKE_RUN_LOG"; then
  echo "!! the API logged errors meanwhile:"
  grep '"level":50' "$MAKE_RUN_LOG" | head -n 20
  status=1
fi
exit "$status"
