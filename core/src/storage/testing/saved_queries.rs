//! Cases on saved queries (docs/queries.md, "Saved queries"): a whole record round trips with
//! each sharing, a create refuses a taken id, a change or removal is a compare-and-swap on
//! `updated_at` that changes nothing (and appends no event) when refused, and racing changes
//! admit one.

use std::sync::Arc;

use super::check::{absent, assert_err, found, ok};
use super::origin;
use super::races::race_all;
use crate::model::{AuditAction, AuditEvent, SavedQuery, SavedQueryId, Sharing, Timestamp};
use crate::storage::{AuditQuery, Storage, StorageError, WriteLog};

fn log(id: &str, action: AuditAction) -> WriteLog {
    WriteLog::from(AuditEvent::new(origin(), action, id, Vec::new()))
}

fn saved(sharing: Sharing) -> SavedQuery {
    SavedQuery {
        id: SavedQueryId::generate(),
        name: "Signups «by day» <b>".to_owned(),
        description: "for the\nweekly review".to_owned(),
        query: "SELECT day FROM signups WHERE day > ${since} AND plan = '${plan}'".to_owned(),
        database_id: "db_analytics".to_owned(),
        credential_id: "crd_reader".to_owned(),
        tags: vec!["growth".to_owned(), "ünï".to_owned()],
        sharing,
        author: "ann@example.com".to_owned(),
        created_at: Timestamp::from_micros(1_700_000_000_000_000),
        updated_at: Timestamp::from_micros(1_700_000_000_000_000),
    }
}

async fn events_of(storage: &dyn Storage, id: &str) -> usize {
    ok(
        storage
            .list_audit(AuditQuery {
                resource: Some(id),
                after: None,
                limit: usize::MAX,
                ..Default::default()
            })
            .await,
        "list_audit",
    )
    .len()
}

/// Each sharing reads back whole by id and in the listing (ordered by id); a missing one is
/// `None`; a create with a taken id is refused and changes nothing.
pub async fn saved_queries_round_trip_and_refuse_a_taken_id(storage: Arc<dyn Storage>) {
    let all = [
        saved(Sharing::Author),
        saved(Sharing::Groups(vec![
            "analysts".to_owned(),
            "on call".to_owned(),
        ])),
        saved(Sharing::Database),
    ];
    for one in &all {
        ok(
            storage
                .put_saved_query(
                    one.id.as_str(),
                    Some(one.clone()),
                    None,
                    log(one.id.as_str(), AuditAction::SavedQueryCreate),
                )
                .await,
            "put_saved_query(create)",
        );
    }
    for one in &all {
        assert_eq!(
            found(storage.saved_query(one.id.as_str()).await, "saved_query"),
            *one,
            "saved_query: a stored one reads back whole"
        );
    }
    absent(storage.saved_query("sq_missing").await, "saved_query");
    let listed = ok(storage.list_saved_queries().await, "list_saved_queries");
    assert_eq!(listed, all.to_vec(), "list_saved_queries: every one, by id");
    let mut taken = saved(Sharing::Author);
    taken.id = all[0].id.clone();
    assert_err!(
        storage
            .put_saved_query(
                taken.id.as_str(),
                Some(taken.clone()),
                None,
                log(taken.id.as_str(), AuditAction::SavedQueryCreate),
            )
            .await,
        StorageError::AlreadyExists,
        "put_saved_query: a create with a taken id"
    );
    assert_eq!(
        found(storage.saved_query(all[0].id.as_str()).await, "saved_query").sharing,
        Sharing::Author,
        "put_saved_query: a refused create changes nothing"
    );
    assert_eq!(events_of(&*storage, all[0].id.as_str()).await, 1);
}

