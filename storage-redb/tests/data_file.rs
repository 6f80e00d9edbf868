//! The redb backend on a real data file: what is on disk (no plaintext secrets, caller keys as
//! digests only), what survives a close and reopen (access control and caller keys included),
//! what opening refuses (wrong key, newer format, a file already open, a foreign redb file), and
//! that failed operations leave the file as it was.
//!
//! The size measurement is an ignored test:
//! `cargo test --release -p dbconsole-storage-redb --test data_file -- --ignored --nocapture`.

use dbconsole_core::storage::Edits as _;
use dbconsole_core::storage::testing::origin;
use std::fs;
use std::path::{Path, PathBuf};

use dbconsole_core::ValidationErrors;
use dbconsole_core::auth::{key_digest, mint_caller_key};
use dbconsole_core::model::{
    AccessControl, AccessLevel, Action, ActionId, Adapter, ColumnAction, ColumnRule,
    ConnectionParameter, Credential, CredentialId, CredentialKind, Dashboard, DashboardId,
    DataProtection, Database, DatabaseId, InputMapping, Panel, PanelDetails, PanelId, PanelInput,
    Permission, Policy, Scope, SealedSecret, Secret, SubjectKind, Timestamp, TlsField, TlsMaterial,
};
use dbconsole_core::seal::{Keyring, Place, SealKeyError, Sealer, SecretKey};
use dbconsole_core::storage::{
    DatabaseKey, DatabaseRef, Page, RecordCounts, Storage, StorageError,
};
use dbconsole_storage_redb::{CopyError, FORMAT_VERSION, OpenError, RedbStorage, restore};
use redb::{ReadableDatabase, TableDefinition};

/// The `meta` table as the crate documents it.
const META: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("meta");

const ALL: Page<'static> = Page {
    after: None,
    limit: usize::MAX,
};

fn key() -> Sealer {
    Sealer::ephemeral().expect("a key")
}

/// The one sealer the fixtures seal with; the stores under test never open anything.
fn fixture_sealer() -> &'static Sealer {
    static SEALER: std::sync::OnceLock<Sealer> = std::sync::OnceLock::new();
    SEALER.get_or_init(key)
}

fn data_file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("data").join("dbconsole.redb")
}

fn credential(database_id: &DatabaseId, username: &str, password: &str) -> Credential {
    let id = CredentialId::generate();
    let place = Place::password(database_id.as_str(), id.as_str());
    Credential {
        password: Some(seal(password, &place)),
        password_for: None,
        id,
        username: username.to_owned(),
        hostname: None,
        ai_allowed: true,
        timeout: Some(7),
        reviews_required: 1,
        default_credential: false,
    }
}

fn seal(plaintext: &str, place: &Place) -> SealedSecret {
    fixture_sealer()
        .seal(&Secret::from(plaintext), place)
        .expect("sealed")
}

/// A database whose secrets all contain `tag`, so they can be searched for; sealed as core
/// seals them.
fn database(n: usize, tag: &str, api_id: Option<String>) -> Database {
    let now = Timestamp::now();
    let id = DatabaseId::generate();
    let tls = |field| Place::tls(id.as_str(), field);
    let mut first = credential(&id, &format!("reader-{n}"), &format!("pw-{tag}-reader-{n}"));
    first.default_credential = true;
    Database {
        id: id.clone(),
        api_id,
        name: format!("Visible name {tag} {n}"),
        adapter: Adapter::Postgres,
        hostname: format!("host-{n}.internal"),
        port: Some(5433),
        database: "orders".to_owned(),
        ssl: true,
        verify_server_hostname: true,
        restrict_access: true,
        review_bypass_allowed: false,
        group: Some("prod".to_owned()),
        slack_channel: None,
        tunnel_id: None,
        ai_enabled: true,
        ai_max_rows: 250,
        connection_parameters: vec![ConnectionParameter {
            name: "application_name".to_owned(),
            value: "dbconsole".to_owned(),
        }],
        credentials: vec![
            first,
            credential(&id, &format!("writer-{n}"), &format!("pw-{tag}-writer-{n}")),
        ],
        tls: TlsMaterial {
            ca_cert: Some(seal(
                &format!("-----BEGIN CERTIFICATE-----\nCA-{tag}-{n}\n-----END CERTIFICATE-----\n"),
                &tls(TlsField::CaCert),
            )),
            client_cert: Some(seal(
                &format!(
                    "-----BEGIN CERTIFICATE-----\nCLIENT-{tag}-{n}\n-----END CERTIFICATE-----\n"
                ),
                &tls(TlsField::ClientCert),
            )),
            client_key: Some(seal(
                &format!("-----BEGIN PRIVATE KEY-----\nKEY-{tag}-{n}\n-----END PRIVATE KEY-----\n"),
                &tls(TlsField::ClientKey),
            )),
        },
        inserted_at: now,
        updated_at: now,
    }
}

