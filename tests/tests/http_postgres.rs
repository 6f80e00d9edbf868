//! The HTTP suite over the PostgreSQL backend, each case in a fresh schema of the test database
//! (`.ci/db-servers-up.sh` starts it; `DBCONSOLE_TEST_DATABASE_URL` points elsewhere).

dbconsole_tests::http_suite!(dbconsole_storage_postgres::testing::fresh_shared_storage);
