#!/usr/bin/env bash
# The scale run (benches/benches/scale.rs): builds the release server, then fills a redb data
# file to each size of SCALE_SIZES (default 1000,100000,1000000) and measures the server on it.
# Not part of CI: the full run writes about a gigabyte and takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p dbconsole-server
cargo bench -p dbconsole-benches --bench scale
