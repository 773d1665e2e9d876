#!/bin/bash
# Issue 23's figures: tessera bench backfill on PostgreSQL and the River peer
# (../shared/bench/peer-river) on the same server (its pg.sh, 127.0.0.1:55432),
# alternating in one sitting, ROUNDS times: Tessera at River's concurrency
# (its 32 workers: 32 runs at once) and at 8; then the scaling of 1 and 3
# instances with an executor that sleeps 50 ms a chunk and 32 slots each.
# Each Tessera run gets a fresh database (tessera_bench).
# Usage: scripts/bench_postgres_vs_river.sh [ROUNDS]
set -euo pipefail
ROUNDS=${1:-2}
. "$(dirname "$0")/river_peer.sh"
DB=postgres://postgres@127.0.0.1:55432/tessera_bench?sslmode=disable
fresh() { su postgres -c "psql -q -h 127.0.0.1 -p 55432 -U postgres -c 'DROP DATABASE IF EXISTS tessera_bench' -c 'CREATE DATABASE tessera_bench'" >/dev/null 2>&1; }
echo "# $(date -u) $(uptime)"
for round in $(seq "$ROUNDS"); do
  echo "## round $round"
  fresh; run "$T" bench backfill --db "$DB" --partitions 1000000 --chunk-size 100 --concurrency 32 --executor noop
  (cd /tmp && run "$R" --partitions 1000000 --chunk-size 100 --concurrency 32)
  fresh; run "$T" bench backfill --db "$DB" --partitions 1000000 --chunk-size 100 --concurrency 8 --executor noop
  fresh; run "$T" bench backfill --db "$DB" --partitions 20000 --chunk-size 1 --concurrency 32 --executor noop
  (cd /tmp && run "$R" --partitions 20000 --chunk-size 1 --concurrency 32)
  fresh; run "$T" bench backfill --db "$DB" --partitions 20000 --chunk-size 1 --concurrency 8 --executor noop
done
echo "## scaling: 6,000 runs of one partition, sleep:50ms, 32 slots an instance"
for n in 1 3 1 3; do
  fresh; run "$T" bench backfill --db "$DB" --partitions 6000 --chunk-size 1 --concurrency 32 --instances "$n" --executor sleep:50ms
done
echo "# $(date -u) $(uptime)"
