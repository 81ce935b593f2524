#!/usr/bin/env bash
# Lint the hand-written contract (openapi/), bundle it into one document and
# generate the TypeScript types from it.
#
#   bash scripts/generate.sh             lint, then write into generated/
#   bash scripts/generate.sh DIR         lint, then write into DIR (check-generated.sh uses a temp dir)
#   bash scripts/generate.sh --lint-only lint only
#
# Outputs (deterministic: the same contract always gives byte-identical files):
#   DIR/openapi.bundled.yaml  one-file contract (the validator and /api/openapi.yaml), with x-codeSamples
#                             on every operation (scripts/docs/code-samples.ts)
#   DIR/openapi.bundled.json  the same, as JSON (/api/openapi.json)
#   DIR/openapi.d.ts          openapi-typescript types: paths, components, operations['createTransfer']...
#   DIR/operations.ts         the operation map: id, method, path, security, x-access (scripts/generate-operations.ts)
set -euo pipefail
cd "$(dirname "$0")/.."

# No network here: no telemetry, no update or announcement checks.
export REDOCLY_TELEMETRY=off
export REDOCLY_SUPPRESS_UPDATE_NOTICE=true
export REDOCLY_SUPPRESS_NOTIFICATIONS=true

ROOT=openapi/openapi.yaml
LINT_ONLY=false
OUT=generated
if [[ "${1:-}" == "--lint-only" ]]; then
  LINT_ONLY=true
elif [[ -n "${1:-}" ]]; then
  OUT="$1"
fi

# Redocly CLI 2 prints a Node 20 deprecation banner on every run; drop it.
without_banner() { grep -v -e '[╔║╚]' || true; }

echo "== redocly lint (recommended-strict, see redocly.yaml)"
set +e
npx --no-install redocly lint "$ROOT" --format=stylish 2>&1 | without_banner
status=${PIPESTATUS[0]}
set -e
if (( status != 0 )); then
  echo "redocly lint failed" >&2
  exit "$status"
fi

# The bundle as clients see it, linted as an integrator would (`redocly lint --extends
# recommended-strict` on the one file): no ignore file applies to it, so no exception hides a
# problem. redocly.yaml's own settings (servers on example.com) still apply.
echo "== redocly lint of the bundle (--extends recommended-strict, no exceptions)"
LINT_DIR=$(mktemp -d)
trap 'rm -rf "$LINT_DIR"' EXIT
set +e
{ npx --no-install redocly bundle "$ROOT" -o "$LINT_DIR/openapi.bundled.yaml" && npx --no-install redocly lint "$LINT_DIR/openapi.bundled.yaml" --extends recommended-strict --format=stylish; } 2>&1 | without_banner
status=${PIPESTATUS[0]}
set -e
if (( status != 0 )); then
  echo "redocly lint of the bundle failed" >&2
  exit "$status"
fi

echo "== spectral lint (spectral:oas + OWASP, see .spectral.yaml)"
npx --no-install spectral lint "$ROOT" --fail-severity=error

if [[ "$LINT_ONLY" == true ]]; then
  exit 0
fi

# redocly bundle <input> <output>, its banner left out; a failed bundle ends the script with its status.
bundle() {
  set +e
  npx --no-install redocly bundle "$1" -o "$2" 2>&1 | without_banner
  local status=${PIPESTATUS[0]}
  set -e
  if (( status != 0 )); then
    echo "redocly bundle failed ($2)" >&2
    exit "$status"
  fi
}

mkdir -p "$OUT"
echo "== bundle into $OUT/"
for ext in yaml json; do
  bundle "$ROOT" "$OUT/openapi.bundled.$ext"
done

# Every operation's x-codeSamples (curl and the TypeScript client), made from its examples in the
# bundle only (openapi/ never holds them); the YAML is then written again from that JSON.
echo "== x-codeSamples -> $OUT/openapi.bundled.{json,yaml}"
npx --no-install tsx scripts/docs/code-samples.ts "$OUT"
bundle "$OUT/openapi.bundled.json" "$OUT/openapi.bundled.yaml"

echo "== openapi-typescript -> $OUT/openapi.d.ts"
npx --no-install openapi-typescript "$OUT/openapi.bundled.yaml" --redocly scripts/typegen.redocly.yaml -o "$OUT/openapi.d.ts"

echo "== operation map -> $OUT/operations.ts"
npx --no-install tsx scripts/generate-operations.ts "$OUT"
