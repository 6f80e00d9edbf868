//! The HTTP suite over the redb backend, twice: on a data file in a temporary directory, and on
//! redb's in-memory backend. Both run with the service's read cache on, as the server runs redb
//! (the memory and PostgreSQL suites run without it).

use std::sync::atomic::{AtomicUsize, Ordering};

use dbconsole_storage_redb::RedbStorage;
use dbconsole_tests::test_sealer;

/// A store on a fresh data file in the system's temporary directory. The file is unlinked as
/// soon as it is open: on Unix the open file stays usable (redb keeps writing and `fsync`ing
/// it) until the store is dropped, so no test leaves files behind.
fn on_file() -> RedbStorage {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "dbconsole-http-redb-{}-{}.redb",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&path);
    let storage = RedbStorage::open(&path, &test_sealer()).expect("a new data file opens");
    let _ = std::fs::remove_file(&path);
    storage
}

fn in_memory() -> RedbStorage {
    in_memory_with(&test_sealer())
}

fn in_memory_with(sealer: &dbconsole_core::Sealer) -> RedbStorage {
    RedbStorage::in_memory(sealer).expect("an in-memory store")
}

mod file {
    use std::sync::Arc;

    dbconsole_tests::http_suite!(|| {
        dbconsole_tests::use_read_cache();
        Arc::new(super::on_file())
    });
}

mod memory {
    use std::sync::Arc;

    dbconsole_tests::http_suite!(|| {
        dbconsole_tests::use_read_cache();
        Arc::new(super::in_memory())
    });
}

/// Secrets stay sealed on every path but check-connection: reading, listing, updating and
/// deleting a database on redb opens nothing (the sealer counts every open), and a check opens
/// exactly the credential's password and TLS material, for the checker only.
mod sealed_until_checked {
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use dbconsole_core::check::{Adapter, CheckTarget, Checkers, ConnectionChecker};
    use dbconsole_tests::{Api, DATABASES, test_sealer};
    use http::Method;
    use serde_json::json;

    /// Remembers the password and CA certificate each check was given.
    #[derive(Debug, Default)]
    struct Recorder(Mutex<Vec<(Vec<u8>, Vec<u8>)>>);

    #[async_trait]
    impl ConnectionChecker for Recorder {
        async fn check(&self, target: &CheckTarget) -> Result<(), String> {
            let bytes = |secret: &Option<dbconsole_core::Secret>| {
                secret
                    .as_ref()
                    .map(|s| s.expose().to_vec())
                    .unwrap_or_default()
            };
            let seen = (bytes(&target.password), bytes(&target.ca_cert));
            self.0.lock().unwrap().push(seen);
            Ok(())
        }
    }

    #[tokio::test]
    async fn reads_and_writes_open_no_secret_and_a_check_opens_its_own() {
        let sealer = test_sealer();
        let storage = Arc::new(super::in_memory_with(&sealer));
        let recorder = Arc::new(Recorder::default());
        let checkers = Checkers::none().with(Adapter::Postgres, recorder.clone());
        let api = Api::with_sealer(storage, sealer.clone(), checkers);

        let body = json!({
            "name": "Orders", "adapter": "postgres", "hostname": "db.internal",
            "database": "orders", "ssl": true, "ssl_ca_cert": "Q0EtUEVN",
            "credentials": [
                {"username": "reader", "password": "pw-reader-1"},
                {"username": "writer", "password": "pw-writer-2"},
            ],
        });
        let created = api
            .db(Method::POST, DATABASES, Some(&body))
            .await
            .expect(200)
            .json();
        let id = created["id"].as_str().unwrap().to_owned();
        let path = format!("{DATABASES}/{id}");
        api.db(Method::GET, &path, None).await.expect(200);
        api.db(Method::GET, DATABASES, None).await.expect(200);
        let rename = json!({"name": "Orders (renamed)"});
        api.db(Method::PATCH, &path, Some(&rename))
            .await
            .expect(200);
        assert_eq!(
            sealer.opened(),
            0,
            "no secret opened on create, read, list or update"
        );

        let check = format!("{path}/check-connection/writer");
        let answer = api.db(Method::GET, &check, None).await.expect(200).text();
        assert_eq!(answer, "ok");
        assert_eq!(
            sealer.opened(),
            2,
            "the writer's password and the CA certificate"
        );
        let seen = recorder.0.lock().unwrap().clone();
        assert_eq!(seen, vec![(b"pw-writer-2".to_vec(), b"CA-PEM".to_vec())]);

        api.db(Method::DELETE, &path, None).await.expect(200);
        assert_eq!(sealer.opened(), 2, "a delete opens nothing");
    }
}
