#!/usr/bin/env bash
# Streaming a stored table through the release server, as an outsider would: `curl` to /dev/null
# against `psql --csv` to /dev/null, in the same run. It builds the release server, starts it on a
# fresh redb data directory over the PostgreSQL of .ci/db-servers-up.sh (the table
# `run_bench_stored` of `cargo bench --bench run`, made here when missing: 1,000,000 rows, 5
# columns), and prints, for CSV, JSON and NDJSON, the best of ROUNDS (3) times to the end and to the
# first byte, and the ratio to psql's time. BENCH_BEFORE=<another dbconsole binary> measures it
# too, round by round in turn: before and after in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p dbconsole-server
ROUNDS="${ROUNDS:-3}"
export PGPASSWORD=checkpw
PSQL=(psql -X -qAt -h 127.0.0.1 -U checker -d checkdb)
if [ "$("${PSQL[@]}" -c "SELECT count(*) FROM pg_class WHERE relname = 'run_bench_stored' AND reltuples >= 1000000")" != 1 ]; then
  "${PSQL[@]}" -c "DROP TABLE IF EXISTS run_bench_stored" \
    -c "CREATE TABLE run_bench_stored AS SELECT g, g * 2 AS twice, md5(g::text) AS hash, TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * INTERVAL '1 second' AS at, g % 7 = 0 AS seventh FROM generate_series(1, 1000000) g" \
    -c "VACUUM ANALYZE run_bench_stored"
fi
work="$(mktemp -d)"
# The servers' pids, in a file: `start` runs in a command substitution's subshell.
cleanup() {
  if [ -f "$work/pids" ]; then
    while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$work/pids"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# start NAME BINARY: a server on a fresh data directory; prints "addr key query-body".
start() {
  local name="$1" binary="$2" dir="$work/$1"
  mkdir -p "$dir"
  local key
  key="$("$binary" keys create --kind api-key --scope query --user bench@example.com --name bench --data-dir "$dir/data" | sed -n 's/^secret: *//p')"
  DBCONSOLE_API_KEY=stream-bench-api-key RUST_LOG=warn "$binary" serve --listen 127.0.0.1:0 --storage redb --max-rows 1000000 --data-dir "$dir/data" >"$dir/out" 2>/dev/null &
  echo "$!" >>"$work/pids"
  for _ in $(seq 100); do grep -q '^listening on ' "$dir/out" && break; sleep 0.1; done
  local addr
  addr="$(sed -n 's/^listening on //p' "$dir/out")"
  local db
  db="$(curl -sf -H 'x-api-key: stream-bench-api-key' -H 'content-type: application/json' \
    -d '{"name":"stream","adapter":"postgres","hostname":"127.0.0.1","port":5432,"database":"checkdb","credentials":[{"username":"checker","password":"checkpw"}]}' \
    "http://$addr/api/v1/console/databases")"
  local db_id cred_id
  db_id="$(echo "$db" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
  cred_id="$(echo "$db" | python3 -c 'import json,sys; print(json.load(sys.stdin)["credentials"][0]["id"])')"
  echo "$addr $key {\"database_id\":\"$db_id\",\"credential_id\":\"$cred_id\",\"query\":\"SELECT * FROM run_bench_stored\",\"limit\":1000000}"
}

# run ADDR KEY BODY ACCEPT: a new query, run to /dev/null; prints "total first-byte".
run() {
  local id
  id="$(curl -sf -H "x-api-key: $2" -H 'content-type: application/json' -d "$3" "http://$1/api/v1/console/queries" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
  curl -sf -o /dev/null -w '%{time_total} %{time_starttransfer}\n' -X POST -H "x-api-key: $2" -H "accept: $4" \
    "http://$1/api/v1/console/queries/$id/run"
}

best() { sort -n | head -1; }

names=(after)
binaries=("$PWD/target/release/dbconsole")
if [ -n "${BENCH_BEFORE:-}" ]; then names=(before after); binaries=("$BENCH_BEFORE" "$PWD/target/release/dbconsole"); fi
declare -A servers
for i in "${!names[@]}"; do servers[${names[$i]}]="$(start "${names[$i]}" "${binaries[$i]}")"; done

psql_times=()
declare -A totals firsts
for _ in $(seq "$ROUNDS"); do
  start_ns=$(date +%s%N)
  "${PSQL[@]}" --csv -c 'SELECT * FROM run_bench_stored' >/dev/null
  psql_times+=("$(( $(date +%s%N) - start_ns ))")
  for name in "${names[@]}"; do
    read -r addr key body <<<"${servers[$name]}"
    for accept in text/csv application/json application/x-ndjson; do
      read -r total first < <(run "$addr" "$key" "$body" "$accept")
      totals[$name $accept]+="$total "
      firsts[$name $accept]+="$first "
    done
  done
done
psql_s="$(printf '%s\n' "${psql_times[@]}" | best | awk '{printf "%.3f", $1 / 1e9}')"
echo "1,000,000 stored rows x 5 columns, best of $ROUNDS: psql --csv to /dev/null ${psql_s} s"
for name in "${names[@]}"; do
  for accept in text/csv application/json application/x-ndjson; do
    total="$(tr ' ' '\n' <<<"${totals[$name $accept]}" | grep . | best)"
    first="$(tr ' ' '\n' <<<"${firsts[$name $accept]}" | grep . | best)"
    awk -v n="$name" -v a="$accept" -v t="$total" -v f="$first" -v p="$psql_s" \
      'BEGIN { printf "%s %-22s %.3f s (first byte %.4f s): %.2fx psql\n", n, a, t, f, p / t }'
  done
done
