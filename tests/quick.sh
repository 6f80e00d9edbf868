#!/usr/bin/env bash
# The quick tier, for daily work: everything that needs no database server, no root and no
# browser, on the memory and redb backends. Unit tests of every crate, the storage conformance
# suite and the HTTP suite on memory and redb, the property tests, the examples, and the server
# binary's tests that run on redb (flags, keys, operations, graceful shutdown, crashes, the seal
# key rotation).
# Left to the full tier (bash tests/all.sh): PostgreSQL storage (conformance, HTTP suite, several
# nodes, faults, which need a PostgreSQL server and pg_ctl), the real-server check-connection
# tests, the disk-full and backup test (root, tmpfs) and the contract tests (Chromium,
# Schemathesis).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked --lib --bins \
  -p dbconsole-core -p dbconsole-storage-memory -p dbconsole-storage-redb \
  -p dbconsole-storage-postgres -p dbconsole-server -p dbconsole-tests
cargo test --locked -p dbconsole-storage-memory -p dbconsole-storage-redb -p dbconsole-examples
cargo test --locked -p dbconsole-tests --test http_memory --test http_redb --test properties --test docs_links \
  --test check_timeout --test run_sqlserver --test run_oracle
cargo test --locked -p dbconsole-server \
  --test binary --test keys --test operations --test serve_loop --test crash --test oidc
cargo test --locked -p dbconsole-server --test rotation -- redb_
cargo test --locked --doc -p dbconsole-core
echo "quick tier: passed (the full tier is bash tests/all.sh)"
