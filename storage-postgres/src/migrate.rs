//! The schema's migrations: versioned SQL embedded in the binary, applied at connect in one
//! transaction under an advisory lock, so nodes starting at once migrate once.

use dbconsole_core::seal::Sealer;
use dbconsole_core::storage::record;
use deadpool_postgres::Object;

use crate::FilterColumns;
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
];

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
        txn.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[version],
        )
        .await
        .map_err(ConnectError::Migrate)?;
        tracing::info!(schema, version, "applied a schema migration");
    }
    let check = sealer.key_check().map_err(|_| ConnectError::Random)?;
    txn.execute(
        "INSERT INTO meta (key, value) VALUES ('key_check', $1) ON CONFLICT (key) DO NOTHING",
        &[&check],
    )
    .await
    .map_err(ConnectError::Migrate)?;
    let stored: Vec<u8> = txn
        .query_one("SELECT value FROM meta WHERE key = 'key_check'", &[])
        .await
        .map_err(ConnectError::Migrate)?
        .get(0);
    if !sealer.matches_key_check(&stored) {
        return Err(ConnectError::WrongKey);
    }
    txn.commit().await.map_err(ConnectError::Migrate)
}

/// Fills the listing columns of version 3 from the records written before it.
async fn fill_listing_columns(
    txn: &deadpool_postgres::Transaction<'_>,
) -> Result<(), ConnectError> {
    let databases = txn
        .query("SELECT id, record FROM databases", &[])
        .await
        .map_err(ConnectError::Migrate)?;
    for row in databases {
        let id: String = row.try_get("id").map_err(ConnectError::Migrate)?;
        let bytes: Vec<u8> = row.try_get("record").map_err(ConnectError::Migrate)?;
        let database = record::decode_database(&id, &bytes).map_err(ConnectError::Record)?;
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
