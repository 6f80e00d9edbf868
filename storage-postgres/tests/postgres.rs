//! What only the PostgreSQL backend has: the schema's version and the sealing key checked at
//! connect, secrets sealed in every column, and the migrations applied once by nodes that start
//! together.

use dbconsole_core::storage::Edits as _;
use dbconsole_core::storage::testing::origin;
use std::sync::Arc;

use dbconsole_core::model::{Database, Secret, Timestamp, TlsField};
use dbconsole_core::seal::{Keyring, Place, Sealer, SecretKey};
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

/// A new schema's options, its key, and the store connected to it.
async fn fresh_store() -> (
    dbconsole_storage_postgres::PostgresOptions,
    Sealer,
    PostgresStorage,
) {
    let options = fresh_options();
    let sealer = Sealer::ephemeral().unwrap();
    let storage = PostgresStorage::connect(options.clone(), &sealer)
        .await
        .unwrap_or_else(|error| panic!("{}", not_running(&error)));
    (options, sealer, storage)
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

/// A store of schema version 4 kept one key check value and no key ids: migrated to version 5,
/// its key is key 0, each row lists the keys its secrets need, and a keyring without key 0 is
/// refused, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_from_before_seal_keys_opens_with_its_key_as_key_0() {
    let (options, sealer, storage) = fresh_store().await;
    let schema = options.schema.clone();
    let body = json!({
        "name": "Old", "adapter": "postgres", "hostname": "h", "database": "d",
        "credentials": [{"username": "u", "password": "pw-before-key-ids"}],
    });
    let body = body.as_object().unwrap().clone();
    let database =
        database_from_body(None, &body.clone().into(), Timestamp::now(), &sealer).unwrap();
    storage
        .insert_database(database.clone(), origin())
        .await
        .unwrap();
    drop(storage);

    // Back to version 4, as a build before key ids left it.
    let client = raw_client().await;
    let check = sealer.key_check(0).unwrap();
    client
        .batch_execute(&format!(
            "DROP TRIGGER databases_seal_keys ON {schema}.databases;
             DROP FUNCTION {schema}.check_seal_keys();
             DROP TABLE {schema}.seal_keys;
             ALTER TABLE {schema}.databases DROP COLUMN seal_keys;
             DROP TABLE {schema}.queries;
             DROP TABLE {schema}.deliveries;
             DROP TABLE {schema}.sessions;
             DROP TABLE {schema}.users;
             DROP TABLE {schema}.settings;
             DROP TABLE {schema}.saved_queries;
             DELETE FROM {schema}.schema_migrations WHERE version >= 5;"
        ))
        .await
        .unwrap();
    client
        .execute(
            &format!("INSERT INTO {schema}.meta (key, value) VALUES ('key_check', $1)"),
            &[&check],
        )
        .await
        .unwrap();

    let mut ring = Keyring::default();
    ring.insert(1, SecretKey::generate().unwrap());
    let error = PostgresStorage::connect(options.clone(), &Sealer::with_keyring(&ring))
        .await
        .expect_err("a keyring without key 0 is refused");
    assert!(error.to_string().contains("seal key 0"), "{error}");

    let storage = PostgresStorage::connect(options.clone(), &sealer)
        .await
        .expect("the same key opens it as key 0");
    let keys = storage.seal_keys().await.unwrap();
    assert_eq!(keys.current, 0);
    assert!(sealer.matches_key_check(0, &keys.keys[&0]));
    assert_eq!(
        storage.database(database.id.as_str()).await.unwrap(),
        Some(database.clone())
    );
    let rows = client
        .query(&format!("SELECT seal_keys FROM {schema}.databases"), &[])
        .await
        .unwrap();
    let listed: Vec<Vec<i64>> = rows.iter().map(|row| row.get(0)).collect();
    assert_eq!(listed, vec![vec![0]]);
    let legacy = client
        .query_opt(
            &format!("SELECT 1 FROM {schema}.meta WHERE key = 'key_check'"),
            &[],
        )
        .await
        .unwrap();
    assert!(legacy.is_none(), "the old key check value is dropped");
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
    let database =
        database_from_body(None, &body.clone().into(), Timestamp::now(), &sealer).unwrap();
    storage
        .insert_database(database.clone(), origin())
        .await
        .unwrap();

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
    let database = database_from_body(None, &body.clone().into(), ahead, &sealer).unwrap();
    storage
        .insert_database(database.clone(), origin())
        .await
        .unwrap();

    let patch = json!({"name": "Orders (renamed)"})
        .as_object()
        .unwrap()
        .clone();
    let edit_sealer = sealer.clone();
    let updated = storage
        .update_database(
            database.id.as_str(),
            move |stored: &Database| {
                Ok(database_from_body(
                    Some(stored),
                    &patch.clone().into(),
                    Timestamp::now(),
                    &edit_sealer,
                )?)
            },
            origin(),
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

/// PostgreSQL's `text` can't hold a NUL, and callers' strings may: names and `api_id`s with one
/// are stored and read back, and ids, `after` bounds and `inherits_from` targets with one
/// simply match nothing (never a backend failure, which the service would answer 500).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_with_a_nul_are_kept_or_match_nothing() {
    use dbconsole_core::model::AccessControl;
    use dbconsole_core::storage::{DatabaseKey, Page, StorageError};

    let sealer = Sealer::ephemeral().unwrap();
    let storage = PostgresStorage::connect(fresh_options(), &sealer)
        .await
        .unwrap_or_else(|error| panic!("{}", not_running(&error)));
    let body = json!({
        "name": "Orders", "adapter": "postgres", "hostname": "db.internal",
        "database": "app", "credentials": [{"username": "reader"}],
    });
    let body = body.as_object().unwrap().clone();
    let mut database =
        database_from_body(None, &body.clone().into(), Timestamp::now(), &sealer).unwrap();
    // Validation refuses control characters; the storage keeps whatever a record holds.
    database.name = "Orders\u{0}east".to_owned();
    database.api_id = Some("ext\u{0}1".to_owned());
    storage
        .insert_database(database.clone(), origin())
        .await
        .unwrap();

    let read = storage.database(database.id.as_str()).await.unwrap();
    assert_eq!(read.as_ref(), Some(&database));
    let by_api_id = storage.database_by_api_id("ext\u{0}1").await.unwrap();
    assert_eq!(by_api_id.as_ref(), Some(&database));
    assert_eq!(storage.database_by_api_id("ext").await.unwrap(), None);

    assert_eq!(storage.database("db_\u{0}x").await.unwrap(), None);
    assert!(matches!(
        storage
            .update_database("db_\u{0}x", |db: &Database| Ok(db.clone()), origin())
            .await,
        Err(StorageError::NotFound)
    ));
    assert!(matches!(
        storage
            .delete_database(DatabaseKey::Id("db_\u{0}x"), None, origin())
            .await,
        Err(StorageError::NotFound)
    ));
    assert_eq!(storage.access_control("db_\u{0}x").await.unwrap(), None);
    assert_eq!(storage.dashboard("dash_\u{0}").await.unwrap(), None);

    // "after db_\0…" lists what "after db_" does.
    let page = |after| Page {
        after: Some(after),
        limit: 10,
    };
    let listed = storage
        .list_databases(page("db_\u{0}zz"), Default::default())
        .await
        .unwrap();
    assert_eq!(listed, vec![database.clone()]);

    // An inheritance target with a NUL does not exist.
    let result = storage
        .update_access_control(
            database.id.as_str(),
            Box::new(|stored: &AccessControl| {
                let mut next = stored.clone();
                next.data_protection.inherits_from = Some("db_\u{0}".to_owned());
                Ok(next)
            }),
            origin(),
        )
        .await;
    match result {
        Err(StorageError::Invalid(errors)) => {
            let json = serde_json::to_value(&errors).unwrap();
            assert_eq!(json, json!({"inherits_from": ["does not exist"]}));
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    let removed = storage
        .delete_database(DatabaseKey::ApiId("ext\u{0}1"), None, origin())
        .await
        .unwrap();
    assert_eq!(removed, database);
}

/// A store of schema version 7 kept its deliveries without their kind: migrated to version 8,
/// each delivery's kind is filled from its record, and a claim takes only the kinds asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_from_before_kinds_are_claimed_by_kind() {
    use dbconsole_core::model::{AuditAction, AuditEvent, Delivery, Target, TargetKind};
    use dbconsole_core::storage::WriteLog;
    use std::time::Duration;

    let (options, sealer, storage) = fresh_store().await;
    let schema = options.schema.clone();
    let now = Timestamp::now();
    let workflow = Delivery::new(
        Target::Workflow {
            workflow_id: "refund".to_owned(),
        },
        "{}".to_owned(),
        "dash_m",
        now,
    );
    let slack = Delivery::new(
        Target::Slack {
            channel: "#reviews".to_owned(),
        },
        "{}".to_owned(),
        "qry_m",
        now,
    );
    storage
        .append_log(WriteLog {
            event: AuditEvent::new(origin(), AuditAction::ActionTrigger, "dash_m", Vec::new()),
            answer: None,
            outbox: vec![workflow.clone(), slack.clone()],
        })
        .await
        .unwrap();
    drop(storage);

    // Back to version 7, as a build before kinds left it.
    let client = raw_client().await;
    client
        .batch_execute(&format!(
            "DROP INDEX {schema}.deliveries_due;
             ALTER TABLE {schema}.deliveries DROP COLUMN kind;
             CREATE INDEX deliveries_due ON {schema}.deliveries (due_at) WHERE due_at IS NOT NULL;
             DROP TABLE {schema}.sessions;
             DROP TABLE {schema}.users;
             DROP TABLE {schema}.settings;
             DROP TABLE {schema}.saved_queries;
             DELETE FROM {schema}.schema_migrations WHERE version >= 8;"
        ))
        .await
        .unwrap();

    let storage = PostgresStorage::connect(options.clone(), &sealer)
        .await
        .expect("migrated to version 8");
    let rows = client
        .query(
            &format!("SELECT id, kind FROM {schema}.deliveries ORDER BY kind"),
            &[],
        )
        .await
        .unwrap();
    let kinds: Vec<(String, String)> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
    assert_eq!(
        kinds,
        [
            (slack.id.to_string(), "slack".to_owned()),
            (workflow.id.to_string(), "workflow".to_owned()),
        ]
    );
    let lease = now.plus(Duration::from_secs(30));
    let claimed = storage
        .claim_deliveries(now, lease, 10, &[TargetKind::Slack])
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, slack.id);
    let nullable: String = client
        .query_one(
            "SELECT is_nullable FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = 'deliveries' AND column_name = 'kind'",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(nullable, "NO", "every delivery has its kind");
}

/// A store of schema version 8 may hold authors written in any case: migrated to version 9,
/// every query's names are in their normal form, its record and its `author` column both, so
/// the history's `author` filter finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authors_from_before_one_identity_are_found_by_their_normal_form() {
    use dbconsole_core::model::{AuditAction, QueryStatus};
    use dbconsole_core::storage::{Page, QueryFilter};

    let (options, sealer, storage) = fresh_store().await;
    let schema = options.schema.clone();
    let query =
        dbconsole_core::storage::testing::query("db_a", "ANN@Example.com", QueryStatus::Ready);
    storage
        .create_query(
            query.clone(),
            dbconsole_core::storage::testing::log_of(&query, AuditAction::QueryCreate),
        )
        .await
        .unwrap();
    drop(storage);
    let client = raw_client().await;
    client
        .batch_execute(&format!(
            "DROP TABLE {schema}.sessions;
             DROP TABLE {schema}.users;
             DROP TABLE {schema}.settings;
             DROP TABLE {schema}.saved_queries;
             DELETE FROM {schema}.schema_migrations WHERE version >= 9;"
        ))
        .await
        .unwrap();
    let storage = PostgresStorage::connect(options.clone(), &sealer)
        .await
        .expect("migrated to version 9");
    let all = Page {
        after: None,
        limit: 10,
    };
    let found = storage
        .list_queries(
            all,
            QueryFilter {
                author: Some("ann@example.com"),
                ..QueryFilter::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].author, "ann@example.com");
    let column: String = client
        .query_one(
            &format!("SELECT author FROM {schema}.queries WHERE id = $1"),
            &[&query.id.as_str()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(column, "ann@example.com");
}
