#!/usr/bin/env bash
# The outbox bench (benches/benches/outbox.rs): builds the release server, then runs the bench,
# which starts it on a fresh redb data directory with a local workflow endpoint and prints
# triggers/s against database creates/s. LOAD_SECONDS (default 5) and LOAD_ROUNDS (default 3)
# change the length of a run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p dbconsole-server
cargo bench -p dbconsole-benches --bench outbox
