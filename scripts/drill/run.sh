#!/usr/bin/env bash
# `make drill`: installs Debian's nginx when it is absent, makes sure PostgreSQL answers, then
# runs scripts/drill/drill.ts (three instances behind nginx, faults, invariants). Bounded: the
# drill stops itself after DRILL_TIMEOUT_S (300) seconds, and this wrapper after 330.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ ! -x "${DRILL_NGINX:-/usr/sbin/nginx}" ]]; then
  echo "== installing nginx from Debian"
  # Debian's package would start a system nginx on :80: a policy-rc.d that refuses keeps it
  # stopped (the drill runs its own, on loopback ports), and is removed after.
  policy=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; policy=/usr/sbin/policy-rc.d; fi
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null) \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
  [[ -n "$policy" ]] && rm -f "$policy"
fi
command -v redis-server >/dev/null || { echo "redis-server is required (apt-get install redis-server)"; exit 1; }
pg_isready -q -h 127.0.0.1 -p 5432 || { echo "PostgreSQL does not answer on 127.0.0.1:5432 (DRILL_PG_URL)"; exit 1; }
exec timeout --kill-after=10 "$(( ${DRILL_TIMEOUT_S:-300} + 30 ))" node --import tsx scripts/drill/drill.ts
