//! What only the PostgreSQL backend has: the schema's version and the sealing key checked at
//! connect, secrets sealed in every column, and the migrations applied once by nodes that start
//! together.

use std::sync::Arc;

use dbconsole_core::model::{Secret, Timestamp, TlsField};
use dbconsole_core::seal::{Place, Sealer};
use dbconsole_core::storage::Storage;
use dbconsole_core::validate::database_from_body;
use dbconsole_storage_postgres::testing::{fresh_options, not_running, test_url};
use dbconsole_storage_postgres::{ConnectError, PostgresStorage, SCHEMA_VERSION};
use serde_json::json;

async fn raw_client() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&test_url(), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|error| panic!("{}", not_running(&error)));
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_key_and_a_newer_schema_are_refused_at_connect() {
    let options = fresh_options();
    let sealer = Sealer::ephemeral().unwrap();
    let first = PostgresStorage::connect(options.clone(), &sealer)
        .await
        .unwrap_or_else(|error| panic!("{}", not_running(&error)));
    drop(first);

    // Another key: refused before anything is answered.
    let other = Sealer::ephemeral().unwrap();
    let error = PostgresStorage::connect(options.clone(), &other)
        .await
        .expect_err("another key is refused");
    assert!(matches!(error, ConnectError::WrongKey), "{error}");
    assert_eq!(
        error.to_string(),
        "the secret key does not match the one this data was written with"
    );
    // The same key again: fine (and migrations are not applied twice).
    PostgresStorage::connect(options.clone(), &sealer)
        .await
        .expect("the same key connects");

    // A schema a newer dbconsole migrated.
    let client = raw_client().await;
    let newer = SCHEMA_VERSION + 1;
    let sql = format!(
        "INSERT INTO {}.schema_migrations (version) VALUES ({newer})",
        options.schema
    );
    client.batch_execute(&sql).await.unwrap();
    let error = PostgresStorage::connect(options.clone(), &sealer)
        .await
        .expect_err("a newer schema is refused");
    assert!(
        matches!(error, ConnectError::NewerSchema { found, supported }
            if found == newer && supported == SCHEMA_VERSION),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("newer than this dbconsole knows")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_starting_together_migrate_once() {
    let options = fresh_options();
    let sealer = Sealer::ephemeral().unwrap();
    let mut nodes = Vec::new();
    for _ in 0..6 {
        let options = options.clone();
        let sealer = sealer.clone();
        nodes.push(tokio::spawn(async move {
            PostgresStorage::connect(options, &sealer).await
        }));
    }
    for node in nodes {
        node.await
            .unwrap()
            .unwrap_or_else(|error| panic!("{}", not_running(&error)));
    }
    let client = raw_client().await;
    let sql = format!("SELECT count(*) FROM {}.schema_migrations", options.schema);
    let applied: i64 = client.query_one(&sql, &[]).await.unwrap().get(0);
    assert_eq!(applied, i64::from(SCHEMA_VERSION));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_column_holds_a_secret_in_clear() {
    let options = fresh_options();
    let schema = options.schema.clone();
    let sealer = Sealer::ephemeral().unwrap();
    let storage = Arc::new(
        PostgresStorage::connect(options, &sealer)
            .await
            .unwrap_or_else(|error| panic!("{}", not_running(&error))),
    );
    // "-----BEGIN CERTIFICATE----- Zq8CA" in base64.
    let body = json!({
        "name": "Orders", "adapter": "postgres", "hostname": "db.internal", "database": "app",
        "ssl": true, "ssl_ca_cert": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tIFpxOENB",
        "credentials": [{"username": "reader", "password": "pw-Zq8Secret-reader"}],
    });
    let body = body.as_object().unwrap().clone();
    let database = database_from_body(None, &body, Timestamp::now(), &sealer).unwrap();
    storage.insert_database(database.clone()).await.unwrap();

    let client = raw_client().await;
    let sql = format!("SELECT record FROM {schema}.databases");
    let record: Vec<u8> = client.query_one(&sql, &[]).await.unwrap().get(0);
    let contains = |needle: &[u8]| record.windows(needle.len()).any(|w| w == needle);
    assert!(contains(b"db.internal"), "the clear fields are found");
    assert!(!contains(b"Zq8Secret"), "a password in clear");
    assert!(!contains(b"Zq8CA"), "a CA certificate in clear");

    // What is stored opens, at its place, with the key.
    let stored = storage
        .database(database.id.as_str())
        .await
        .unwrap()
        .unwrap();
    let credential = &stored.credentials[0];
    let password = sealer
        .open(
            credential.password.as_ref().unwrap(),
            &Place::password(stored.id.as_str(), credential.id.as_str()),
        )
        .unwrap();
    assert_eq!(password, Secret::from("pw-Zq8Secret-reader"));
    let ca = stored.tls.get(TlsField::CaCert).unwrap();
    let ca = sealer
        .open(ca, &Place::tls(stored.id.as_str(), TlsField::CaCert))
        .unwrap();
    assert_eq!(ca.expose(), b"-----BEGIN CERTIFICATE----- Zq8CA");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updated_at_increases_when_the_writing_node_clock_is_behind() {
    let sealer = Sealer::ephemeral().unwrap();
    let storage = PostgresStorage::connect(fresh_options(), &sealer)
        .await
        .unwrap_or_else(|error| panic!("{}", not_running(&error)));
    let body = json!({
        "name": "Orders", "adapter": "postgres", "hostname": "db.internal", "database": "app",
        "credentials": [{"username": "reader"}],
    });
    let body = body.as_object().unwrap().clone();
    // Written by a node whose clock is a second ahead of this one.
    let ahead = Timestamp::from_micros(Timestamp::now().as_micros() + 1_000_000);
    let database = database_from_body(None, &body, ahead, &sealer).unwrap();
    storage.insert_database(database.clone()).await.unwrap();

    let patch = json!({"name": "Orders (renamed)"})
        .as_object()
        .unwrap()
        .clone();
    let edit_sealer = sealer.clone();
    let updated = storage
        .update_database(
            database.id.as_str(),
            Box::new(move |stored| {
                database_from_body(Some(stored), &patch, Timestamp::now(), &edit_sealer)
            }),
        )
        .await
        .unwrap();
    assert!(
        updated.updated_at > database.updated_at,
        "{} is not after {}",
        updated.updated_at,
        database.updated_at
    );
    assert_eq!(updated.id, database.id);
    assert_eq!(updated.inserted_at, database.inserted_at);
}
