//! What several aggregates share: one statement run outside a transaction
//! ([`PostgresStorage::rows`], [`PostgresStorage::one`], [`PostgresStorage::all`]), a row's
//! columns ([`bytes`], [`text`]), keys as PostgreSQL can compare them ([`key`],
//! [`after_bound`]), a listing's SQL with only the conditions it has ([`Filtered`]), and the
//! counts across tables ([`record_counts`]).

use dbconsole_core::storage::{Page, RecordCounts, StorageError};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::PostgresStorage;
use crate::fault::classify;

impl PostgresStorage {
    /// One statement outside a transaction (a read, or a single-row write that commits by
    /// itself), within the bound: the rows it returns.
    pub(crate) async fn rows(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StorageError> {
        self.bounded(async {
            let client = self.client().await?;
            let statement = client.prepare_cached(sql).await.map_err(classify)?;
            client.query(&statement, params).await.map_err(classify)
        })
        .await
    }

    /// The record of the first row of one statement, if any.
    pub(crate) async fn one<T>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        decode: fn(&Row) -> Result<T, StorageError>,
    ) -> Result<Option<T>, StorageError> {
        self.rows(sql, params)
            .await?
            .first()
            .map(decode)
            .transpose()
    }

    /// The records of every row of one statement.
    pub(crate) async fn all<T>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        decode: fn(&Row) -> Result<T, StorageError>,
    ) -> Result<Vec<T>, StorageError> {
        self.rows(sql, params).await?.iter().map(decode).collect()
    }
}

pub(crate) fn bytes(row: &Row, column: &str) -> Result<Vec<u8>, StorageError> {
    row.try_get::<_, Vec<u8>>(column).map_err(classify)
}

pub(crate) fn text(row: &Row, column: &str) -> Result<String, StorageError> {
    row.try_get::<_, String>(column).map_err(classify)
}

/// Limits fit PostgreSQL's `bigint`.
fn limit(page: Page<'_>) -> i64 {
    i64::try_from(page.limit).unwrap_or(i64::MAX)
}

/// A key as PostgreSQL can compare it: `None` for a string with a NUL, which `text` can't hold
/// and no stored id contains (so nothing matches it).
pub(crate) fn key(value: &str) -> Option<&str> {
    (!value.contains('\0')).then_some(value)
}

/// The keyset bound of a listing. Stored ids hold no NUL, so "after `p\0r`" selects exactly
/// what "after `p`" does.
pub(crate) fn after_bound<'a>(page: &Page<'a>) -> Option<&'a str> {
    page.after
        .map(|after| after.split('\0').next().unwrap_or_default())
}

/// A parameter of a listing's SQL.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// A listing's SQL with only the conditions it has, each on an indexed column (with the id), so
/// that the planner reads a filtered page from the index of the value asked for.
pub(crate) struct Filtered {
    table: &'static str,
    conditions: Vec<String>,
    params: Vec<Param>,
    limit: i64,
    /// A value with a NUL, which no stored text holds: the answer is empty.
    pub(crate) matches_nothing: bool,
}

impl Filtered {
    pub(crate) fn new(table: &'static str, page: &Page<'_>) -> Self {
        let mut query = Self {
            table,
            conditions: Vec::new(),
            params: Vec::new(),
            limit: limit(*page),
            matches_nothing: false,
        };
        if let Some(after) = after_bound(page) {
            query.condition("id >", Box::new(after.to_owned()));
        }
        query
    }

    fn condition(&mut self, column_and_operator: &str, value: Param) {
        self.params.push(value);
        self.conditions
            .push(format!("{column_and_operator} ${}", self.params.len()));
    }

    pub(crate) fn equals(&mut self, column: &str, value: &str) {
        match key(value) {
            Some(value) => self.condition(&format!("{column} ="), Box::new(value.to_owned())),
            None => self.matches_nothing = true,
        }
    }

    pub(crate) fn equals_bytes(&mut self, column: &str, value: &[u8]) {
        self.condition(&format!("{column} ="), Box::new(value.to_vec()));
    }

    /// The bytes of `column` start with those of `prefix`: a range on the index, from the
    /// prefix up to the prefix and a 0xFF byte (which no UTF-8 text holds, so every text with
    /// the prefix sorts before it).
    pub(crate) fn prefix(&mut self, column: &str, prefix: &str) {
        let low = prefix.as_bytes().to_vec();
        let mut high = low.clone();
        high.push(0xFF);
        self.params.push(Box::new(low));
        let low = self.params.len();
        self.params.push(Box::new(high));
        let high = self.params.len();
        self.conditions
            .push(format!("{column} >= ${low} AND {column} < ${high}"));
    }

    pub(crate) fn finish(mut self) -> (String, Vec<Param>) {
        let filter = if self.conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", self.conditions.join(" AND "))
        };
        self.params.push(Box::new(self.limit));
        let sql = format!(
            "SELECT id, record FROM {} {filter} ORDER BY id LIMIT ${}",
            self.table,
            self.params.len()
        );
        (sql, self.params)
    }
}

/// [`Storage::record_counts`](dbconsole_core::storage::Storage::record_counts): the rows of
/// `databases`, `dashboards` and `caller_keys`, in one statement.
pub(crate) async fn record_counts(store: &PostgresStorage) -> Result<RecordCounts, StorageError> {
    let sql = "SELECT (SELECT count(*) FROM databases), (SELECT count(*) FROM dashboards), \
               (SELECT count(*) FROM caller_keys)";
    let counts = store
        .one(sql, &[], |row| {
            let count = |index: usize| -> Result<u64, StorageError> {
                let count: i64 = row.try_get(index).map_err(classify)?;
                Ok(u64::try_from(count).unwrap_or(0))
            };
            Ok(RecordCounts {
                databases: count(0)?,
                dashboards: count(1)?,
                caller_keys: count(2)?,
            })
        })
        .await?;
    Ok(counts.unwrap_or_default())
}
