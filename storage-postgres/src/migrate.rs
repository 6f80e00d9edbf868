//! The schema's migrations: versioned SQL embedded in the binary, applied at connect in one
//! transaction under an advisory lock, so nodes starting at once migrate once.

use dbconsole_core::model::Database;
use dbconsole_core::seal::{SealKeyError, SealKeys, Sealer};
use dbconsole_core::storage::record;
use deadpool_postgres::Object;

use crate::databases::FilterColumns;
use crate::options::ConnectError;

/// The migrations, in order: version and SQL.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_initial.sql")),
    (2, include_str!("../migrations/0002_audit.sql")),
    (3, include_str!("../migrations/0003_listing_indexes.sql")),
    (
        4,
        include_str!("../migrations/0004_idempotency_answers.sql"),
    ),
    (5, include_str!("../migrations/0005_seal_keys.sql")),
    (6, include_str!("../migrations/0006_queries.sql")),
    (7, include_str!("../migrations/0007_outbox.sql")),
    (8, include_str!("../migrations/0008_delivery_kinds.sql")),
    (9, include_str!("../migrations/0009_identities.sql")),
    (10, include_str!("../migrations/0010_sessions.sql")),
    (11, include_str!("../migrations/0011_users.sql")),
    (12, include_str!("../migrations/0012_saved_queries.sql")),
];

/// The version that puts the queries' authors in their normal form, from the records in Rust.
const IDENTITIES_VERSION: i32 = 9;

/// The version that adds the seal keys, filled from the key check value and the records in
/// Rust.
const SEAL_KEYS_VERSION: i32 = 5;

/// The version that adds the deliveries' kinds, filled from the records in Rust.
const DELIVERY_KINDS_VERSION: i32 = 8;

/// The version that adds the listing columns, which are filled from the records in Rust.
const LISTING_COLUMNS_VERSION: i32 = 3;

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Creates the schema when missing, applies the migrations it lacks, and checks (or stores) the
/// key check value of `sealer`'s key.
pub(crate) async fn run(
    client: &mut Object,
    schema: &str,
    sealer: &Sealer,
) -> Result<(), ConnectError> {
    // READ COMMITTED whatever the server's default: a node that waited for the lock must see
    // what the node before it migrated.
    let txn = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::ReadCommitted)
        .start()
        .await
        .map_err(ConnectError::Migrate)?;
    let lock_key = format!("dbconsole migrations: {schema}");
    txn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&lock_key])
        .await
        .map_err(ConnectError::Migrate)?;
    // A schema made beforehand needs no CREATE privilege on the database.
    let exists = txn
        .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
        .await
        .map_err(ConnectError::Migrate)?
        .is_some();
    if !exists {
        // `schema` is a checked identifier (see PostgresOptions::pool).
        txn.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .await
            .map_err(ConnectError::Migrate)?;
    }
    let setup = format!(
        "CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
             version    integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    );
    txn.batch_execute(&setup)
        .await
        .map_err(ConnectError::Migrate)?;
    let found: Option<i32> = txn
        .query_one("SELECT max(version) FROM schema_migrations", &[])
        .await
        .map_err(ConnectError::Migrate)?
        .get(0);
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(ConnectError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(version, _)| *version > found) {
        txn.batch_execute(sql)
            .await
            .map_err(ConnectError::Migrate)?;
        if *version == LISTING_COLUMNS_VERSION {
            fill_listing_columns(&txn).await?;
        }
        if *version == SEAL_KEYS_VERSION {
            fill_seal_keys(&txn, sealer).await?;
        }
        if *version == DELIVERY_KINDS_VERSION {
            fill_delivery_kinds(&txn).await?;
        }
        if *version == IDENTITIES_VERSION {
            normalize_authors(&txn).await?;
        }
        txn.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[version],
        )
        .await
        .map_err(ConnectError::Migrate)?;
        tracing::info!(schema, version, "applied a schema migration");
    }
    let rows = txn
        .query(crate::seal_keys::SELECT_SEAL_KEYS, &[])
        .await
        .map_err(ConnectError::Migrate)?;
    let keys = crate::seal_keys::seal_keys_of(&rows)
        .map_err(ConnectError::Migrate)?
        .ok_or(ConnectError::Corrupt("no seal key is current"))?;
    sealer.adopt(&keys).map_err(|error| match error {
        SealKeyError::Wrong(_) => ConnectError::WrongKey,
        other => ConnectError::SealKey(other),
    })?;
    txn.commit().await.map_err(ConnectError::Migrate)
}