fn dashboard(name: &str) -> Dashboard {
    let now = Timestamp::now();
    Dashboard {
        id: DashboardId::generate(),
        name: name.to_owned(),
        restricted_access: true,
        archived_at: None,
        panels: vec![Panel {
            id: PanelId::generate(),
            title: "Recent orders".to_owned(),
            inputs: vec![PanelInput {
                key: "customer".to_owned(),
                description: String::new(),
            }],
            actions: vec![Action {
                id: ActionId::generate(),
                label: Some("Refund".to_owned()),
                workflow_id: Some("wf-refund".to_owned()),
                input_mappings: vec![InputMapping {
                    workflow_input_key: "order_id".to_owned(),
                    column: Some("id".to_owned()),
                    prompt_user: false,
                    prompt: None,
                }],
            }],
            details: PanelDetails::Query {
                query: "select * from orders where customer = {{customer}}".to_owned(),
                credential_id: "crd_x".to_owned(),
            },
        }],
        presentation: Default::default(),
        presented_at: now,
        inserted_at: now,
        updated_at: now,
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The plaintexts of a fixture database's secrets.
fn secrets_of(database: &Database) -> Vec<Vec<u8>> {
    let id = database.id.as_str();
    let passwords = database.credentials.iter().filter_map(|c| {
        let place = Place::password(id, c.id.as_str());
        c.password.as_ref().map(|sealed| (sealed, place))
    });
    let tls = TlsField::ALL.into_iter().filter_map(|field| {
        let place = Place::tls(id, field);
        database.tls.get(field).map(|sealed| (sealed, place))
    });
    passwords
        .chain(tls)
        .map(|(sealed, place)| {
            let secret = fixture_sealer().open(sealed, &place).expect("opens");
            secret.expose().to_vec()
        })
        .collect()
}

fn open(path: &Path, key: &Sealer) -> RedbStorage {
    RedbStorage::open(path, key).expect("the data file opens")
}

#[tokio::test]
async fn the_file_holds_no_plaintext_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let storage = open(&path, &key);
    let mut written = Vec::new();
    for n in 0..20 {
        let database = database(n, "Zq8Secret", Some(format!("ext-{n}")));
        storage
            .insert_database(database.clone(), origin())
            .await
            .unwrap();
        written.push(database);
    }
    // An update rewrites a record: its previous version must not leave plaintext behind either.
    let first_id = written[0].id.clone();
    let renamed = storage
        .update_database(
            first_id.as_str(),
            Box::new(|stored: &Database| {
                let mut next = stored.clone();
                let place = Place::password(stored.id.as_str(), stored.credentials[0].id.as_str());
                next.credentials[0].password = Some(seal("pw-Zq8Secret-rotated", &place));
                Ok(next)
            }),
            origin(),
        )
        .await
        .unwrap();
    written.push(renamed);
    drop(storage);

    let bytes = fs::read(&path).unwrap();
    // The search works: what is stored in clear is found.
    assert!(contains(&bytes, b"Visible name Zq8Secret 7"));
    assert!(contains(&bytes, b"host-7.internal"));
    assert!(contains(&bytes, b"writer-7"));
    for database in &written {
        for secret in secrets_of(database) {
            assert!(
                !contains(&bytes, &secret),
                "the data file holds a secret in clear: {}",
                String::from_utf8_lossy(&secret)
            );
        }
    }
    assert!(!contains(&bytes, b"Zq8Secret-reader"));
    assert!(!contains(&bytes, b"BEGIN PRIVATE KEY"));
    assert!(!contains(&bytes, b"BEGIN CERTIFICATE"));

    // Everything reads back, secrets included.
    let storage = open(&path, &key);
    let first = storage.database(first_id.as_str()).await.unwrap().unwrap();
    assert_eq!(secrets_of(&first)[0], b"pw-Zq8Secret-rotated");
    assert_eq!(
        storage.database(written[5].id.as_str()).await.unwrap(),
        Some(written[5].clone())
    );
}

#[tokio::test]
async fn everything_survives_close_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let storage = open(&path, &key);
    let mut databases = Vec::new();
    for n in 0..5 {
        let api_id = (n % 2 == 0).then(|| format!("ext-{n}"));
        let database = database(n, "reopen", api_id);
        storage
            .insert_database(database.clone(), origin())
            .await
            .unwrap();
        databases.push(database);
    }
    let dashboards = vec![dashboard("Ops"), dashboard("Sales")];
    for dashboard in &dashboards {
        storage
            .insert_dashboard(dashboard.clone(), origin())
            .await
            .unwrap();
    }
    // An update, an upsert that creates, a delete by api_id and a dashboard delete.
    databases[1] = storage
        .update_database(
            databases[1].id.as_str(),
            Box::new(|stored: &Database| {
                let mut next = stored.clone();
                next.name = "Renamed".to_owned();
                next.credentials.pop();
                next.updated_at = Timestamp::now().not_before_next(stored.updated_at);
                Ok(next)
            }),
            origin(),
        )
        .await
        .unwrap();
    let created = database(9, "reopen", Some("ext-setup".to_owned()));
    let upserted = storage
        .upsert_database_by_api_id(
            "ext-setup",
            Box::new(move |stored: Option<&Database>| {
                assert!(stored.is_none());
                Ok(created.clone())
            }),
            origin(),
        )
        .await
        .unwrap();
    databases.push(upserted);
    let deleted = storage
        .delete_database(DatabaseKey::ApiId("ext-2"), None, origin())
        .await
        .unwrap();
    databases.retain(|d| d.id != deleted.id);
    storage
        .delete_dashboard(dashboards[1].id.as_str(), None, origin())
        .await
        .unwrap();
    drop(storage);

    let storage = open(&path, &key);
    assert_eq!(
        storage
            .list_databases(ALL, Default::default())
            .await
            .unwrap(),
        databases
    );
    assert_eq!(
        storage
            .list_dashboards(ALL, Default::default())
            .await
            .unwrap(),
        vec![dashboards[0].clone()]
    );
    assert_eq!(
        storage.database_by_api_id("ext-setup").await.unwrap(),
        databases.last().cloned()
    );
    assert_eq!(storage.database_by_api_id("ext-2").await.unwrap(), None);
    assert_eq!(
        storage.database_by_api_id("ext-4").await.unwrap(),
        Some(databases[3].clone())
    );
    // The freed api_id can be taken again after the reopen.
    let again = database(10, "reopen", Some("ext-2".to_owned()));
    storage
        .insert_database(again.clone(), origin())
        .await
        .unwrap();
    assert_eq!(
        storage.database_by_api_id("ext-2").await.unwrap(),
        Some(again)
    );
}

