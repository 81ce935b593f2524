#!/usr/bin/env bash
# `make client-example`: builds the TypeScript client (clients/typescript), checks that
# `npm pack` makes a package with its compiled files, and runs its example against `make run`
# (through scripts/with-make-run.sh when API_URL is not set).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${API_URL:-}" ]]; then exec bash scripts/with-make-run.sh bash "$0" "$@"; fi
cd clients/typescript
[[ -f node_modules/.package-lock.json && node_modules/.package-lock.json -nt package-lock.json ]] || npm ci --no-audit --no-fund
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
npm pack --silent --pack-destination "$out" >/dev/null
tarball=$(ls "$out"/*.tgz)
contents=$(tar -tzf "$tarball")
for file in package/dist/index.js package/dist/index.d.ts package/dist/webhooks.js package/dist/openapi-types.d.ts package/README.md; do
  grep -qx "$file" <<<"$contents" || { echo "npm pack: $file is missing from $(basename "$tarball")"; exit 1; }
done
echo "npm pack: $(basename "$tarball") ($(wc -l <<<"$contents") files)"
API_URL="$API_URL" node dist/examples/journey.js
