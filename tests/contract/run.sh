#!/usr/bin/env bash
# The contract tests, against the server as `cargo test` builds it (the dev profile: tests/all.sh
# runs them after the workspace's tests, so it is built already; a release build would add five
# minutes to CI for the same answers) on a redb store of their own, with caller
# credentials bound to a user and a registered database (the test PostgreSQL's read-only
# `contractdb`) that the fuzzed queries really run on:
#   1. the OpenAPI document it serves is valid OpenAPI 3.1 (openapi-spec-validator);
#   2. the /docs page in headless Chromium (docs_page.py);
#   3. Schemathesis with all its checks (schemathesis.toml beside this file), a fixed seed and a
#      bounded number of examples: no 5xx, statuses, content types and bodies as documented,
#      negative data refused, the stateful links followed.
# Needs the tools of `bash .ci/tools-up.sh`, which tests/all.sh runs first (a Python virtualenv in target/contract-venv, and
# Debian's chromium and chromium-driver); without them it fails and says so.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/contract-venv
if [ ! -x "$venv/bin/schemathesis" ] || [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "contract tests: Schemathesis or Chromium is missing; install them with \`bash .ci/tools-up.sh\` (tests/all.sh runs it by itself)" >&2
  exit 1
fi

cargo build --locked -p dbconsole-server
bin=target/debug/dbconsole
work="$(mktemp -d)"
server_pid=""
issuer_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$issuer_pid" ]; then kill "$issuer_pid" 2>/dev/null || true; wait "$issuer_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A store of its own on redb, and caller credentials bound to a user (a super admin), so that
# the query routes answer more than 401 and 403 and their bodies are fuzzed too.
data="$work/data"
create_key() {
  "$bin" keys --data-dir "$data" create --kind "$1" --scope full \
    --name "contract $1" --user contract@example.com --role super-admin | sed -n 's/^secret: //p'
}
api_key="$(create_key api-key)"
token="$(create_key access-token)"
[ -n "$api_key" ] && [ -n "$token" ] || { echo "dbconsole keys create gave no secret" >&2; exit 1; }
# The address a process prints as `listening on ADDRESS` into file $1, once it does (within
# ten seconds; empty otherwise).
listening() {
  for _ in $(seq 100); do
    grep -q '^listening on ' "$1" 2>/dev/null && break
    sleep 0.1
  done
  sed -n 's/^listening on //p' "$1"
}
# A stand-in OIDC issuer (issuer.py), so that the OIDC routes answer as they do with one.
"$venv/bin/python" tests/contract/issuer.py >"$work/issuer" &
issuer_pid=$!
issuer="$(listening "$work/issuer")"
[ -n "$issuer" ] || { echo "the stand-in issuer did not start" >&2; exit 1; }
RUST_LOG=warn "$bin" serve --storage redb --data-dir "$data" \
  --oidc-issuer "$issuer" --oidc-audience contract --oidc-client-id contract-console \
  --listen 127.0.0.1:0 >"$work/stdout" 2>"$work/stderr" &
server_pid=$!
address="$(listening "$work/stdout")"
[ -n "$address" ] || { echo "the server did not start:" >&2; cat "$work/stderr" >&2; exit 1; }
base="http://$address"

# A database the fuzzed queries run on for real: the test PostgreSQL's `contractdb`, as the
# read-only role `contract_reader` (.ci/db-servers-up.sh), with a 5 s statement timeout.
registered="$(curl -sf -H "x-api-key: $api_key" -H 'content-type: application/json' \
  "$base/api/v1/console/databases" -d '{"name": "contract", "adapter": "postgres",
  "hostname": "127.0.0.1", "port": 5432, "database": "contractdb",
  "credentials": [{"username": "contract_reader", "password": "contractpw", "timeout": 5}]}')"
CONTRACT_DATABASE_ID="$("$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["id"])' <<<"$registered")"
CONTRACT_CREDENTIAL_ID="$("$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["credentials"][0]["id"])' <<<"$registered")"
export CONTRACT_DATABASE_ID CONTRACT_CREDENTIAL_ID
checked="$(curl -s -H "x-api-key: $api_key" "$base/api/v1/console/databases/$CONTRACT_DATABASE_ID/check-connection/contract_reader")"
if [ "$checked" != ok ]; then
  echo "the contract database does not connect ($checked): start the test servers with \`sudo bash .ci/db-servers-up.sh\`" >&2
  exit 1
fi

echo "=== the OIDC routes, against the stand-in issuer"
expect() { # what, wanted, got
  if [ "$2" != "$3" ]; then echo "$1: wanted $2, got $3" >&2; exit 1; fi
  echo "$1: $3"
}
expect "GET …/oidc" '{"enabled":true,"passkeys":false}' "$(curl -s "$base/api/v1/console/oidc")"
started="$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "$base/api/v1/console/oidc/start?return_to=/console/queries")"
expect "GET …/oidc/start" "302 $issuer/authorize?" "${started%%\?*}?"
expect "GET …/oidc/callback of no flow" 400 \
  "$(curl -s -o /dev/null -w '%{http_code}' "$base/api/v1/console/oidc/callback?code=c&state=s")"
expect "POST …/oidc/start" "405 GET" \
  "$(curl -s -o /dev/null -X POST -w '%{http_code} %header{allow}' "$base/api/v1/console/oidc/start")"

echo "=== openapi-spec-validator"
curl -sf "$base/openapi.json" -o "$work/openapi.json"
"$venv/bin/openapi-spec-validator" "$work/openapi.json"

echo "=== /docs in headless Chromium"
"$venv/bin/python" tests/contract/docs_page.py "$base" "$api_key"

echo "=== schemathesis"
SCHEMATHESIS_HOOKS=hooks PYTHONPATH=tests/contract PYTHONDONTWRITEBYTECODE=1 \
  "$venv/bin/schemathesis" --config-file tests/contract/schemathesis.toml run "$base/openapi.json" \
  --seed 20261123 --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" --workers 1 \
  --no-color --request-timeout 10 \
  -H "x-api-key: $api_key" -H "Authorization: Bearer $token"

# The fuzzed statements reached the database: queries on the registered database ran (most of
# what a fuzzer writes is not SQL, so most runs fail there, with the database's own error).
ran=0
for status in succeeded failed; do
  count="$(curl -sf -H "x-api-key: $api_key" \
    "$base/api/v1/console/queries?database_id=$CONTRACT_DATABASE_ID&status=$status&limit=500" \
    | "$venv/bin/python" -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')"
  echo "queries run on the contract database that $status: $count"
  ran=$((ran + count))
done
[ "$ran" -gt 0 ] || { echo "no fuzzed query ran on the contract database" >&2; exit 1; }

if grep -q 'panicked' "$work/stderr"; then
  echo "the server panicked:" >&2; cat "$work/stderr" >&2; exit 1
fi
echo "contract tests: 3 passed, 0 failed"