#[tokio::test]
async fn caller_keys_are_stored_as_digests_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let storage = open(&path, &key);
    let (api_key, api_secret) = mint_caller_key(CredentialKind::ApiKey, Scope::Setup, "ci setup");
    let (token, token_secret) =
        mint_caller_key(CredentialKind::AccessToken, Scope::Full, "dashboards");
    let (revoked, revoked_secret) = mint_caller_key(CredentialKind::ApiKey, Scope::Full, "old");
    for caller_key in [&api_key, &token, &revoked] {
        storage
            .insert_caller_key(caller_key.clone(), origin())
            .await
            .unwrap();
    }
    let used_at = Timestamp::from_micros(1_800_000_000_000_000);
    storage
        .touch_caller_key(token.id.as_str(), used_at)
        .await
        .unwrap();
    storage
        .delete_caller_key(revoked.id.as_str(), origin())
        .await
        .unwrap();
    drop(storage);

    let bytes = fs::read(&path).unwrap();
    // The search works: the key's name and digest are stored.
    assert!(contains(&bytes, b"ci setup"));
    assert!(contains(&bytes, &api_key.digest));
    for secret in [&api_secret, &token_secret, &revoked_secret] {
        let secret = secret.expose();
        assert!(
            !contains(&bytes, secret),
            "the data file holds a caller key's secret"
        );
        // Nor its random part without the `dbc_…_` prefix.
        assert!(
            !contains(&bytes, &secret[7..]),
            "the data file holds a caller key's secret"
        );
    }

    let storage = open(&path, &key);
    let mut touched = token.clone();
    touched.last_used_at = Some(used_at);
    assert_eq!(
        storage.list_caller_keys().await.unwrap(),
        vec![api_key.clone(), touched.clone()]
    );
    let presented = key_digest(token_secret.expose());
    assert_eq!(
        storage.caller_key_by_digest(&presented).await.unwrap(),
        Some(touched)
    );
    assert_eq!(
        storage
            .caller_key_by_digest(&key_digest(api_secret.expose()))
            .await
            .unwrap(),
        Some(api_key)
    );
    assert_eq!(
        storage
            .caller_key_by_digest(&key_digest(revoked_secret.expose()))
            .await
            .unwrap(),
        None,
        "a revoked key stays revoked after a reopen"
    );
}

