# Sourced by the bench_*_river.sh scripts: builds tessera ($T) and the River
# peer ($R, ../shared/bench/peer-river) into a temporary folder, starts the
# peer's throwaway PostgreSQL (its pg.sh, 127.0.0.1:55432) and defines run,
# which prints a command and the last line it prints (its JSON line).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEER=$ROOT/../shared/bench/peer-river
T=$(mktemp -d)/tessera
R=$(dirname "$T")/peer-river
(cd "$ROOT" && go build -o "$T" .)
# pg.sh fails when its server is already up (a second run): then check it answers.
(cd "$PEER" && { ./pg.sh >/dev/null 2>&1 || su postgres -c "psql -h 127.0.0.1 -p 55432 -U postgres -c 'select 1'" >/dev/null; } && go build -o "$R" .)
run() { echo "\$ $*"; "$@" 2>&1 | tail -1; }
