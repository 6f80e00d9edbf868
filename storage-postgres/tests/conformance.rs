//! The storage conformance suite (`dbconsole_core::storage::testing`) over the PostgreSQL
//! backend, each case in a fresh schema of the test database (see
//! `dbconsole_storage_postgres::testing`; `.ci/db-servers-up.sh` starts it).

dbconsole_core::storage_conformance_suite!(
    dbconsole_storage_postgres::testing::fresh_shared_storage
);
