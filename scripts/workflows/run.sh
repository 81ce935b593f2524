#!/usr/bin/env bash
# `make workflows`: the integrator workflows (workflows/*.arazzo.yaml, Arazzo 1.0.1) run by
# Redocly Respect (@redocly/cli, a devDependency) against `make run` on a fresh embedded
# database. Respect checks every response against its description: the contract
# (generated/openapi.bundled.yaml) for the API, workflows/payment-page.openapi.yaml for the
# payment page's form.
#
# Every workflows/*.arazzo.yaml is run whole, except checkout.arazzo.yaml, run in two halves:
# Respect cannot read a value out of HTML, so between them this script plays the customer's
# browser for one read (the page's form token and the cookie it is bound to). A new workflow
# file (webhooks, API keys) needs nothing here: drop it into workflows/.
#
#   WORKFLOWS_PORT (18480) and WORKFLOWS_PAY_PORT (18481): where `make run` listens.
set -euo pipefail
cd "$(dirname "$0")/../.."
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true REDOCLY_SUPPRESS_NOTIFICATIONS=true
port=${WORKFLOWS_PORT:-18480}
pay_port=${WORKFLOWS_PAY_PORT:-18481}
api="http://127.0.0.1:$port/api"
page="http://127.0.0.1:$pay_port"
work=$(mktemp -d)
log_file="$work/run.log"

env -u DATABASE_URL -u REDIS_URL NODE_ENV=development EMBEDDED_DATA_DIR="$work/pg" PORT="$port" PAY_PORT="$pay_port" \
  PAY_URL="$page" METRICS_PORT=0 LOG_FORMAT=json setsid make run >"$log_file" 2>&1 &
runner=$!
cleanup() {
  kill -TERM -- -"$runner" 2>/dev/null || true
  for _ in $(seq 1 40); do pgrep -g "$runner" >/dev/null || break; sleep 0.5; done
  kill -KILL -- -"$runner" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

for _ in $(seq 1 180); do
  curl -fsS "$api/health" >/dev/null 2>&1 && break
  if ! kill -0 "$runner" 2>/dev/null; then echo "make run exited early:"; cat "$log_file"; exit 1; fi
  sleep 1
done
curl -fsS "$api/health" >/dev/null || { echo "make run did not answer within 180 s"; tail -n 30 "$log_file"; exit 1; }

without_banner() { grep -v -e '[╔║╚]' || true; }
failed=0
passed=0
respect() {
  local label=$1
  shift
  echo "== respect: $label"
  set +e
  npx --no-install redocly respect "$@" -S "api=$api" -S "page=$page" 2>&1 | without_banner
  local status=${PIPESTATUS[0]}
  set -e
  if (( status == 0 )); then passed=$((passed + 1)); else failed=$((failed + 1)); echo "!! $label failed (exit $status)"; fi
  return "$status"
}

# The Checkout in three workflows; between them the runner reads what Respect cannot: the
# active XOF account out of the accounts list, then (as the customer's browser) the form
# token of the page and the cookie it is bound to.
step_data() { # FILE STEP: the `data` of a step's response in a Respect JSON log
  node -e '
    const run = require(process.argv[1]);
    const flow = Object.values(run.files)[0].executedWorkflows[0];
    console.log(JSON.stringify(flow.executedSteps.find((s) => s.stepId === process.argv[2]).response.body.data));' "$1" "$2"
}
if respect "checkout: find the account" workflows/checkout.arazzo.yaml -w find-account -J "$work/find.json"; then
  org=$(step_data "$work/find.json" me | node -pe 'JSON.parse(require("fs").readFileSync(0)).organizations[0].id')
  account=$(step_data "$work/find.json" accounts | node -pe 'JSON.parse(require("fs").readFileSync(0)).data.find((a) => a.currency_code === "XOF" && a.status === "active").id')
  if respect "checkout: open" workflows/checkout.arazzo.yaml -w open-checkout -i "orgId=$org" -i "xofAccountId=$account" -J "$work/open.json"; then
    read -r code link < <(step_data "$work/open.json" checkout | node -pe 'const d = JSON.parse(require("fs").readFileSync(0)); `${d.code} ${d.id}`')
    html=$(curl -fsS -c "$work/jar" "$page/pay/$code")
    form_token=$(grep -o 'name="token" value="[^"]*"' <<<"$html" | head -n 1 | sed 's/.*value="//; s/"$//')
    browser_id=$(awk '$6 == "pay_bid" { print $7 }' "$work/jar")
    respect "checkout: pay" workflows/checkout.arazzo.yaml -w pay-checkout \
      -i "code=$code" -i "linkId=$link" -i "orgId=$org" -i "formToken=$form_token" -i "browserId=$browser_id" || true
  fi
fi

for file in workflows/*.arazzo.yaml; do
  [[ "$file" == workflows/checkout.arazzo.yaml ]] && continue
  respect "$(basename "$file" .arazzo.yaml)" "$file" || true
done

if grep -q '"level":50' "$log_file"; then
  echo "!! the API logged errors during the workflows:"
  grep '"level":50' "$log_file" | head -n 20
  failed=$((failed + 1))
fi
echo "workflows: $passed passed, $failed failed"
(( failed == 0 ))
