//! Cases on browser sessions and sign-in links (docs/console.md, "Signing in"): lookup by digest,
//! listing, a create that replaces another atomically (a link is single use, even racing),
//! touch, delete, and pruning by expiry and idle time.

use std::sync::Arc;
use std::time::Duration;

use super::check::{absent, assert_err, found, ok};
use super::origin;
use super::races::race_all;
use crate::model::{
    AuditAction, AuditEvent, Principal, Role, Scope, Session, SessionKind, SignInMethod, Timestamp,
};
use crate::storage::{AuditQuery, Storage, StorageError, WriteLog};

fn log(action: AuditAction, session: &str) -> WriteLog {
    WriteLog::from(AuditEvent::new(origin(), action, session, Vec::new()))
}

fn minted(kind: SessionKind, user: &str) -> Session {
    let principal = Principal::member(user)
        .groups(["oncall"])
        .role(Role::Member);
    let method = match kind {
        SessionKind::Browser => SignInMethod::Key,
        SessionKind::SignInLink => SignInMethod::Link,
        SessionKind::Invitation => SignInMethod::Invitation,
        SessionKind::DoorPassword => SignInMethod::Passkey,
    };
    Session::mint(
        kind,
        principal,
        Scope::Query,
        method,
        Duration::from_secs(3600),
    )
    .0
}

async fn create(
    storage: &dyn Storage,
    session: &Session,
    replacing: Option<&str>,
) -> Result<(), StorageError> {
    storage
        .create_session(
            session.clone(),
            replacing,
            log(AuditAction::SessionCreate, session.id.as_str()),
        )
        .await
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

/// Sessions read back whole by digest and in the listing (by id); an unknown digest is `None`;
/// a taken id or digest is refused and writes nothing.
pub async fn sessions_round_trip_by_digest_and_listing(storage: Arc<dyn Storage>) {
    absent(
        storage.session_by_digest(&[0; 32]).await,
        "session_by_digest on an empty store",
    );
    let mut ann = minted(SessionKind::Browser, "ann@example.com");
    ann.key_id = Some(crate::model::KeyId::generate());
    ann.principal = ann.principal.role(Role::SuperAdmin);
    ann.scope = Scope::Full;
    let link = minted(SessionKind::SignInLink, "bob@example.com");
    ok(create(&*storage, &link, None).await, "create_session(link)");
    ok(
        create(&*storage, &ann, None).await,
        "create_session(browser)",
    );
    let door = minted(SessionKind::DoorPassword, "cy@example.com");
    ok(
        create(&*storage, &door, None).await,
        "create_session(door password)",
    );
    for session in [&ann, &link, &door] {
        let read = found(
            storage.session_by_digest(&session.digest).await,
            "session_by_digest",
        );
        assert!(
            read == *session,
            "session_by_digest answers the session as stored: {read:?}"
        );
    }
    let mut ids: Vec<&str> = vec![ann.id.as_str(), link.id.as_str(), door.id.as_str()];
    ids.sort_unstable();
    let listed = ok(storage.list_sessions().await, "list_sessions");
    let listed: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(listed, ids, "list_sessions: every session, ordered by id");

    let mut same_digest = minted(SessionKind::Browser, "eve@example.com");
    same_digest.digest = ann.digest;
    assert_err!(
        create(&*storage, &same_digest, None).await,
        StorageError::AlreadyExists,
        "create_session with a taken digest"
    );
    let mut same_id = minted(SessionKind::Browser, "eve@example.com");
    same_id.id = ann.id.clone();
    assert_err!(
        create(&*storage, &same_id, None).await,
        StorageError::AlreadyExists,
        "create_session with a taken id"
    );
    assert_eq!(
        ok(storage.list_sessions().await, "list_sessions").len(),
        3,
        "a refused create_session writes nothing"
    );
    assert_eq!(
        events_of(&*storage, same_digest.id.as_str()).await,
        0,
        "nor an event"
    );
}

/// A create that replaces a link removes it in the same change; once it is gone, another
/// create replacing it is `NotFound` and writes nothing (no session, no event). Of 8 racing
/// exchanges of one link, exactly one succeeds.
pub async fn session_replacing_a_link_uses_it_once(storage: Arc<dyn Storage>) {
    let link = minted(SessionKind::SignInLink, "ann@example.com");
    ok(create(&*storage, &link, None).await, "create_session(link)");
    let first = minted(SessionKind::Browser, "ann@example.com");
    ok(
        create(&*storage, &first, Some(link.id.as_str())).await,
        "create_session replacing the link",
    );
    absent(
        storage.session_by_digest(&link.digest).await,
        "session_by_digest(the used link)",
    );
    found(
        storage.session_by_digest(&first.digest).await,
        "session_by_digest(the new session)",
    );
    let second = minted(SessionKind::Browser, "ann@example.com");
    assert_err!(
        create(&*storage, &second, Some(link.id.as_str())).await,
        StorageError::NotFound,
        "create_session replacing a link already used"
    );
    absent(
        storage.session_by_digest(&second.digest).await,
        "a refused exchange stores no session",
    );
    assert_eq!(
        events_of(&*storage, second.id.as_str()).await,
        0,
        "nor an event"
    );

    let raced = minted(SessionKind::SignInLink, "bob@example.com");
    ok(
        create(&*storage, &raced, None).await,
        "create_session(link)",
    );
    let storage_for = Arc::clone(&storage);
    let link_id = raced.id.as_str().to_owned();
    let results = race_all(8, move |_| {
        let storage = Arc::clone(&storage_for);
        let link_id = link_id.clone();
        async move {
            let next = minted(SessionKind::Browser, "bob@example.com");
            create(&*storage, &next, Some(&link_id)).await
        }
    })
    .await;
    let won = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(
        won, 1,
        "8 racing exchanges of one link: exactly one wins ({results:?})"
    );
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Ok(()) | Err(StorageError::NotFound))),
        "the losers are NotFound: {results:?}"
    );
}

