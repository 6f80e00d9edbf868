#!/usr/bin/env bash
# The tools of the contract tests (tests/contract/run.sh), the MCP test (server/tests/mcp.rs)
# and the door's driver tests (server/tests/door_clients.rs): OpenSSL's headers for the build,
# Debian's chromium and chromium-driver, a JDK and pgjdbc (default-jdk-headless,
# libpostgresql-jdbc-java; installed as root, or through sudo), and a Python virtualenv in
# target/contract-venv with Schemathesis, openapi-spec-validator, Selenium, the MCP client
# library `mcp`, psycopg 3 and asyncpg from PyPI (made as the calling user). Idempotent;
# tests/all.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo ".ci/tools-up.sh: '$*' needs root, and this user is not root and has no sudo" >&2; exit 1
  fi
}
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] || ! python3 -c 'import ensurepip' 2>/dev/null \
  || ! pkg-config --exists openssl 2>/dev/null || [ ! -f /usr/share/java/postgresql.jar ] \
  || ! command -v java >/dev/null; then
  as_root apt-get update -qq
  # libssl-dev and pkg-config: the build's (webauthn-rs links OpenSSL).
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver python3-venv \
    libssl-dev pkg-config >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    default-jdk-headless libpostgresql-jdbc-java >/dev/null
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
if ! "$venv/bin/python" -c 'import psycopg, asyncpg' 2>/dev/null; then
  "$venv/bin/pip" install -q --disable-pip-version-check 'psycopg[binary]==3.2.10' 'asyncpg==0.30.0'
fi
"$venv/bin/schemathesis" --version
chromium --version