/// A change or removal applies only at the stored `updated_at`: another is a `Conflict`, a
/// missing one `NotFound`; neither writes anything nor appends an event.
pub async fn saved_query_changes_are_a_compare_and_swap(storage: Arc<dyn Storage>) {
    let first = saved(Sharing::Author);
    let id = first.id.as_str().to_owned();
    ok(
        storage
            .put_saved_query(
                &id,
                Some(first.clone()),
                None,
                log(&id, AuditAction::SavedQueryCreate),
            )
            .await,
        "put_saved_query(create)",
    );
    let mut changed = first.clone();
    changed.name = "Renamed".to_owned();
    changed.sharing = Sharing::Database;
    changed.updated_at = first.updated_at.plus(std::time::Duration::from_micros(1));
    ok(
        storage
            .put_saved_query(
                &id,
                Some(changed.clone()),
                Some(first.updated_at),
                log(&id, AuditAction::SavedQueryUpdate),
            )
            .await,
        "put_saved_query(change)",
    );
    let mut stale = changed.clone();
    stale.name = "Stale".to_owned();
    assert_err!(
        storage
            .put_saved_query(
                &id,
                Some(stale),
                Some(first.updated_at),
                log(&id, AuditAction::SavedQueryUpdate),
            )
            .await,
        StorageError::Conflict,
        "put_saved_query: a change at a version it is no longer at"
    );
    assert_err!(
        storage
            .put_saved_query(
                &id,
                None,
                Some(first.updated_at),
                log(&id, AuditAction::SavedQueryDelete)
            )
            .await,
        StorageError::Conflict,
        "put_saved_query: a removal at a version it is no longer at"
    );
    assert_eq!(
        found(storage.saved_query(&id).await, "saved_query"),
        changed,
        "put_saved_query: the change applied and the stale ones changed nothing"
    );
    assert_eq!(events_of(&*storage, &id).await, 2);
    ok(
        storage
            .put_saved_query(
                &id,
                None,
                Some(changed.updated_at),
                log(&id, AuditAction::SavedQueryDelete),
            )
            .await,
        "put_saved_query(remove)",
    );
    absent(storage.saved_query(&id).await, "a removed saved query");
    assert!(
        ok(storage.list_saved_queries().await, "list_saved_queries").is_empty(),
        "list_saved_queries: a removed one is gone"
    );
    assert_eq!(events_of(&*storage, &id).await, 3);
    assert_err!(
        storage
            .put_saved_query(
                &id,
                Some(changed.clone()),
                Some(changed.updated_at),
                log(&id, AuditAction::SavedQueryUpdate)
            )
            .await,
        StorageError::NotFound,
        "put_saved_query: a change of a missing one"
    );
    assert_err!(
        storage
            .put_saved_query(&id, None, None, log(&id, AuditAction::SavedQueryDelete))
            .await,
        StorageError::NotFound,
        "put_saved_query: a removal without a version"
    );
    absent(
        storage.saved_query(&id).await,
        "a refused change writes nothing",
    );
    assert_eq!(events_of(&*storage, &id).await, 3);
}

/// Of 16 changes racing from one version, exactly one applies; the others are Conflicts.
pub async fn racing_saved_query_changes_admit_one(storage: Arc<dyn Storage>) {
    let first = saved(Sharing::Author);
    let id = first.id.as_str().to_owned();
    ok(
        storage
            .put_saved_query(
                &id,
                Some(first.clone()),
                None,
                log(&id, AuditAction::SavedQueryCreate),
            )
            .await,
        "put_saved_query(create)",
    );
    let results = race_all(16, |i| {
        let storage = Arc::clone(&storage);
        let mut next = first.clone();
        let (id, at) = (id.clone(), first.updated_at);
        async move {
            next.name = format!("writer {i}");
            next.updated_at = at.plus(std::time::Duration::from_micros(1));
            storage
                .put_saved_query(
                    &id,
                    Some(next),
                    Some(at),
                    log(&id, AuditAction::SavedQueryUpdate),
                )
                .await
        }
    })
    .await;
    let won = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(
        won, 1,
        "put_saved_query: racing changes at one version admit one"
    );
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Ok(()) | Err(StorageError::Conflict))),
        "put_saved_query: the losers are Conflicts"
    );
    assert_eq!(events_of(&*storage, &id).await, 2);
}