/// Fills the seal keys of version 5: key 0 with the key check value stored before keys had ids
/// (or, in a new schema, `sealer`'s current key), and each database's key ids from its record.
async fn fill_seal_keys(
    txn: &deadpool_postgres::Transaction<'_>,
    sealer: &Sealer,
) -> Result<(), ConnectError> {
    let legacy: Option<Vec<u8>> = txn
        .query_opt("SELECT value FROM meta WHERE key = 'key_check'", &[])
        .await
        .map_err(ConnectError::Migrate)?
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(ConnectError::Migrate)?;
    let keys = match legacy {
        Some(check) => SealKeys::single(0, check),
        None => sealer.initial_keys().map_err(|_| ConnectError::Random)?,
    };
    crate::seal_keys::insert_seal_keys(txn, &keys)
        .await
        .map_err(ConnectError::Migrate)?;
    txn.execute("DELETE FROM meta WHERE key = 'key_check'", &[])
        .await
        .map_err(ConnectError::Migrate)?;
    for database in stored_databases(txn).await? {
        txn.execute(
            "UPDATE databases SET seal_keys = $2 WHERE id = $1",
            &[
                &database.id.as_str(),
                &crate::seal_keys::seal_key_ids(&database),
            ],
        )
        .await
        .map_err(ConnectError::Migrate)?;
    }
    Ok(())
}

/// Every stored database, decoded: what a migration that fills columns from the records reads.
async fn stored_databases(
    txn: &deadpool_postgres::Transaction<'_>,
) -> Result<Vec<Database>, ConnectError> {
    let rows = txn
        .query("SELECT id, record FROM databases", &[])
        .await
        .map_err(ConnectError::Migrate)?;
    rows.iter()
        .map(|row| {
            let id: String = row.try_get("id").map_err(ConnectError::Migrate)?;
            let bytes: Vec<u8> = row.try_get("record").map_err(ConnectError::Migrate)?;
            record::decode_database(&id, &bytes).map_err(ConnectError::Record)
        })
        .collect()
}

/// Version 9: every query whose record names its author (or a reviewer, its bypasser or its
/// runner) other than in the normal form is written again in it, with its `author` column.
async fn normalize_authors(txn: &deadpool_postgres::Transaction<'_>) -> Result<(), ConnectError> {
    let rows = txn
        .query("SELECT id, author, record FROM queries", &[])
        .await
        .map_err(ConnectError::Migrate)?;
    for row in rows {
        let id: String = row.try_get("id").map_err(ConnectError::Migrate)?;
        let author: String = row.try_get("author").map_err(ConnectError::Migrate)?;
        let bytes: Vec<u8> = row.try_get("record").map_err(ConnectError::Migrate)?;
        // Decoding puts every name in its normal form.
        let query = record::decode_query(&id, &bytes).map_err(ConnectError::Record)?;
        let encoded = record::encode_query(&query).map_err(ConnectError::Record)?;
        if query.author != author || encoded != bytes {
            txn.execute(
                "UPDATE queries SET author = $2, record = $3 WHERE id = $1",
                &[&id, &query.author, &encoded],
            )
            .await
            .map_err(ConnectError::Migrate)?;
        }
    }
    Ok(())
}

/// Fills the `kind` of every delivery of version 8 from its record, then requires it.
async fn fill_delivery_kinds(txn: &deadpool_postgres::Transaction<'_>) -> Result<(), ConnectError> {
    let rows = txn
        .query("SELECT id, record FROM deliveries", &[])
        .await
        .map_err(ConnectError::Migrate)?;
    for row in rows {
        let id: String = row.try_get("id").map_err(ConnectError::Migrate)?;
        let bytes: Vec<u8> = row.try_get("record").map_err(ConnectError::Migrate)?;
        let delivery = record::decode_delivery(&id, &bytes).map_err(ConnectError::Record)?;
        txn.execute(
            "UPDATE deliveries SET kind = $2 WHERE id = $1",
            &[&id, &delivery.target.kind().as_str()],
        )
        .await
        .map_err(ConnectError::Migrate)?;
    }
    txn.batch_execute("ALTER TABLE deliveries ALTER COLUMN kind SET NOT NULL")
        .await
        .map_err(ConnectError::Migrate)
}

async fn fill_listing_columns(
    txn: &deadpool_postgres::Transaction<'_>,
) -> Result<(), ConnectError> {
    for database in stored_databases(txn).await? {
        let id = database.id.as_str();
        let FilterColumns {
            adapter,
            group,
            tunnel,
            name,
        } = FilterColumns::of(&database);
        txn.execute(
            "UPDATE databases SET adapter = $2, grp = $3, tunnel_id = $4, name = $5 WHERE id = $1",
            &[&id, &adapter, &group, &tunnel, &name],
        )
        .await
        .map_err(ConnectError::Migrate)?;
    }
    let dashboards = txn
        .query("SELECT id, record FROM dashboards", &[])
        .await
        .map_err(ConnectError::Migrate)?;
    for row in dashboards {
        let id: String = row.try_get("id").map_err(ConnectError::Migrate)?;
        let bytes: Vec<u8> = row.try_get("record").map_err(ConnectError::Migrate)?;
        let dashboard = record::decode_dashboard(&id, &bytes).map_err(ConnectError::Record)?;
        txn.execute(
            "UPDATE dashboards SET name = $2 WHERE id = $1",
            &[&id, &dashboard.name.as_bytes()],
        )
        .await
        .map_err(ConnectError::Migrate)?;
    }
    Ok(())
}
