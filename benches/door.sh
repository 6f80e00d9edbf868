#!/usr/bin/env bash
# The PostgreSQL door against connecting directly, in the same run (docs/door.md). It builds the
# release server, starts it on a fresh redb data directory with its door, over the PostgreSQL of
# .ci/db-servers-up.sh, and prints, each as a ratio to the direct connection (TLS both ways:
# sslmode=require):
#   - pgbench -S -c 4 -j 2 (select-only, simple protocol, 4 clients), ROUNDS (3) rounds of SECS
#     (10) seconds each, door and direct in turn; the median of each side's tps, and the door
#     statements' audit events written durably per second (from the server's metrics);
#   - psql reading 1,000,000 rows (`--max-rows` raised past them) to /dev/null, ROUNDS times in
#     turn; the best of each side's seconds;
#   - Ctrl-C on pg_sleep(60) through the door: the seconds until it left pg_stat_activity.
# pgbench's tables are made (scale 2) in checkdb when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p dbconsole-server
ROUNDS="${ROUNDS:-3}"
SECS="${SECS:-10}"
bin=target/release/dbconsole
export PGPASSWORD=checkpw
PSQL=(psql -X -qAt -h 127.0.0.1 -U checker -d checkdb)
if [ "$("${PSQL[@]}" -c "SELECT count(*) FROM pg_class WHERE relname = 'pgbench_accounts'")" != 1 ]; then
  pgbench -i -q -s 2 -h 127.0.0.1 -U checker checkdb >/dev/null 2>&1
fi
work="$(mktemp -d)"
cleanup() {
  [ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

DBCONSOLE_API_KEY=door-bench-api-key RUST_LOG=warn "$bin" serve --listen 127.0.0.1:0 --storage redb \
  --max-rows 2000000 --data-dir "$work/data" --door-listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 >"$work/out" 2>/dev/null &
echo "$!" >"$work/pid"
for _ in $(seq 100); do grep -q '^listening on ' "$work/out" && break; sleep 0.1; done
addr="$(sed -n 's/^listening on //p' "$work/out")"
metrics="$(sed -n 's/^metrics on //p' "$work/out")"
# The run events written durably so far (each door statement's audit event is one).
written() { curl -sf "$metrics" | sed -n 's/^dbconsole_run_events_written_total //p'; }
door_port="$(sed -n 's/^PostgreSQL door on [^:]*:\([0-9]*\).*/\1/p' "$work/out")"
db="$(curl -sf -H 'x-api-key: door-bench-api-key' -H 'content-type: application/json' \
  -d '{"name":"bench","adapter":"postgres","hostname":"127.0.0.1","port":5432,"database":"checkdb","credentials":[{"username":"checker","password":"checkpw","timeout":300}]}' \
  "http://$addr/api/v1/console/databases" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
key="$("$bin" keys create --kind api-key --scope query --user bench@example.com --name bench --data-dir "$work/data" | sed -n 's/^secret: *//p')"

direct=(host=127.0.0.1 port=5432 user=checker dbname=checkdb sslmode=require)
through=(host=127.0.0.1 "port=$door_port" user=bench@example.com "dbname=$db" sslmode=require)
# as SIDE CMD…: runs CMD with the side's password.
as() { if [ "$1" = door ]; then shift; PGPASSWORD="$key" "$@"; else shift; PGPASSWORD=checkpw "$@"; fi; }
conn() { if [ "$1" = door ]; then echo "${through[*]}"; else echo "${direct[*]}"; fi; }

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
best() { sort -n | head -1; }

echo "pgbench -S -c 4 -j 2, $ROUNDS rounds of $SECS s, in turn:"
for round in $(seq "$ROUNDS"); do
  for side in direct door; do
    before="$(written)"
    tps="$(as "$side" pgbench -n -S -c 4 -j 2 -T "$SECS" "$(conn "$side")" 2>/dev/null \
      | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1)"
    if [ "$side" = door ]; then
      sleep 0.2 # the last batch of events
      events="$(python3 -c "print(f'{($(written) - ${before:-0}) / $SECS:.0f}')")"
      echo "  round $round $side: $tps tps, $events audit events/s written"
    else
      echo "  round $round $side: $tps tps"
    fi
    echo "$tps" >>"$work/pgbench-$side"
  done
done
d="$(median <"$work/pgbench-direct")"; t="$(median <"$work/pgbench-door")"
echo "pgbench median: direct $d tps, door $t tps: door/direct = $(python3 -c "print(f'{$t/$d:.2f}')")x"

echo "psql reading 1,000,000 rows to /dev/null, $ROUNDS rounds in turn:"
sql="select g, md5(g::text) from generate_series(1, 1000000) g"
for round in $(seq "$ROUNDS"); do
  for side in direct door; do
    start=$(date +%s.%N)
    as "$side" psql -X -qAt "$(conn "$side")" -c "$sql" >/dev/null
    secs="$(python3 -c "print(f'{$(date +%s.%N) - $start:.3f}')")"
    echo "  round $round $side: $secs s"
    echo "$secs" >>"$work/psql-$side"
  done
done
d="$(best <"$work/psql-direct")"; t="$(best <"$work/psql-door")"
echo "1M rows best: direct $d s, door $t s: rows/s door/direct = $(python3 -c "print(f'{$d/$t:.2f}')")x"

echo "Ctrl-C on pg_sleep(60) through the door:"
marker="select pg_sleep(60) -- door bench $$"
# Job control on: a background job of a script would otherwise ignore SIGINT.
set -m
as door psql -X "$(conn door)" -c "$marker" >/dev/null 2>&1 &
client=$!
for _ in $(seq 100); do
  [ "$("${PSQL[@]}" -c "select count(*) from pg_stat_activity where query = '$marker' and state = 'active'")" = 1 ] && break
  sleep 0.1
done
start=$(date +%s.%N)
# The job is a subshell running psql: the signal goes to its whole process group, as a
# terminal's Ctrl-C does.
kill -INT -- "-$client"
for _ in $(seq 300); do
  [ "$("${PSQL[@]}" -c "select count(*) from pg_stat_activity where query = '$marker' and state = 'active'")" = 0 ] && break
  sleep 0.02
done
echo "  gone from pg_stat_activity after $(python3 -c "print(f'{$(date +%s.%N) - $start:.3f}')") s"
wait "$client" 2>/dev/null || true
