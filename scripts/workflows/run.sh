#!/usr/bin/env bash
# `make workflows`: the integrator workflows (docs/workflows/*.arazzo.yaml, Arazzo 1.0.1) run by
# Redocly Respect (@redocly/cli, a devDependency) against `make run` on a fresh embedded
# database. Respect checks every response against its description: the contract
# (generated/openapi.bundled.yaml) for the API, docs/workflows/payment-page.openapi.yaml for the
# payment page's form.
#
# Every docs/workflows/*.arazzo.yaml is run whole, except checkout.arazzo.yaml, run as its three
# workflows: between them this script reads what Respect cannot (see that file). A new workflow
# file needs nothing here: drop it into docs/workflows/. webhooks.arazzo.yaml gets the URL of a
# receiver this script runs on loopback (`receiverUrl`), which answers 204 to every delivery.
set -euo pipefail
cd "$(dirname "$0")/../.."
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true REDOCLY_SUPPRESS_NOTIFICATIONS=true
# Run by scripts/with-make-run.sh (which starts `make run` and sets API_URL and PAGE_URL);
# started alone, it starts `make run` itself.
if [[ -z "${API_URL:-}" ]]; then exec bash scripts/with-make-run.sh bash "$0" "$@"; fi
api=$API_URL
page=$PAGE_URL
work=$(mktemp -d)
receiver_pid=""
trap '[[ -n "$receiver_pid" ]] && kill "$receiver_pid" 2>/dev/null; rm -rf "$work"' EXIT

# The webhook receiver of webhooks.arazzo.yaml: on a free loopback port, 204 to every POST,
# one line per delivery in its log.
node -e '
  const http = require("node:http");
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      process.stderr.write(`${req.method} ${req.url} webhook-id=${req.headers["webhook-id"]} signature=${req.headers["webhook-signature"] ? "present" : "absent"}\n`);
      res.writeHead(204).end();
    });
  });
  server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
' >"$work/receiver.port" 2>"$work/receiver.log" &
receiver_pid=$!
for _ in $(seq 1 100); do [[ -s "$work/receiver.port" ]] && break; sleep 0.1; done
receiver_url="http://127.0.0.1:$(cat "$work/receiver.port")/webhooks"

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
if respect "checkout: find the account" docs/workflows/checkout.arazzo.yaml -w find-account -J "$work/find.json"; then
  org=$(step_data "$work/find.json" me | node -pe 'JSON.parse(require("fs").readFileSync(0)).organizations[0].id')
  account=$(step_data "$work/find.json" accounts | node -pe 'JSON.parse(require("fs").readFileSync(0)).data.find((a) => a.currency_code === "XOF" && a.status === "active").id')
  if respect "checkout: open" docs/workflows/checkout.arazzo.yaml -w open-checkout -i "orgId=$org" -i "xofAccountId=$account" -J "$work/open.json"; then
    read -r code link < <(step_data "$work/open.json" checkout | node -pe 'const d = JSON.parse(require("fs").readFileSync(0)); `${d.code} ${d.id}`')
    html=$(curl -fsS -c "$work/jar" "$page/pay/$code")
    form_token=$(grep -o 'name="token" value="[^"]*"' <<<"$html" | head -n 1 | sed 's/.*value="//; s/"$//')
    browser_id=$(awk '$6 == "pay_bid" { print $7 }' "$work/jar")
    respect "checkout: pay" docs/workflows/checkout.arazzo.yaml -w pay-checkout \
      -i "code=$code" -i "linkId=$link" -i "orgId=$org" -i "formToken=$form_token" -i "browserId=$browser_id" || true
  fi
fi

for file in docs/workflows/*.arazzo.yaml; do
  [[ "$file" == docs/workflows/checkout.arazzo.yaml ]] && continue
  inputs=()
  [[ "$file" == docs/workflows/webhooks.arazzo.yaml ]] && inputs=(-i "receiverUrl=$receiver_url")
  respect "$(basename "$file" .arazzo.yaml)" "$file" "${inputs[@]}" || true
done
echo "webhook receiver ($receiver_url): $(wc -l <"$work/receiver.log") deliveries"
sed 's/^/  /' "$work/receiver.log"

echo "workflows: $passed passed, $failed failed"
(( failed == 0 ))
