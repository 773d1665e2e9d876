#!/bin/bash
# Issue 21's figures: tessera bench backfill and the River peer
# (../shared/bench/peer-river) alternating in one sitting, ROUNDS times.
# Usage: scripts/bench_vs_river.sh [ROUNDS]   (builds both; starts the peer's
# throwaway PostgreSQL with its pg.sh). Prints each command and its JSON line.
set -euo pipefail
ROUNDS=${1:-2}
. "$(dirname "$0")/river_peer.sh"
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
