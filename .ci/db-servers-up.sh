#!/usr/bin/env bash
# Brings up the database servers that the check-connection tests (tests/tests/check_*.rs) connect
# to: PostgreSQL 15, MariaDB 10.11 and ClickHouse 18.16 from Debian 12, on loopback only.
# Run as root (CI: `bash .ci/db-servers-up.sh`; a developer machine: `sudo bash .ci/db-servers-up.sh`).
# Idempotent: safe to re-run when the servers already run; it only restarts a server whose TLS
# configuration changed.
#
# Accounts (password `checkpw`, database `checkdb`): `checker` on all three servers; `certuser`
# (PostgreSQL and MariaDB) has no password and logs in only with the client certificate below;
# `tlsuser` (MariaDB, password `checkpw`) logs in only over TLS.
#
# TLS, and why the certificates are made here and not by the tests: a server reads its certificate
# when it starts, before any test runs, so the certificates have to exist first. This script makes
# a small PKI once with openssl, under $DBCONSOLE_CI_CERTS (default /tmp/dbconsole-ci-certs), where
# the tests read it:
#   ca.pem            root CA (self-signed)
#   intermediate.pem  intermediate CA, signed by the root
#   ca-bundle.pem     intermediate + root: what a user stores as ssl_ca_cert
#   server.pem/.key   the servers' certificate, signed by the intermediate, valid for the DNS name
#                     `localhost` only (so connecting to 127.0.0.1 is a host name mismatch)
#   client.pem/.key   a client certificate for `certuser` (CN=certuser), signed by the root
#   other-ca.pem      an unrelated CA: verification against it must fail
# The servers send the leaf certificate only (as many PostgreSQL/MySQL servers do), so
# verification succeeds only when every certificate of the bundle is trusted. (They trust the
# root alone for client certificates: with the intermediate in their CA file, OpenSSL would
# complete and send the chain by itself.)
#   PostgreSQL: ssl on (5432) with server.pem; pg_hba: `certuser` must use `cert` authentication.
#   MariaDB:    TLS on (3306) with server.pem; `certuser` is REQUIRE X509.
#   ClickHouse: HTTP on 8123 and HTTPS on 8443 with server.pem.
# Each server gets its own copy of the key (owned by its service user). When the directory is
# missing (e.g. /tmp was emptied), a new PKI is made and the servers are restarted with it.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

if [ "$(id -u)" != 0 ]; then
  echo "run as root: sudo bash $0" >&2
  exit 1
fi

certs=${DBCONSOLE_CI_CERTS:-/tmp/dbconsole-ci-certs}

need_install=
for cmd in pg_ctlcluster mariadb clickhouse-server openssl curl; do
  command -v "$cmd" >/dev/null || need_install=1
