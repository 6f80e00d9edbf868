#!/usr/bin/env bash
# The tools of the contract tests (tests/contract/run.sh): Debian's chromium and
# chromium-driver, and a Python virtualenv in target/contract-venv with Schemathesis,
# openapi-spec-validator and Selenium from PyPI. Idempotent. Run as root (or with sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver python3-venv >/dev/null
fi
venv=target/contract-venv
if [ ! -x "$venv/bin/schemathesis" ]; then
  mkdir -p target
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    'schemathesis==4.32.5' 'openapi-spec-validator==0.9.0' 'selenium==4.51.0'
fi
"$venv/bin/schemathesis" --version
chromium --version