#[tokio::test]
async fn access_control_and_inheritance_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let storage = open(&path, &key);
    let parent = database(1, "access", Some("ext-parent".to_owned()));
    let heir = database(2, "access", None);
    for record in [&parent, &heir] {
        storage
            .insert_database(record.clone(), origin())
            .await
            .unwrap();
    }
    let access = AccessControl {
        permissions: vec![Permission {
            subject_kind: SubjectKind::Group,
            subject: "Payments".to_owned(),
            access: AccessLevel::Review,
        }],
        data_protection: DataProtection {
            inherits_from: Some(parent.id.as_str().to_owned()),
            provisioning: None,
            policies: vec![Policy {
                name: "pii".to_owned(),
                exempt: Vec::new(),
                description: None,
                columns: vec![ColumnRule {
                    column: "users.email".to_owned(),
                    action: ColumnAction::Mask,
                    mask: Default::default(),
                }],
            }],
        },
    };
    let stored = access.clone();
    storage
        .update_access_control(heir.id.as_str(), move |_: &_| Ok(stored.clone()), origin())
        .await
        .unwrap();
    drop(storage);

    let storage = open(&path, &key);
    assert_eq!(
        storage.access_control(heir.id.as_str()).await.unwrap(),
        Some(access)
    );
    assert_eq!(
        storage.access_control(parent.id.as_str()).await.unwrap(),
        Some(AccessControl::default())
    );
    // The inheritance index was written with it: the guard holds after a reopen.
    match storage
        .delete_database(DatabaseKey::ApiId("ext-parent"), None, origin())
        .await
    {
        Err(StorageError::Inherited(heirs)) => assert_eq!(
            heirs,
            vec![DatabaseRef {
                id: heir.id.as_str().to_owned(),
                name: heir.name.clone(),
            }]
        ),
        other => panic!("expected Inherited, got {other:?}"),
    }
    storage
        .delete_database(DatabaseKey::Id(heir.id.as_str()), None, origin())
        .await
        .unwrap();
    drop(storage);

    let storage = open(&path, &key);
    assert_eq!(
        storage.access_control(heir.id.as_str()).await.unwrap(),
        None
    );
    storage
        .delete_database(DatabaseKey::ApiId("ext-parent"), None, origin())
        .await
        .unwrap();
    assert_eq!(
        storage.access_control(parent.id.as_str()).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn the_wrong_key_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let right = key();
    let storage = open(&path, &right);
    let written = database(1, "wrongkey", None);
    storage
        .insert_database(written.clone(), origin())
        .await
        .unwrap();
    drop(storage);

    let error = RedbStorage::open(&path, &key()).unwrap_err();
    assert!(matches!(error, OpenError::WrongKey), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the secret key does not match the one this data was written with"
    );

    // The refusal changed nothing: the right key still reads everything.
    let storage = open(&path, &right);
    assert_eq!(
        storage.database(written.id.as_str()).await.unwrap(),
        Some(written)
    );
}

