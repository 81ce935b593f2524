#!/usr/bin/env bash
# Fail when generated/ is not what scripts/generate.sh produces from openapi/
# today (someone changed the contract without running `make generate`, or
# edited a generated file by hand). CI runs it through `make check-generated`.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

bash scripts/generate.sh "$tmp"

if ! diff -r -u generated "$tmp"; then
  echo >&2
  echo "generated/ is stale: it does not match the contract in openapi/." >&2
  echo "Run 'make generate' (bash scripts/generate.sh) and commit generated/ with your contract change." >&2
  exit 1
fi
echo "generated/ is up to date."