done
if [ -n "$need_install" ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends \
    postgresql mariadb-server clickhouse-server openssl curl ca-certificates >/dev/null
fi

# --- PKI ---------------------------------------------------------------------------------------
make_pki() {
  local dir=$1 tmp
  tmp=$(mktemp -d)
  (
    cd "$tmp"
    cat >ext.cnf <<'EOF'
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[intermediate]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
    gen() { openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null \
              || openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null; }
    gen ca.key
    openssl req -new -x509 -sha256 -days 3650 -key ca.key -subj "/CN=dbconsole CI root CA" \
      -extensions ca -config ext.cnf -out ca.pem
    gen other-ca.key
    openssl req -new -x509 -sha256 -days 3650 -key other-ca.key -subj "/CN=dbconsole CI other CA" \
      -extensions ca -config ext.cnf -out other-ca.pem
    gen intermediate.key
    openssl req -new -sha256 -key intermediate.key -subj "/CN=dbconsole CI intermediate CA" -out intermediate.csr
    openssl x509 -req -sha256 -days 3650 -in intermediate.csr -CA ca.pem -CAkey ca.key -set_serial 0x1001 \
      -extfile ext.cnf -extensions intermediate -out intermediate.pem 2>/dev/null
    gen server.key
    openssl req -new -sha256 -key server.key -subj "/CN=localhost" -out server.csr
    openssl x509 -req -sha256 -days 3650 -in server.csr -CA intermediate.pem -CAkey intermediate.key \
      -set_serial 0x2001 -extfile ext.cnf -extensions server -out server.pem 2>/dev/null
    gen client.key
    openssl req -new -sha256 -key client.key -subj "/CN=certuser" -out client.csr
    openssl x509 -req -sha256 -days 3650 -in client.csr -CA ca.pem -CAkey ca.key \
      -set_serial 0x3001 -extfile ext.cnf -extensions client -out client.pem 2>/dev/null
    cat intermediate.pem ca.pem >ca-bundle.pem
    echo "$pki_version" >VERSION
  )
  mkdir -p "$dir"
  for f in ca.pem other-ca.pem intermediate.pem ca-bundle.pem server.pem server.key client.pem client.key VERSION; do
    install -m 0644 "$tmp/$f" "$dir/$f"
  done
  rm -rf "$tmp"
}

pki_version=2   # bump when make_pki changes: the next run makes a new PKI
if [ "$(cat "$certs/VERSION" 2>/dev/null)" != "$pki_version" ]; then
  rm -rf "$certs"
  make_pki "$certs"
fi

# Copies the server certificate, its key and the root CA (for client certificates) into $2 for user $1; prints "changed" when any
# file differs from what was there.
install_server_certs() {
  local owner=$1 dir=$2 changed=
  install -d -m 0750 -o "$owner" -g "$owner" "$dir"
  for f in server.pem server.key ca.pem; do
    if ! cmp -s "$certs/$f" "$dir/$f"; then
      install -m 0600 -o "$owner" -g "$owner" "$certs/$f" "$dir/$f"
      changed=1
    fi
  done
  if [ -n "$changed" ]; then echo changed; fi
}

# Writes $2 into file $1 when it differs; prints "changed" when it did.
write_if_changed() {
  if ! [ -f "$1" ] || [ "$(cat "$1")" != "$2" ]; then
    printf '%s\n' "$2" >"$1"
    echo changed
  fi
}

# --- PostgreSQL 15 -----------------------------------------------------------------------------
# The package creates cluster 15/main on 127.0.0.1/::1:5432, scram-sha-256 for host lines.
pgconf=/etc/postgresql/15/main
install_server_certs postgres "$pgconf/dbconsole-ci" >/dev/null
write_if_changed "$pgconf/conf.d/dbconsole-ci.conf" "# dbconsole CI (.ci/db-servers-up.sh)
ssl = on
ssl_cert_file = '$pgconf/dbconsole-ci/server.pem'
ssl_key_file = '$pgconf/dbconsole-ci/server.key'
ssl_ca_file = '$pgconf/dbconsole-ci/ca.pem'" >/dev/null
if ! grep -q 'dbconsole-ci' "$pgconf/pg_hba.conf"; then
  # First matching line wins: certuser's lines go before the package's host lines.
  { printf '%s\n' \
      '# dbconsole-ci: certuser logs in with its client certificate only' \
      'hostssl all certuser 127.0.0.1/32 cert' \
      'hostssl all certuser ::1/128 cert' \
      'host    all certuser 0.0.0.0/0 reject' \
      'host    all certuser ::/0 reject'
    cat "$pgconf/pg_hba.conf"; } >"$pgconf/pg_hba.conf.new"
  chown postgres:postgres "$pgconf/pg_hba.conf.new"
  chmod 0640 "$pgconf/pg_hba.conf.new"
  mv "$pgconf/pg_hba.conf.new" "$pgconf/pg_hba.conf"
fi
# `start` exits 2 when the cluster already runs; a reload picks up certificates and pg_hba.
pg_ctlcluster 15 main start >/dev/null 2>&1 || pg_ctlcluster 15 main reload
su postgres -c "psql -qAt -v ON_ERROR_STOP=1" <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'checker') THEN
    CREATE ROLE checker LOGIN PASSWORD 'checkpw';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'certuser') THEN
    CREATE ROLE certuser LOGIN;
  END IF;
END $$;
SQL
su postgres -c "psql -qAt -c \"SELECT 1 FROM pg_database WHERE datname='checkdb'\"" | grep -q 1 \
  || su postgres -c "createdb -O checker checkdb"
