#!/bin/bash
# Issue 21's figures: tessera bench backfill and the River peer
# (../shared/bench/peer-river) alternating in one sitting, ROUNDS times.
# Usage: scripts/bench_vs_river.sh [ROUNDS]   (builds both; starts the peer's
# throwaway PostgreSQL with its pg.sh). Prints each command and its JSON line.
set -euo pipefail
ROUNDS=${1:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEER=$ROOT/../shared/bench/peer-river
T=$(mktemp -d)/tessera
R=$(dirname "$T")/peer-river
(cd "$ROOT" && go build -o "$T" .)
# pg.sh fails when its server is already up (a second run): then check it answers.
(cd "$PEER" && { ./pg.sh >/dev/null 2>&1 || su postgres -c "psql -h 127.0.0.1 -p 55432 -U postgres -c 'select 1'" >/dev/null; } && go build -o "$R" .)
run() { echo "\$ $*"; "$@" 2>&1 | tail -1; }
echo "# $(date -u) $(uptime)"
for round in $(seq "$ROUNDS"); do
  echo "## round $round"
  run "$T" bench backfill --partitions 1000000 --chunk-size 100 --concurrency 8 --executor noop
  (cd /tmp && run "$R" --partitions 1000000 --chunk-size 100 --concurrency 32)
  run "$T" bench backfill --partitions 1000000 --chunk-size 100 --concurrency 100 --executor noop
  run "$T" bench backfill --partitions 20000 --chunk-size 1 --concurrency 8 --executor noop
  (cd /tmp && run "$R" --partitions 20000 --chunk-size 1 --concurrency 32)
done
echo "# $(date -u) $(uptime)"
