#!/usr/bin/env bash
# `make lint` part one: both contract linters (Redocly strict, Spectral oas + OWASP), zero errors.
exec bash "$(dirname "$0")/generate.sh" --lint-only