# The data protection tests (tests/tests/protect_postgres.rs) run protected queries as `dp_reader`
# (password `checkpw`), a role that reads only what they grant it, through masking views owned
# by the NOLOGIN role `dp_owner` in schema `dp_reader_mask_public`. `checker` (who owns checkdb
# and its tables) may grant both roles, so that the tests make and break the role's rights.
su postgres -c "psql -qAt -v ON_ERROR_STOP=1 -d checkdb" <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dp_reader') THEN
    CREATE ROLE dp_reader LOGIN PASSWORD 'checkpw';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dp_owner') THEN
    CREATE ROLE dp_owner NOLOGIN;
  END IF;
END $$;
GRANT dp_owner TO checker WITH ADMIN OPTION;
CREATE SCHEMA IF NOT EXISTS dp_reader_mask_public AUTHORIZATION dp_owner;
GRANT USAGE ON SCHEMA dp_reader_mask_public TO dp_reader;
-- tests/tests/protect_schemas_postgres.rs: `dp_definer` owns SECURITY DEFINER functions in
-- `dp_definer_fns` (which dp_reader may use); it is NOINHERIT and a member of `dp_peek`, which
-- the test grants a protected column, and the test turns its INHERIT on and off (CREATEROLE).
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dp_definer') THEN
    CREATE ROLE dp_definer NOLOGIN NOINHERIT;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dp_peek') THEN
    CREATE ROLE dp_peek NOLOGIN;
  END IF;
END $$;
ALTER ROLE dp_definer NOINHERIT;
ALTER ROLE checker CREATEROLE;
GRANT dp_definer TO checker WITH ADMIN OPTION;
GRANT dp_peek TO checker WITH ADMIN OPTION;
GRANT dp_peek TO dp_definer;
CREATE SCHEMA IF NOT EXISTS dp_definer_fns AUTHORIZATION dp_definer;
GRANT USAGE ON SCHEMA dp_definer_fns TO dp_reader;
SQL
# The provisioning tests (tests/tests/provision_postgres.rs, server/tests/provision_kill.rs):
# database `provdb` belongs to `dp_app` (password `checkpw`), a plain login that owns the
# tables it makes there and is no superuser; `prov_reader` (password `checkpw`) is the login
# its credential protects, made once here as an operator would, granted nothing.
su postgres -c "psql -qAt -v ON_ERROR_STOP=1" <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dp_app') THEN
    CREATE ROLE dp_app LOGIN PASSWORD 'checkpw';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'prov_reader') THEN
    CREATE ROLE prov_reader LOGIN PASSWORD 'checkpw';
  END IF;
END $$;
SQL
su postgres -c "psql -qAt -c \"SELECT 1 FROM pg_database WHERE datname='provdb'\"" | grep -q 1 \
  || su postgres -c "createdb -O dp_app provdb"
su postgres -c "psql -qAt -v ON_ERROR_STOP=1 -d provdb" <<'SQL'
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
SQL

# A hot standby of 15/main on 127.0.0.1:5433 (tests/tests/protect_standby.rs: data protection
# verifies there without writing, and trusts no snapshot). Made once with pg_basebackup over the
# local socket (peer replication for postgres), then started like the primary.
if ! pg_lsclusters -h | awk '{print $2}' | grep -qx standby; then
  pg_createcluster 15 standby -p 5433 >/dev/null
  rm -rf /var/lib/postgresql/15/standby
  su postgres -c "pg_basebackup -D /var/lib/postgresql/15/standby -R -X stream -c fast"
fi
pg_ctlcluster 15 standby start >/dev/null 2>&1 || true
for _ in $(seq 1 60); do
  pg_isready -q -h 127.0.0.1 -p 5433 && break
  sleep 1
done
pg_isready -q -h 127.0.0.1 -p 5433 || { echo "the PostgreSQL standby on 5433 did not start" >&2; exit 1; }

