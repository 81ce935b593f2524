#!/usr/bin/env bash
# `make release-contract`: release the contract as it is now, under its info.version: an
# annotated tag v<version> on HEAD and contract-releases/v<version>.json (commit that file: it
# is what `make check-breaking` compares with in a clone that carries no tags).
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(node -p 'require("./generated/openapi.bundled.json").info.version')
file="contract-releases/v${version}.json"
if git rev-parse -q --verify "refs/tags/v${version}" >/dev/null || [[ -e "$file" ]]; then
  echo "v${version} is already released: raise info.version first (see CHANGELOG.md)" >&2
  exit 1
fi
grep -Eq "^##[[:space:]]+\[?v?${version//./\\.}\]?([[:space:]]|$)" CHANGELOG.md || { echo "CHANGELOG.md has no section for ${version}" >&2; exit 1; }
bash scripts/check-generated.sh >/dev/null
cp generated/openapi.bundled.json "$file"
git tag -a "v${version}" -m "Contract v${version}"
echo "released v${version}: tag v${version} and ${file} (commit it)"
