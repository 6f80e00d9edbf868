#!/usr/bin/env bash
# The contract tests, against the release server on the memory store:
#   1. the OpenAPI document it serves is valid OpenAPI 3.1 (openapi-spec-validator);
#   2. the /docs page in headless Chromium (docs_page.py), on a store that holds only its own
#      database;
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

cargo build --release --locked -p dbconsole-server
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

api_key="contract-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
token="contract-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
DBCONSOLE_API_KEY="$api_key" DBCONSOLE_ACCESS_TOKEN="$token" RUST_LOG=warn \
  target/release/dbconsole serve --storage memory --listen 127.0.0.1:0 \
  >"$work/stdout" 2>"$work/stderr" &
server_pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$work/stdout" 2>/dev/null && break
  sleep 0.1
done
address="$(sed -n 's/^listening on //p' "$work/stdout")"
[ -n "$address" ] || { echo "the server did not start:" >&2; cat "$work/stderr" >&2; exit 1; }
base="http://$address"

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

if grep -q 'panicked' "$work/stderr"; then
  echo "the server panicked:" >&2; cat "$work/stderr" >&2; exit 1
fi
echo "contract tests: 3 passed, 0 failed"