#[tokio::test]
async fn a_file_of_a_newer_format_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let storage = open(&path, &key);
    storage
        .insert_database(database(1, "newer", None), origin())
        .await
        .unwrap();
    drop(storage);

    let newer = FORMAT_VERSION + 1;
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("format_version", newer.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }

    let error = RedbStorage::open(&path, &key).unwrap_err();
    match &error {
        OpenError::NewerFormat { found, supported } => {
            assert_eq!((*found, *supported), (newer, FORMAT_VERSION));
        }
        other => panic!("expected NewerFormat, got {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains("newer version of dbconsole"), "{message}");
    assert!(message.contains(&format!("format {newer}")), "{message}");

    // The refusal did not touch the file's format version.
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    let stored = meta.get("format_version").unwrap().unwrap();
    assert_eq!(stored.value(), newer.to_le_bytes().as_slice());
}

/// A file of format 1 kept one key check value and no key ids: it opens with the same key as
/// key 0, is upgraded to format 2 (the seal keys), and a keyring without key 0 is refused,
/// naming it.
#[tokio::test]
async fn a_format_1_file_opens_with_its_key_as_key_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let storage = open(&path, &key);
    let written = database(1, "format1", None);
    storage
        .insert_database(written.clone(), origin())
        .await
        .unwrap();
    drop(storage);
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn.open_table(META).unwrap();
            meta.remove("seal_keys")
                .unwrap()
                .expect("format 2 keeps seal_keys");
            let check = key.key_check(0).unwrap();
            meta.insert("key_check", check.as_slice()).unwrap();
            meta.insert("format_version", 1u32.to_le_bytes().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }

    let other = Sealer::with_keyring(&Keyring::single(SecretKey::generate().unwrap()));
    assert!(matches!(
        RedbStorage::open(&path, &other),
        Err(OpenError::WrongKey)
    ));
    let mut ring = Keyring::default();
    ring.insert(1, SecretKey::generate().unwrap());
    let error = RedbStorage::open(&path, &Sealer::with_keyring(&ring)).unwrap_err();
    assert!(
        matches!(&error, OpenError::SealKey(SealKeyError::Missing(0))),
        "{error:?}"
    );
    assert!(error.to_string().contains("seal key 0"), "{error}");

    let storage = open(&path, &key);
    assert_eq!(
        storage.database(written.id.as_str()).await.unwrap(),
        Some(written)
    );
    let keys = storage.seal_keys().await.unwrap();
    assert_eq!(keys.current, 0);
    assert_eq!(keys.keys.keys().copied().collect::<Vec<_>>(), vec![0]);
    assert!(key.matches_key_check(0, &keys.keys[&0]));
    drop(storage);
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    let version = meta.get("format_version").unwrap().unwrap();
    assert_eq!(version.value(), FORMAT_VERSION.to_le_bytes().as_slice());
    assert!(meta.get("key_check").unwrap().is_none());
}

#[tokio::test]
async fn a_new_file_records_its_format_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    drop(open(&path, &key()));
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    let stored = meta.get("format_version").unwrap().unwrap();
    assert_eq!(stored.value(), FORMAT_VERSION.to_le_bytes().as_slice());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the data file is private");
    }
}

#[test]
fn a_file_already_open_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let _first = open(&path, &key);
    let error = RedbStorage::open(&path, &key).unwrap_err();
    assert!(matches!(error, OpenError::AlreadyOpen { .. }), "{error:?}");
    assert!(error.to_string().contains("already open"), "{error}");
}

