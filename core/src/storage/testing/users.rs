//! Cases on users and server settings (docs/people.md): a whole record round trips, a create
//! refuses a taken name, a replace is a compare-and-swap on `updated_at` that changes nothing
//! when refused, with its event or without one, and racing replaces admit one.

use std::sync::Arc;

use super::check::{absent, assert_err, found, ok};
use super::origin;
use super::races::race_all;
use crate::model::{
    AuditAction, AuditEvent, Role, Timestamp, User, UserPasskey, UserSettings, UserSource,
};
use crate::storage::{AuditQuery, Storage, StorageError, WriteLog};

fn log(name: &str) -> WriteLog {
    WriteLog::from(AuditEvent::new(
        origin(),
        AuditAction::UserUpdate,
        name,
        Vec::new(),
    ))
}

fn rich_user(name: &str) -> User {
    let mut user = User::new(
        name,
        vec!["oncall".to_owned(), "dba".to_owned()],
        Role::SuperAdmin,
        UserSource::Invitation,
    );
    user.display_name = "Ann Example".to_owned();
    user.last_sign_in_at = Some(Timestamp::from_micros(1_700_000_000_123_456));
    user.settings = UserSettings {
        theme: Some("dark".to_owned()),
        time_zone: Some("Europe/Paris".to_owned()),
    };
    user.passkeys = vec![UserPasskey {
        id: "Y3JlZA".to_owned(),
        name: "Work laptop".to_owned(),
        created_at: Timestamp::from_micros(1_700_000_000_000_001),
        last_used_at: None,
        credential: r#"{"cred":"public"}"#.to_owned(),
    }];
    user
}

async fn events_of(storage: &dyn Storage, name: &str) -> usize {
    ok(
        storage
            .list_audit(AuditQuery {
                resource: Some(name),
                after: None,
                limit: usize::MAX,
                ..Default::default()
            })
            .await,
        "list_audit",
    )
    .len()
}

/// A user reads back whole by name and in the listing (ordered by name); a missing one is
/// `None`; a create with a taken name is refused and changes nothing.
pub async fn users_round_trip_and_refuse_a_taken_name(storage: Arc<dyn Storage>) {
    let ann = rich_user("ann@example.com");
    let bob = User::new("bob@example.com", Vec::new(), Role::Member, UserSource::Key);
    ok(
        storage
            .put_user(bob.clone(), None, Some(log(&bob.name)))
            .await,
        "put_user(bob)",
    );
    ok(
        storage.put_user(ann.clone(), None, None).await,
        "put_user(ann)",
    );
    assert_eq!(
        found(storage.user("ann@example.com").await, "user(ann)"),
        ann,
        "user: a stored user reads back whole"
    );
    absent(storage.user("nobody@example.com").await, "user(nobody)");
    let listed = ok(storage.list_users().await, "list_users");
    let names: Vec<&str> = listed.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(
        names,
        ["ann@example.com", "bob@example.com"],
        "list_users: ordered by name"
    );
    let mut other = rich_user("ann@example.com");
    other.display_name = "Impostor".to_owned();
    assert_err!(
        storage
            .put_user(other, None, Some(log("ann@example.com")))
            .await,
        StorageError::AlreadyExists,
        "put_user: a create with a taken name"
    );
    assert_eq!(
        found(storage.user("ann@example.com").await, "user(ann)").display_name,
        "Ann Example",
        "put_user: a refused create changes nothing"
    );
    assert_eq!(events_of(&*storage, "ann@example.com").await, 0);
    assert_eq!(events_of(&*storage, "bob@example.com").await, 1);
}

/// A replace applies only at the stored `updated_at`: another is a `Conflict`, a missing user
/// `NotFound`, and neither writes anything nor appends an event.
pub async fn user_replace_is_a_compare_and_swap(storage: Arc<dyn Storage>) {
    let ann = rich_user("ann@example.com");
    ok(storage.put_user(ann.clone(), None, None).await, "put_user");
    let mut changed = ann.clone();
    changed.groups = vec!["analysts".to_owned()];
    changed.deactivated_at = Some(Timestamp::from_micros(1_800_000_000_000_000));
    changed.updated_at = ann.updated_at.plus(std::time::Duration::from_micros(1));
    let mut stale = changed.clone();
    stale.groups = vec!["stale".to_owned()];
    ok(
        storage
            .put_user(changed.clone(), Some(ann.updated_at), Some(log(&ann.name)))
            .await,
        "put_user(replace)",
    );
    assert_err!(
        storage
            .put_user(stale, Some(ann.updated_at), Some(log(&ann.name)))
            .await,
        StorageError::Conflict,
        "put_user: a replace at a version the record is no longer at"
    );
    assert_eq!(
        found(storage.user(&ann.name).await, "user"),
        changed,
        "put_user: the replace applied and the stale one changed nothing"
    );
    assert_eq!(events_of(&*storage, &ann.name).await, 1);
    let ghost = User::new(
        "ghost@example.com",
        Vec::new(),
        Role::Member,
        UserSource::Key,
    );
    assert_err!(
        storage
            .put_user(ghost, Some(Timestamp::from_micros(1)), None)
            .await,
        StorageError::NotFound,
        "put_user: a replace of a missing user"
    );
    absent(storage.user("ghost@example.com").await, "user(ghost)");
}

/// Of 16 replaces racing from one version, exactly one applies.
pub async fn racing_user_replaces_admit_one(storage: Arc<dyn Storage>) {
    let ann = rich_user("ann@example.com");
    ok(storage.put_user(ann.clone(), None, None).await, "put_user");
    let results = race_all(16, |i| {
        let storage = Arc::clone(&storage);
        let mut user = ann.clone();
        let ann = ann.clone();
        async move {
            user.display_name = format!("writer {i}");
            user.updated_at = user.updated_at.plus(std::time::Duration::from_micros(1));
            storage.put_user(user, Some(ann.updated_at), None).await
        }
    })
    .await;
    let won = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(won, 1, "put_user: racing replaces at one version admit one");
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Ok(()) | Err(StorageError::Conflict))),
        "put_user: the losers are Conflicts"
    );
}

/// A setting reads back as last set; a missing one is `None`.
pub async fn settings_keep_the_last_value(storage: Arc<dyn Storage>) {
    absent(storage.setting("public_url").await, "setting");
    ok(
        storage.put_setting("public_url", "http://a.example").await,
        "put_setting",
    );
    ok(
        storage.put_setting("public_url", "https://b.example").await,
        "put_setting",
    );
    assert_eq!(
        found(storage.setting("public_url").await, "setting"),
        "https://b.example"
    );
    ok(storage.put_setting("other", "kept").await, "put_setting");
    ok(storage.remove_setting("public_url").await, "remove_setting");
    absent(storage.setting("public_url").await, "a removed setting");
    ok(
        storage.remove_setting("public_url").await,
        "remove_setting of a missing one",
    );
    assert_eq!(found(storage.setting("other").await, "setting"), "kept");
}
