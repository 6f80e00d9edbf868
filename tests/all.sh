#!/usr/bin/env bash
# Every test of the project, from a fresh clone, with nothing run before (the README's test
# command; CI runs it too). Idempotent. In order:
#   1. brings up what the tests need, before any test runs: PostgreSQL, MariaDB and ClickHouse on
#      loopback (.ci/db-servers-up.sh), Debian's Chromium and chromedriver, and a Python
#      virtualenv with Schemathesis and the MCP client library under target/ (.ci/tools-up.sh). Installing and starting
#      servers needs root: run as root, or with sudo available (it is used for those steps only);
#   2. the whole Rust workspace: unit tests, storage conformance and the HTTP suite on every
#      backend, the real-server check-connection tests, the server binary's tests (the disk-full
#      test mounts a tmpfs and needs root; the PostgreSQL fault test stops and starts the server
#      with pg_ctl);
#   3. the contract tests against the server binary those tests built (tests/contract/run.sh);
#   4. the web console: its unit tests, then the browser tests (Debian's Chromium through
#      playwright-core) against that binary, on redb, and the PostgreSQL started in step 1.
# The quick tier for daily work needs none of this: `bash tests/quick.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "tests/all.sh: '$*' needs root (it installs and starts database servers and Chromium)," >&2
    echo "and this user is not root and has no sudo. Run tests/all.sh as root, or run the quick" >&2
    echo "tier, which needs neither: bash tests/quick.sh" >&2
    exit 1
  fi
}

echo "=== setting up: database servers"
as_root bash .ci/db-servers-up.sh
echo "=== setting up: contract and MCP client tools"
bash .ci/tools-up.sh

echo "=== setting up: the web console (npm ci, type check, build)"
bash scripts/build-console

echo "=== cargo test --workspace"
cargo test --workspace --locked

# Each in-process benchmark once, as a test (criterion's test mode): a bench that stopped
# working fails here rather than on the day someone measures.
echo "=== cargo test --bench service (each benchmark once)"
cargo test -p dbconsole-benches --bench service --locked
echo "=== contract tests"
bash tests/contract/run.sh
echo "=== console: unit tests"
(cd console && npm test --silent)
echo "=== console: browser tests"
(cd console && npm run --silent e2e)