#[test]
fn a_foreign_redb_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.redb");
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let table: TableDefinition<'static, u64, u64> = TableDefinition::new("counters");
        txn.open_table(table).unwrap().insert(1, 2).unwrap();
        txn.commit().unwrap();
    }
    let error = RedbStorage::open(&path, &key()).unwrap_err();
    assert!(matches!(error, OpenError::NotDbconsole), "{error:?}");
}

#[tokio::test]
async fn failed_operations_leave_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let storage = open(&path, &key);
    let stored = database(1, "failed", Some("ext-1".to_owned()));
    storage
        .insert_database(stored.clone(), origin())
        .await
        .unwrap();
    let board = dashboard("Ops");
    storage
        .insert_dashboard(board.clone(), origin())
        .await
        .unwrap();
    let (caller_key, _) = mint_caller_key(CredentialKind::ApiKey, Scope::Full, "ci");
    storage
        .insert_caller_key(caller_key.clone(), origin())
        .await
        .unwrap();
    let before = fs::read(&path).unwrap();

    let rejected = storage
        .update_database(
            stored.id.as_str(),
            Box::new(|stored: &Database| {
                let mut next = stored.clone();
                next.name = "half-applied".to_owned();
                next.credentials.clear();
                Err(ValidationErrors::single("name", "rejected").into())
            }),
            origin(),
        )
        .await;
    assert!(matches!(rejected, Err(StorageError::Invalid(_))));
    let moved = storage
        .update_database(
            stored.id.as_str(),
            Box::new(|stored: &Database| {
                let mut next = stored.clone();
                next.api_id = Some("ext-moved".to_owned());
                Ok(next)
            }),
            origin(),
        )
        .await;
    assert!(matches!(moved, Err(StorageError::IdentityChanged)));
    let upsert = storage
        .upsert_database_by_api_id(
            "ext-new",
            Box::new(|_: Option<&Database>| Ok(database(2, "failed", Some("ext-other".into())))),
            origin(),
        )
        .await;
    assert!(matches!(upsert, Err(StorageError::IdentityChanged)));
    let duplicate = storage.insert_database(stored.clone(), origin()).await;
    assert!(matches!(duplicate, Err(StorageError::AlreadyExists)));
    let dashboard_edit = storage
        .update_dashboard(
            board.id.as_str(),
            Box::new(|stored: &Dashboard| {
                let mut next = stored.clone();
                next.panels.clear();
                Err(ValidationErrors::single("name", "rejected").into())
            }),
            origin(),
        )
        .await;
    assert!(matches!(dashboard_edit, Err(StorageError::Invalid(_))));
    let missing = storage
        .delete_database(DatabaseKey::Id("db_missing"), None, origin())
        .await;
    assert!(matches!(missing, Err(StorageError::NotFound)));
    let self_heir = stored.id.as_str().to_owned();
    let inherit_itself = storage
        .update_access_control(
            stored.id.as_str(),
            Box::new(move |access: &AccessControl| {
                let mut next = access.clone();
                next.data_protection.inherits_from = Some(self_heir.clone());
                Ok(next)
            }),
            origin(),
        )
        .await;
    assert!(matches!(inherit_itself, Err(StorageError::Invalid(_))));
    let rejected_access = storage
        .update_access_control(
            stored.id.as_str(),
            Box::new(|_: &AccessControl| Err(ValidationErrors::single("permissions", "no").into())),
            origin(),
        )
        .await;
    assert!(matches!(rejected_access, Err(StorageError::Invalid(_))));
    let duplicate_key = storage
        .insert_caller_key(caller_key.clone(), origin())
        .await;
    assert!(matches!(duplicate_key, Err(StorageError::AlreadyExists)));
    let missing_key = storage
        .touch_caller_key("key_missing", Timestamp::now())
        .await;
    assert!(matches!(missing_key, Err(StorageError::NotFound)));

    // Not a byte of the file changed.
    assert!(fs::read(&path).unwrap() == before, "the data file changed");
    drop(storage);

    let storage = open(&path, &key);
    assert_eq!(
        storage.database_by_api_id("ext-1").await.unwrap(),
        Some(stored.clone())
    );
    assert_eq!(storage.database_by_api_id("ext-moved").await.unwrap(), None);
    assert_eq!(storage.database_by_api_id("ext-new").await.unwrap(), None);
    assert_eq!(
        storage
            .list_dashboards(ALL, Default::default())
            .await
            .unwrap(),
        vec![board]
    );
    assert_eq!(
        storage.access_control(stored.id.as_str()).await.unwrap(),
        Some(AccessControl::default())
    );
    assert_eq!(storage.list_caller_keys().await.unwrap(), vec![caller_key]);
}