# The PostgreSQL storage's tests (storage-postgres, the HTTP suite, the two-node and fault tests)
# keep their records in database `dbconsole`, owned by `dbconsole` (password `dbconsolepw`),
# each run in schemas of its own.
su postgres -c "psql -qAt -v ON_ERROR_STOP=1" <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dbconsole') THEN
    CREATE ROLE dbconsole LOGIN PASSWORD 'dbconsolepw';
  END IF;
END $$;
SQL
su postgres -c "psql -qAt -c \"SELECT 1 FROM pg_database WHERE datname='dbconsole'\"" | grep -q 1 \
  || su postgres -c "createdb -O dbconsole dbconsole"

# The contract tests (tests/contract/run.sh) register a database that Schemathesis may query:
# `contractdb`, as the read-only role `contract_reader` (password `contractpw`), which may only
# read one small table; whatever SQL the fuzzer sends runs for real and changes nothing.
su postgres -c "psql -qAt -v ON_ERROR_STOP=1" <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'contract_reader') THEN
    CREATE ROLE contract_reader LOGIN PASSWORD 'contractpw';
  END IF;
END $$;
ALTER ROLE contract_reader SET default_transaction_read_only = on;
SQL
su postgres -c "psql -qAt -c \"SELECT 1 FROM pg_database WHERE datname='contractdb'\"" | grep -q 1 \
  || su postgres -c "createdb -O postgres contractdb"
su postgres -c "psql -qAt -v ON_ERROR_STOP=1 -d contractdb" <<'SQL'
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO contract_reader;
CREATE TABLE IF NOT EXISTS items (id integer PRIMARY KEY, name text NOT NULL);
INSERT INTO items VALUES (1, 'one'), (2, 'two'), (3, 'three') ON CONFLICT DO NOTHING;
GRANT SELECT ON items TO contract_reader;
SQL

