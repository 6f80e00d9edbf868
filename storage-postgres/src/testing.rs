//! For tests of this backend and of programs on it (feature `testing`): a store in a fresh
//! schema of the test database, so runs and tests never see each other.
//!
//! The test database is `DBCONSOLE_TEST_DATABASE_URL`, by default
//! `postgres://dbconsole:dbconsolepw@127.0.0.1:5432/dbconsole` (what `.ci/db-servers-up.sh`
//! creates). Schemas are named `t_<process id>_<n>`; each process first drops the schemas of
//! processes that are gone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use dbconsole_core::seal::Sealer;

use crate::{PostgresOptions, PostgresStorage};

/// The variable that names the test database.
pub const URL_VAR: &str = "DBCONSOLE_TEST_DATABASE_URL";

/// The test database when [`URL_VAR`] is unset.
pub const DEFAULT_URL: &str = "postgres://dbconsole:dbconsolepw@127.0.0.1:5432/dbconsole";

/// The URL of the test database.
pub fn test_url() -> String {
    std::env::var(URL_VAR).unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// A schema name no other test or run uses.
pub fn fresh_schema() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "t_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Options for the test database in a fresh schema.
pub fn fresh_options() -> PostgresOptions {
    let mut options = PostgresOptions::new(test_url());
    options.schema = fresh_schema();
    options.max_connections = 4;
    options
}

/// The message a test fails with when the test database can't be reached.
pub fn not_running(error: &dyn std::fmt::Display) -> String {
    format!(
        "the PostgreSQL test database is not reachable ({error}): start the test database \
         servers with `sudo bash .ci/db-servers-up.sh`, or point {URL_VAR} at a database"
    )
}

/// A store in a fresh schema of the test database, sealing under `sealer`'s key. Call it from
/// a multi-thread Tokio runtime (it blocks the thread while it connects).
///
/// # Panics
///
/// When the test database can't be reached, with how to start it.
pub fn fresh_storage(sealer: &Sealer) -> PostgresStorage {
    let options = fresh_options();
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(async {
            drop_stale_schemas_once().await;
            PostgresStorage::connect(options, sealer)
                .await
                .unwrap_or_else(|error| panic!("{}", not_running(&error)))
        })
    })
}

/// [`fresh_storage`] with a sealer of its own, shared: for suites that take a storage factory.
pub fn fresh_shared_storage() -> Arc<PostgresStorage> {
    Arc::new(fresh_storage(&Sealer::ephemeral().expect("a random key")))
}

async fn drop_stale_schemas_once() {
    static ONCE: Once = Once::new();
    let mut first = false;
    ONCE.call_once(|| first = true);
    if !first {
        return;
    }
    let Ok((client, connection)) =
        tokio_postgres::connect(&test_url(), tokio_postgres::NoTls).await
    else {
        return;
    };
    tokio::spawn(connection);
    let Ok(rows) = client
        .query(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 't\\_%\\_%'",
            &[],
        )
        .await
    else {
        return;
    };
    for row in rows {
        let Ok(name) = row.try_get::<_, String>(0) else {
            continue;
        };
        let pid = name.split('_').nth(1).and_then(|p| p.parse::<u32>().ok());
        let alive = pid.is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let _ = client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                .await;
        }
    }
}