/// Measures the data file for 10,000 databases with 2 credentials each (and TLS material).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: writes 10,000 databases with one fsync each"]
async fn size_of_10000_databases() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let storage = open(&path, &key());
    let total = 10_000;
    for n in 0..total {
        let mut record = database(n, "size", Some(format!("ext-{n}")));
        record.tls = TlsMaterial::default();
        storage.insert_database(record, origin()).await.unwrap();
    }
    let size = fs::metadata(&path).unwrap().len();
    let one = storage
        .list_databases(
            Page {
                after: None,
                limit: 1,
            },
            Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    drop(storage);
    let closed = fs::metadata(&path).unwrap().len();
    println!(
        "{total} databases with 2 credentials each: data file {size} bytes while open, \
         {closed} bytes after close ({:.1} MiB, {} bytes per database)",
        closed as f64 / (1024.0 * 1024.0),
        closed / total as u64
    );
}

#[tokio::test]
async fn a_backup_restores_the_whole_store_with_secrets_still_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let storage = open(&path, &key);
    let mut databases = Vec::new();
    for n in 0..10 {
        let database = database(n, "Bk7Secret", Some(format!("ext-{n}")));
        storage
            .insert_database(database.clone(), origin())
            .await
            .unwrap();
        databases.push(database);
    }
    let dashboards = vec![dashboard("Ops"), dashboard("Sales")];
    for dashboard in &dashboards {
        storage
            .insert_dashboard(dashboard.clone(), origin())
            .await
            .unwrap();
    }
    let mut access = AccessControl::default();
    access.data_protection.inherits_from = Some(databases[0].id.as_str().to_owned());
    let stored = access.clone();
    storage
        .update_access_control(
            databases[1].id.as_str(),
            move |_: &_| Ok(stored.clone()),
            origin(),
        )
        .await
        .unwrap();
    let (caller_key, secret) = mint_caller_key(CredentialKind::ApiKey, Scope::Full, "ops");
    storage
        .insert_caller_key(caller_key.clone(), origin())
        .await
        .unwrap();

    let backup = dir.path().join("backup.redb");
    let copied = storage.backup(&backup).await.unwrap();
    let expected = RecordCounts {
        databases: 10,
        dashboards: 2,
        caller_keys: 1,
    };
    assert_eq!(copied.records, expected);
    assert_eq!(copied.bytes, fs::metadata(&backup).unwrap().len());
    // Written after the backup: not in it.
    storage
        .insert_database(database(99, "later", None), origin())
        .await
        .unwrap();

    let bytes = fs::read(&backup).unwrap();
    assert!(
        contains(&bytes, b"Visible name Bk7Secret 3"),
        "records are in it"
    );
    for database in &databases {
        for secret in secrets_of(database) {
            assert!(
                !contains(&bytes, &secret),
                "the backup holds a secret in clear: {}",
                String::from_utf8_lossy(&secret)
            );
        }
    }
    assert!(matches!(
        storage.backup(&backup).await,
        Err(CopyError::Exists { .. })
    ));

    // Under another key the restore is refused and leaves nothing.
    let dest = dir.path().join("restored").join("dbconsole.redb");
    let partial = dir.path().join("restored").join("dbconsole.redb.partial");
    let refused = restore(&backup, &dest, &self::key()).unwrap_err();
    assert!(
        matches!(refused, CopyError::Open(OpenError::WrongKey)),
        "{refused:?}"
    );
    assert!(!dest.exists() && !partial.exists());

    let restored = restore(&backup, &dest, &key).unwrap();
    assert_eq!(restored.records, expected);
    assert!(!partial.exists());
    assert_eq!(
        fs::read(&backup).unwrap(),
        bytes,
        "a restore never writes the backup"
    );
    assert!(matches!(
        restore(&backup, &dest, &key),
        Err(CopyError::Exists { .. })
    ));

    let restored = open(&dest, &key);
    assert_eq!(
        restored
            .list_databases(ALL, Default::default())
            .await
            .unwrap(),
        databases
    );
    assert_eq!(
        restored
            .list_dashboards(ALL, Default::default())
            .await
            .unwrap(),
        dashboards
    );
    assert_eq!(
        restored
            .access_control(databases[1].id.as_str())
            .await
            .unwrap(),
        Some(access)
    );
    assert_eq!(
        restored.database_by_api_id("ext-4").await.unwrap(),
        Some(databases[4].clone())
    );
    assert_eq!(
        restored
            .caller_key_by_digest(&key_digest(secret.expose()))
            .await
            .unwrap(),
        Some(caller_key)
    );
    // The inheritance index came along: the delete guard holds.
    assert!(matches!(
        restored
            .delete_database(DatabaseKey::Id(databases[0].id.as_str()), None, origin())
            .await,
        Err(StorageError::Inherited(_))
    ));
    // And the secrets open under the key.
    let first = restored
        .database(databases[2].id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(secrets_of(&first), secrets_of(&databases[2]));
}

