#!/usr/bin/env bash
# The tools of the contract tests (tests/contract/run.sh) and of the MCP test
# (server/tests/mcp.rs): OpenSSL's headers for the build, Debian's chromium and chromium-driver (installed as root, or through
# sudo), and a Python virtualenv in target/contract-venv with Schemathesis,
# openapi-spec-validator, Selenium and the MCP client library `mcp` from PyPI (made as the
# calling user). Idempotent; tests/all.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo ".ci/tools-up.sh: '$*' needs root, and this user is not root and has no sudo" >&2; exit 1
  fi
}
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] || ! python3 -c 'import ensurepip' 2>/dev/null \
  || ! pkg-config --exists openssl 2>/dev/null; then
  as_root apt-get update -qq
  # libssl-dev and pkg-config: the build's (webauthn-rs links OpenSSL).
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver python3-venv \
    libssl-dev pkg-config >/dev/null
fi
venv=target/contract-venv
if [ ! -x "$venv/bin/schemathesis" ]; then
  mkdir -p target
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    'schemathesis==4.32.5' 'openapi-spec-validator==0.9.0' 'selenium==4.51.0'
fi
if ! "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
  "$venv/bin/pip" install -q --disable-pip-version-check 'mcp==2.3.0'
fi
"$venv/bin/schemathesis" --version
chromium --version
