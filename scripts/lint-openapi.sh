#!/usr/bin/env bash
# `make lint` part one: both contract linters (Redocly strict on the sources and, with --extends
# recommended-strict and no ignore file, on the bundle; Spectral oas + OWASP), zero errors.
exec bash "$(dirname "$0")/generate.sh" --lint-only