#[test]
fn a_file_that_is_not_a_data_file_is_not_restored() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("notes.txt");
    fs::write(&from, "not a backup").unwrap();
    let dest = dir.path().join("data").join("dbconsole.redb");
    let refused = restore(&from, &dest, &key()).unwrap_err();
    assert!(matches!(refused, CopyError::Open(_)), "{refused:?}");
    assert!(!dest.exists());
    let missing = restore(&dir.path().join("missing"), &dest, &key()).unwrap_err();
    assert!(matches!(missing, CopyError::Io { .. }), "{missing:?}");
    assert!(!dest.exists());
}

/// A file of format 2 may hold authors written in any case: opening it puts every query's names
/// in their normal form, records and author index both, so the history's `author` filter finds
/// them (format 3).
#[tokio::test]
async fn a_format_2_file_gets_its_authors_in_one_normal_form() {
    use dbconsole_core::model::{AuditAction, Decision, QueryStatus, Review};
    use dbconsole_core::storage::QueryFilter;
    let dir = tempfile::tempdir().unwrap();
    let path = data_file(&dir);
    let key = key();
    let storage = open(&path, &key);
    let now = Timestamp::now();
    let mut query = dbconsole_core::storage::testing::query(
        "db_a",
        "ANN@Example.com",
        QueryStatus::AwaitingReview,
    );
    query.reviews = vec![Review {
        reviewer: "Bo@Example.com".to_owned(),
        decision: Decision::Approve,
        comment: None,
        at: now,
        revision: 0,
    }];
    storage
        .create_query(
            query.clone(),
            dbconsole_core::storage::testing::log_of(&query, AuditAction::QueryCreate),
        )
        .await
        .unwrap();
    drop(storage);
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn.open_table(META).unwrap();
            meta.insert("format_version", 2u32.to_le_bytes().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let storage = open(&path, &key);
    let found = storage
        .list_queries(
            ALL,
            QueryFilter {
                author: Some("ann@example.com"),
                ..QueryFilter::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].author, "ann@example.com");
    assert_eq!(found[0].reviews[0].reviewer, "bo@example.com");
    let old_key = storage
        .list_queries(
            ALL,
            QueryFilter {
                author: Some("ANN@Example.com"),
                ..QueryFilter::default()
            },
        )
        .await
        .unwrap();
    assert!(old_key.is_empty(), "the old index entry is gone");
    drop(storage);
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    let version = meta.get("format_version").unwrap().unwrap();
    assert_eq!(version.value(), FORMAT_VERSION.to_le_bytes().as_slice());
}
