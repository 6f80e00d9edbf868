#!/usr/bin/env bash
# The panels bench (benches/benches/panels.rs): builds the release server, then runs the bench,
# which starts it on a fresh redb data directory over the PostgreSQL of .ci/db-servers-up.sh and
# prints one-row panel runs/s for 4 clients against pgbench -c 4 running a panel's transaction two
# ways: -M prepared, three statements (three round trips), and -M simple, one compound statement
# (one round trip). LOAD_SECONDS (default 5) and LOAD_ROUNDS (default 3) change the length of a run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p dbconsole-server
cargo bench -p dbconsole-benches --bench panels
