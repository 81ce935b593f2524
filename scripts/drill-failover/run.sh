#!/usr/bin/env bash
# `make drill-failover`: installs Debian's pg_auto_failover when it is absent, then runs
# scripts/drill-failover/drill.ts (a monitor, a primary and a synchronous standby in a scratch
# folder, two API instances with a multi-host DATABASE_URL, a switchover and a kill -9 of the
# primary's postmaster under load, then the invariants). Bounded: the drill stops itself after
# DRILL_TIMEOUT_S (300) seconds, and this wrapper after 330.
set -euo pipefail
cd "$(dirname "$0")/../.."
PG_BIN="${DRILL_PG_BIN:-/usr/lib/postgresql/15/bin}"
if ! command -v pg_autoctl >/dev/null || [[ ! -e /usr/share/postgresql/15/extension/pgautofailover.control ]]; then
  echo "== installing pg_auto_failover from Debian (postgresql-15-auto-failover, pg-auto-failover-cli)"
  if [[ "$(id -u)" != 0 ]]; then echo "pg_auto_failover is missing: run as root once, or apt-get install postgresql-15-auto-failover pg-auto-failover-cli"; exit 1; fi
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-auto-failover pg-auto-failover-cli >/dev/null)
fi
[[ -x "$PG_BIN/initdb" ]] || { echo "PostgreSQL 15 binaries are required in $PG_BIN (DRILL_PG_BIN)"; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server is required (apt-get install redis-server)"; exit 1; }
# PostgreSQL refuses to run as root: as root, the nodes run as DRILL_PG_USER (postgres).
if [[ "$(id -u)" == 0 ]]; then
  id "${DRILL_PG_USER:-postgres}" >/dev/null || { echo "user ${DRILL_PG_USER:-postgres} is required to run PostgreSQL (running as root)"; exit 1; }
fi
export DRILL_PG_BIN="$PG_BIN"
exec timeout --kill-after=10 "$(( ${DRILL_TIMEOUT_S:-300} + 30 ))" node --import tsx scripts/drill-failover/drill.ts
