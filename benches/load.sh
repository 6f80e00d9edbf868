#!/usr/bin/env bash
# The end-to-end load bench (benches/benches/load.rs): builds the release server, then runs the
# bench, which starts it on a fresh redb data directory next to its own baselines and prints the
# ratios (the GET of one id also through wrk). LOAD_SECONDS (default 5) and LOAD_ROUNDS (default 3)
# change the length of a run.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk > /dev/null || { echo "benches/load.sh needs wrk (apt-get install wrk)" >&2; exit 1; }
cargo build --release -p dbconsole-server
cargo bench -p dbconsole-benches --bench load
