#!/usr/bin/env bash
# Starts `make run` with no DATABASE_URL or REDIS_URL (embedded PostgreSQL, memory rate limits),
# waits for /api/health, logs in as a demo user, then stops it with SIGTERM and expects a
# clean exit.
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir=$(mktemp -d)
port=${SMOKE_PORT:-18080}
pay_port=${SMOKE_PAY_PORT:-18081}
log_file=$(mktemp)
env -u DATABASE_URL -u REDIS_URL EMBEDDED_DATA_DIR="$data_dir/pg" PORT="$port" PAY_PORT="$pay_port" \
  setsid make run >"$log_file" 2>&1 &
runner=$!
cleanup() {
  kill -TERM -- -"$runner" 2>/dev/null || true
  rm -rf "$data_dir" "$log_file"
}
trap cleanup EXIT

for i in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$port/api/health" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$runner" 2>/dev/null; then echo "make run exited early:"; cat "$log_file"; exit 1; fi
  sleep 1
done
curl -fsS "http://127.0.0.1:$port/api/health"; echo
status=$(curl -s -o /tmp/smoke-login.json -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"identifier":"owner@demo.example","password":"demo-password"}' "http://127.0.0.1:$port/api/auth/login")
if [ "$status" != 200 ]; then echo "demo login answered $status"; cat /tmp/smoke-login.json; cat "$log_file"; exit 1; fi
echo "demo login: 200"

# SIGTERM the service itself (not make) and expect a clean exit.
service_pid=$(pgrep -f "tsx.*src/main.ts" -P "$(pgrep -d, -g "$runner")" | tail -n 1 || true)
kill -TERM -- -"$runner"
# Wait for every process of the group (make dies at once; the service drains, closes the
# embedded database and logs its last line after it), not only for make.
for i in $(seq 1 60); do pgrep -g "$runner" >/dev/null || break; sleep 0.5; done
if pgrep -g "$runner" >/dev/null; then echo "service did not stop within 30 s:"; pgrep -a -g "$runner"; tail -n 20 "$log_file"; exit 1; fi
grep -q '"msg":"stopped"' "$log_file" || { echo "no clean shutdown in the log:"; tail -n 20 "$log_file"; exit 1; }
echo "smoke passed (service pid ${service_pid:-?} stopped cleanly)"
