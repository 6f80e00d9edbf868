//! The answers of idempotent writes: stored in the write's atomic change, one per key (a
//! second write with a key that has an answer is refused whole), read by key, pruned by age.

use std::sync::Arc;

use super::check::ok;
use super::fixtures::plain_database;
use super::origin;
use super::races::race_all;
use crate::model::{Database, Idempotency, Origin, Timestamp, Written};
use crate::storage::{AuditQuery, Edits as _, Storage, StorageError};

/// An origin whose writes store an answer under `key`: the written record's name as its body.
fn keyed(key: &str) -> Origin {
    let mut origin = origin().clone();
    origin.idempotency = Some(Idempotency {
        key: key.to_owned(),
        fingerprint: [7; 32],
        render: Arc::new(|written: Written<'_>| match written {
            Written::Database(db) => (200, Some("\"1\"".to_owned()), db.name.clone().into_bytes()),
            _ => (200, None, Vec::new()),
        }),
    });
    origin
}

async fn events(storage: &dyn Storage, id: &str) -> usize {
    let query = AuditQuery {
        resource: Some(id),
        after: None,
        limit: 100,
        ..Default::default()
    };
    ok(storage.list_audit(query).await, "list_audit").len()
}

/// A write with a key stores its answer with it; a second write with that key is
/// `AnswerExists` and writes nothing (no record, no event); answers are pruned by age.
pub async fn answers_are_stored_with_their_write_once_per_key(storage: Arc<dyn Storage>) {
    let storage = storage.as_ref();
    assert!(ok(storage.stored_answer("caller k1").await, "stored_answer").is_none());
    let first = plain_database("First", None);
    ok(
        storage
            .insert_database(first.clone(), &keyed("caller k1"))
            .await,
        "insert_database with a key",
    );
    let answer = ok(storage.stored_answer("caller k1").await, "stored_answer")
        .expect("the answer is stored with the write");
    assert_eq!(answer.key, "caller k1");
    assert_eq!(answer.fingerprint, [7; 32]);
    assert_eq!(
        (answer.status, answer.etag.as_deref()),
        (200, Some("\"1\""))
    );
    assert_eq!(answer.body, b"First");

    let second = plain_database("Second", None);
    let refused = storage
        .insert_database(second.clone(), &keyed("caller k1"))
        .await;
    assert!(
        matches!(refused, Err(StorageError::AnswerExists)),
        "a second answer under one key: {refused:?}"
    );
    assert!(ok(storage.database(second.id.as_str()).await, "database").is_none());
    assert_eq!(events(storage, second.id.as_str()).await, 0);
    let refused = storage
        .update_database(
            first.id.as_str(),
            |db: &Database| {
                let mut next = db.clone();
                next.name = "Changed".to_owned();
                Ok(next)
            },
            &keyed("caller k1"),
        )
        .await;
    assert!(
        matches!(refused, Err(StorageError::AnswerExists)),
        "{refused:?}"
    );
    let stored = ok(storage.database(first.id.as_str()).await, "database").unwrap();
    assert_eq!(stored.name, "First", "the refused update changed nothing");
    assert_eq!(events(storage, first.id.as_str()).await, 1);

    // Pruning by age: answers from before the cutoff go, later ones stay.
    let cutoff = Timestamp::now().not_before_next(answer.at);
    ok(
        storage.insert_database(second, &keyed("caller k2")).await,
        "insert_database with another key",
    );
    let later = Timestamp::from_micros(cutoff.as_micros() - 1);
    let pruned = ok(storage.prune_answers(later).await, "prune_answers");
    assert!(pruned <= 1, "only answers before the cutoff go");
    let everything = Timestamp::from_micros(Timestamp::now().as_micros() + 1_000_000);
    ok(storage.prune_answers(everything).await, "prune_answers");
    assert!(ok(storage.stored_answer("caller k1").await, "stored_answer").is_none());
    assert!(ok(storage.stored_answer("caller k2").await, "stored_answer").is_none());
}

/// 16 creates with one key at once: exactly one is written, the others are `AnswerExists`.
pub async fn racing_writes_with_one_key_admit_one(storage: Arc<dyn Storage>) {
    let databases: Vec<Database> = (0..16)
        .map(|i| plain_database(&format!("Raced {i}"), None))
        .collect();
    let results = race_all(databases.len(), |index| {
        let (storage, database) = (Arc::clone(&storage), databases[index].clone());
        async move {
            storage
                .insert_database(database, &keyed("caller raced"))
                .await
        }
    })
    .await;
    let written = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(written, 1, "{results:?}");
    assert!(
        results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(StorageError::AnswerExists))),
        "{results:?}"
    );
    let mut stored = 0;
    for database in &databases {
        if ok(storage.database(database.id.as_str()).await, "database").is_some() {
            stored += 1;
        }
    }
    assert_eq!(stored, 1);
}