/// Touch keeps the later time; delete ends a session at once and a second delete is
/// `NotFound`; both on a missing session are `NotFound`.
pub async fn session_touch_and_delete(storage: Arc<dyn Storage>) {
    let session = minted(SessionKind::Browser, "ann@example.com");
    ok(create(&*storage, &session, None).await, "create_session");
    let later = session.last_seen_at.plus(Duration::from_secs(120));
    ok(
        storage.touch_session(session.id.as_str(), later).await,
        "touch_session",
    );
    ok(
        storage
            .touch_session(session.id.as_str(), session.last_seen_at)
            .await,
        "touch_session(an earlier time)",
    );
    let read = found(
        storage.session_by_digest(&session.digest).await,
        "session_by_digest",
    );
    assert_eq!(
        read.last_seen_at, later,
        "touch_session keeps the later time"
    );
    let id = session.id.as_str();
    ok(
        storage
            .remove_session(id, log(AuditAction::SessionRevoke, id))
            .await,
        "remove_session",
    );
    absent(
        storage.session_by_digest(&session.digest).await,
        "a removed session",
    );
    assert_eq!(
        events_of(&*storage, id).await,
        2,
        "create and remove each logged once"
    );
    assert_err!(
        storage
            .remove_session(id, log(AuditAction::SessionRevoke, id))
            .await,
        StorageError::NotFound,
        "remove_session twice"
    );
    assert_eq!(
        events_of(&*storage, id).await,
        2,
        "a refused remove logs nothing"
    );
    assert_err!(
        storage.touch_session(id, later).await,
        StorageError::NotFound,
        "touch_session of a removed session"
    );
}

/// Pruning deletes what expired and the browser sessions idle since before the bound (a link
/// has no idle time), keeps the rest, and answers how many.
pub async fn prune_sessions_ends_expired_and_idle_ones(storage: Arc<dyn Storage>) {
    let now = Timestamp::now();
    let mut live = minted(SessionKind::Browser, "ann@example.com");
    live.last_seen_at = now;
    let mut expired = minted(SessionKind::Browser, "bob@example.com");
    expired.expires_at = now;
    let mut idle = minted(SessionKind::Browser, "cy@example.com");
    idle.last_seen_at = Timestamp::from_micros(now.as_micros() - 7_200_000_000);
    let mut old_link = minted(SessionKind::SignInLink, "dee@example.com");
    old_link.last_seen_at = idle.last_seen_at;
    let mut dead_link = minted(SessionKind::SignInLink, "eve@example.com");
    dead_link.expires_at = Timestamp::from_micros(now.as_micros() - 1);
    for session in [&live, &expired, &idle, &old_link, &dead_link] {
        ok(create(&*storage, session, None).await, "create_session");
    }
    let idle_before = Timestamp::from_micros(now.as_micros() - 3_600_000_000);
    let pruned = ok(
        storage.prune_sessions(now, idle_before).await,
        "prune_sessions",
    );
    assert_eq!(pruned, 3, "prune_sessions answers how many it deleted");
    let mut kept: Vec<String> = ok(storage.list_sessions().await, "list_sessions")
        .into_iter()
        .map(|s| s.id.as_str().to_owned())
        .collect();
    kept.sort_unstable();
    let mut expected = vec![live.id.as_str().to_owned(), old_link.id.as_str().to_owned()];
    expected.sort_unstable();
    assert_eq!(
        kept, expected,
        "the live session and the unexpired link stay"
    );
}