# --- MariaDB 10.11 -----------------------------------------------------------------------------
# bind-address=127.0.0.1 by default; the init script waits until the server answers.
mdb_changed=$(install_server_certs mysql /etc/mysql/dbconsole-ci)
mdb_changed+=$(write_if_changed /etc/mysql/mariadb.conf.d/90-dbconsole-ci.cnf "# dbconsole CI (.ci/db-servers-up.sh)
[mariadbd]
ssl_cert = /etc/mysql/dbconsole-ci/server.pem
ssl_key = /etc/mysql/dbconsole-ci/server.key
ssl_ca = /etc/mysql/dbconsole-ci/ca.pem")
if [ -n "$mdb_changed" ] && mariadb-admin ping >/dev/null 2>&1; then
  /etc/init.d/mariadb restart >/dev/null
else
  /etc/init.d/mariadb start >/dev/null
fi
mariadb <<'SQL'
CREATE USER IF NOT EXISTS 'checker'@'localhost' IDENTIFIED BY 'checkpw';
CREATE USER IF NOT EXISTS 'checker'@'127.0.0.1' IDENTIFIED BY 'checkpw';
CREATE USER IF NOT EXISTS 'tlsuser'@'localhost' IDENTIFIED BY 'checkpw' REQUIRE SSL;
CREATE USER IF NOT EXISTS 'tlsuser'@'127.0.0.1' IDENTIFIED BY 'checkpw' REQUIRE SSL;
CREATE USER IF NOT EXISTS 'certuser'@'localhost' REQUIRE X509;
CREATE USER IF NOT EXISTS 'certuser'@'127.0.0.1' REQUIRE X509;
CREATE DATABASE IF NOT EXISTS checkdb;
GRANT ALL ON checkdb.* TO 'checker'@'localhost' WITH GRANT OPTION;
GRANT ALL ON checkdb.* TO 'checker'@'127.0.0.1' WITH GRANT OPTION;
-- The data protection tests (tests/tests/protect_mysql.rs) run protected queries as `dp_reader`,
-- which reads only the columns `checker` grants it.
CREATE USER IF NOT EXISTS 'dp_reader'@'localhost' IDENTIFIED BY 'checkpw';
CREATE USER IF NOT EXISTS 'dp_reader'@'127.0.0.1' IDENTIFIED BY 'checkpw';
-- Provisioning (tests/tests/provision_mysql.rs): the databases `mprovdb_<n>` belong to `mp_app`,
-- which holds every privilege on them and on the shadow databases of their logins
-- (`<login>_mask_mprovdb_<n>`) with the grant option, and reads the logins' accounts and grants
-- (no password hash); `mprov_reader` is the login it provisions, which holds nothing of its own.
CREATE USER IF NOT EXISTS 'mp_app'@'%' IDENTIFIED BY 'checkpw';
CREATE USER IF NOT EXISTS 'mprov_reader'@'%' IDENTIFIED BY 'checkpw';
-- The browser's login (console/e2e/protection.test.mjs): its own, so that the two runs never
-- see each other's shadow databases.
CREATE USER IF NOT EXISTS 'mprov_e2e'@'%' IDENTIFIED BY 'checkpw';
GRANT ALL ON `mprovdb\_%`.* TO 'mp_app'@'%' WITH GRANT OPTION;
GRANT ALL ON `%\_mask\_mprovdb\_%`.* TO 'mp_app'@'%' WITH GRANT OPTION;
GRANT SELECT ON mysql.db TO 'mp_app'@'%';
GRANT SELECT ON mysql.tables_priv TO 'mp_app'@'%';
GRANT SELECT ON mysql.columns_priv TO 'mp_app'@'%';
GRANT SELECT (User, Host) ON mysql.user TO 'mp_app'@'%';
GRANT ALL ON checkdb.* TO 'tlsuser'@'localhost';
GRANT ALL ON checkdb.* TO 'tlsuser'@'127.0.0.1';
GRANT ALL ON checkdb.* TO 'certuser'@'localhost';
GRANT ALL ON checkdb.* TO 'certuser'@'127.0.0.1';
SQL

# --- ClickHouse 18.16 --------------------------------------------------------------------------
# Listens on 127.0.0.1 and ::1 only (8123 http, 8443 https, 9000 native, 9009 interserver).
install -d -o clickhouse -g clickhouse /var/lib/clickhouse   # adduser creates it only when the user is new
mkdir -p /etc/clickhouse-server/users.d /etc/clickhouse-server/config.d
ch_changed=$(install_server_certs clickhouse /etc/clickhouse-server/dbconsole-ci)
ch_changed+=$(write_if_changed /etc/clickhouse-server/users.d/checker.xml '<yandex><users><checker>
  <password>checkpw</password>
  <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
  <profile>default</profile><quota>default</quota>
</checker></users></yandex>')
ch_changed+=$(write_if_changed /etc/clickhouse-server/config.d/dbconsole-ci-https.xml '<yandex>
  <https_port>8443</https_port>
  <openSSL><server>
    <certificateFile>/etc/clickhouse-server/dbconsole-ci/server.pem</certificateFile>
    <privateKeyFile>/etc/clickhouse-server/dbconsole-ci/server.key</privateKeyFile>
    <dhParamsFile remove="1"/>
    <verificationMode>none</verificationMode>
    <loadDefaultCAFile>false</loadDefaultCAFile>
  </server></openSSL>
</yandex>')
ch_up() { curl -sf http://127.0.0.1:8123/ping >/dev/null; }
if [ -n "$ch_changed" ] && ch_up; then
  /etc/init.d/clickhouse-server stop >/dev/null || true
  for _ in $(seq 1 100); do ch_up || break; sleep 0.1; done
fi
ch_up || /etc/init.d/clickhouse-server start >/dev/null || true   # returns 0 even if the daemon dies
for _ in $(seq 1 200); do ch_up && break; sleep 0.1; done
curl -sf -u checker:checkpw 'http://127.0.0.1:8123/?query=SELECT%201' >/dev/null \
  || { echo "ClickHouse did not come up; see /var/log/clickhouse-server/" >&2; exit 1; }
for _ in $(seq 1 50); do
  curl -sf --cacert "$certs/ca-bundle.pem" https://localhost:8443/ping >/dev/null && break
  sleep 0.1
done

echo "database servers up: postgres 127.0.0.1:5432 (standby 5433), mariadb 127.0.0.1:3306," \
  "clickhouse http 127.0.0.1:8123 https 8443; certificates in $certs"
