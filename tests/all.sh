#!/usr/bin/env bash
# Every test of the project: the Rust workspace's (unit, HTTP suites on every backend, storage
# conformance, real database servers, the server binary), then the contract tests against the
# release server (tests/contract/run.sh: the OpenAPI document, /docs in Chromium, Schemathesis).
# The real-server and contract tests fail with a message saying how to start or install what
# they need: `sudo bash .ci/db-servers-up.sh` and `sudo bash .ci/tools-up.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
bash tests/contract/run.sh
