//! Executing an admin request on a store: what `dbconsole keys create|list|revoke` does to the
//! stored keys and what `dbconsole backup` does, wherever it runs (in the command's own process
//! on a store it opened, or in a server answering its admin socket).

use std::path::Path;

use dbconsole_core::auth::mint_caller_key;
use dbconsole_core::model::{Actor, Origin, Principal, Role};
use dbconsole_core::storage::Edits as _;
use dbconsole_core::validate::check_key_name;
use dbconsole_core::{Scope, Storage, StorageError};
use dbconsole_storage_redb::{CopyError, RedbStorage};

use super::protocol::{AdminReply, AdminRequest, Failure, KeyInfo, SessionInfo};
use super::seal;
use crate::backend::NodeKeys;

/// Runs one request on a redb store, backups included: the one dispatch of the admin socket and
/// of the command that opened the data file itself. `keys` are the node's seal keys; a
/// rotation on redb makes its new key itself when none waits in the key file.
pub async fn run_on_redb_store(
    store: &RedbStorage,
    keys: &NodeKeys,
    request: AdminRequest,
) -> AdminReply {
    match request {
        AdminRequest::Backup { to } => backup(store, &to).await,
        AdminRequest::RotateSeal { batch } => seal::rotate_seal(store, keys, batch, true).await,
        request => execute(store, keys, request).await,
    }
}

/// Runs one request on `storage` with the node's seal `keys`. A created key's secret is in the
/// reply and nowhere else: only its digest is stored.
pub async fn execute(storage: &dyn Storage, keys: &NodeKeys, request: AdminRequest) -> AdminReply {
    match request {
        AdminRequest::Create {
            kind,
            scope,
            name,
            user,
            groups,
            role,
        } => {
            let name = match check_key_name(&name) {
                Ok(name) => name,
                Err(error) => return AdminReply::failed(Failure::Invalid, error.to_string()),
            };
            let principal = match principal_of(scope, user, groups, role) {
                Ok(principal) => principal,
                Err(why) => return AdminReply::failed(Failure::Invalid, why),
            };
            let (mut key, secret) = mint_caller_key(kind, scope, &name);
            key.principal.clone_from(&principal);
            let info = KeyInfo::from(&key);
            // A key made for a new user makes the user's record.
            if let Some(principal) = &principal
                && let Err(error) = dbconsole_core::service::users::ensure_user(
                    storage,
                    &admin_origin(),
                    &Principal {
                        agent: false,
                        // A super admin's record only from a full-scope key: a query key's
                        // `--role` is no grant of the console.
                        role: if scope == Scope::Full {
                            principal.role
                        } else {
                            Role::Member
                        },
                        ..principal.clone()
                    },
                    dbconsole_core::model::UserSource::Key,
                )
                .await
            {
                return storage_failed(&error);
            }
            match storage.insert_caller_key(key, &admin_origin()).await {
                Ok(()) => AdminReply::Created {
                    key: Box::new(info),
                    secret,
                },
                Err(error) => storage_failed(&error),
            }
        }
        AdminRequest::List => match storage.list_caller_keys().await {
            Ok(keys) => AdminReply::Listed {
                keys: keys.iter().map(KeyInfo::from).collect(),
            },
            Err(error) => storage_failed(&error),
        },
        AdminRequest::Revoke { id } => {
            match storage.delete_caller_key(&id, &admin_origin()).await {
                Ok(key) => AdminReply::Revoked {
                    key: Box::new(KeyInfo::from(&key)),
                },
                Err(StorageError::NotFound) => AdminReply::failed(
                    Failure::NotFound,
                    format!("no key has the id {id:?} (`dbconsole keys list` shows the ids)"),
                ),
                Err(error) => storage_failed(&error),
            }
        }
        AdminRequest::Backup { .. } => AdminReply::failed(
            Failure::BadRequest,
            "only a store on redb storage is backed up (see `dbconsole backup --help`)",
        ),
        // Shared by several nodes: the new key must be on every node first (`add-seal-key`).
        AdminRequest::RotateSeal { batch } => seal::rotate_seal(storage, keys, batch, false).await,
        AdminRequest::SealStatus => seal::seal_status(storage).await,
        AdminRequest::Sessions => match storage.list_sessions().await {
            Ok(sessions) => AdminReply::SessionsListed {
                sessions: sessions.iter().map(SessionInfo::from).collect(),
            },
            Err(error) => storage_failed(&error),
        },
        AdminRequest::RevokeSessions { id, user } => revoke_sessions(storage, id, user).await,
        AdminRequest::SignInLink {
            user,
            groups,
            role,
            invitation,
        } => sign_in_link(storage, user, groups, role, invitation).await,
    }
}

/// Ends session `id`, or every session and link of `user` (in its normal form).
async fn revoke_sessions(
    storage: &dyn Storage,
    id: Option<String>,
    user: Option<String>,
) -> AdminReply {
    use dbconsole_core::model::{AuditAction, AuditEvent};
    if id.is_none() && user.is_none() {
        return AdminReply::failed(Failure::Invalid, "name a session id, or --user");
    }
    let user = user.map(|user| dbconsole_core::model::identity::normalized(&user));
    let sessions = match storage.list_sessions().await {
        Ok(sessions) => sessions,
        Err(error) => return storage_failed(&error),
    };
    let doomed: Vec<_> = sessions
        .into_iter()
        .filter(|s| id.as_deref().is_none_or(|id| s.id.as_str() == id))
        .filter(|s| user.as_deref().is_none_or(|user| s.principal.user == user))
        .collect();
    if doomed.is_empty() {
        return AdminReply::failed(
            Failure::NotFound,
            "no session matches (`dbconsole sessions list` shows them)",
        );
    }
    let mut ended = Vec::new();
    for session in doomed {
        let event = AuditEvent::new(
            &admin_origin(),
            AuditAction::SessionRevoke,
            session.id.as_str(),
            vec!["revoked".to_owned()],
        );
        match storage
            .remove_session(session.id.as_str(), event.into())
            .await
        {
            // Ended meanwhile (signed out, pruned): ended all the same.
            Ok(()) | Err(StorageError::NotFound) => ended.push(SessionInfo::from(&session)),
            Err(error) => return storage_failed(&error),
        }
    }
    AdminReply::SessionsRevoked { sessions: ended }
}

/// Stores a one-time sign-in link for `user`.
async fn sign_in_link(
    storage: &dyn Storage,
    user: String,
    groups: Vec<String>,
    role: Option<String>,
    invitation: bool,
) -> AdminReply {
    use dbconsole_core::model::{AuditAction, AuditEvent, Session, SessionKind, SignInMethod};
    let principal = match principal_of(Scope::Query, Some(user), groups, role) {
        Ok(Some(principal)) => principal,
        Ok(None) => return AdminReply::failed(Failure::Invalid, "a sign-in link needs --user"),
        Err(why) => return AdminReply::failed(Failure::Invalid, why),
    };
    let scope = match principal.role {
        Role::SuperAdmin => Scope::Full,
        Role::Member => Scope::Query,
    };
    let (kind, method, lifetime, action) = if invitation {
        match storage.user(&principal.user).await {
            Ok(None) => {}
            Ok(Some(_)) => {
                return AdminReply::failed(
                    Failure::Invalid,
                    format!(
                        "{} is already a user: make a sign-in link instead (dbconsole sessions link)",
                        principal.user
                    ),
                );
            }
            Err(error) => return storage_failed(&error),
        }
        (
            SessionKind::Invitation,
            SignInMethod::Invitation,
            dbconsole_core::service::users::INVITATION_LIFETIME,
            AuditAction::InvitationCreate,
        )
    } else {
        (
            SessionKind::SignInLink,
            SignInMethod::Link,
            dbconsole_core::service::browser::LINK_LIFETIME,
            AuditAction::SessionCreate,
        )
    };
    let (link, token) = Session::mint(kind, principal, scope, method, lifetime);
    let info = SessionInfo::from(&link);
    let event = AuditEvent::new(
        &admin_origin(),
        action,
        link.id.as_str(),
        vec![kind.as_str().to_owned()],
    );
    let public_url = match storage
        .setting(crate::credentials::PUBLIC_URL_SETTING)
        .await
    {
        Ok(url) => url,
        Err(error) => return storage_failed(&error),
    };
    match storage.create_session(link, None, event.into()).await {
        Ok(()) => AdminReply::LinkCreated {
            link: Box::new(info),
            token,
            public_url,
        },
        Err(error) => storage_failed(&error),
    }
}

/// Writes a backup of `store` to `to` (absolute, not existing): a consistent copy with its
/// secrets still sealed (see [`RedbStorage::backup`]).
pub async fn backup(store: &RedbStorage, to: &Path) -> AdminReply {
    if !to.is_absolute() {
        return AdminReply::failed(
            Failure::BadRequest,
            format!(
                "the backup file must be an absolute path, not {}",
                to.display()
            ),
        );
    }
    match store.backup(to).await {
        Ok(copied) => AdminReply::BackedUp {
            to: to.to_owned(),
            databases: copied.records.databases,
            dashboards: copied.records.dashboards,
            caller_keys: copied.records.caller_keys,
            bytes: copied.bytes,
        },
        Err(error @ CopyError::Exists { .. }) => {
            AdminReply::failed(Failure::Exists, error.to_string())
        }
        Err(error) => AdminReply::failed(Failure::Storage, format!("the backup failed: {error}")),
    }
}

/// The actor name of the changes `dbconsole keys` makes, in the audit trail.
pub const ADMIN_ACTOR: &str = "dbconsole keys";

/// Where the changes of an admin request come from: the `dbconsole keys` command (through the
/// admin socket, or on the data file).
fn admin_origin() -> Origin {
    Origin::of(Actor::named(ADMIN_ACTOR))
}

fn storage_failed(error: &StorageError) -> AdminReply {
    AdminReply::failed(Failure::Storage, format!("the store failed: {error}"))
}

/// The principal a created key is bound to: `--user` with its `--groups` and `--role`. The
/// `query` and `ai-agent` scopes need one; a setup key takes none.
fn principal_of(
    scope: Scope,
    user: Option<String>,
    groups: Vec<String>,
    role: Option<String>,
) -> Result<Option<Principal>, String> {
    let user = user
        .map(|user| user.trim().to_owned())
        .filter(|u| !u.is_empty());
    let Some(user) = user else {
        if matches!(scope, Scope::Query | Scope::Agent) {
            return Err(format!(
                "a key of scope {scope} runs queries as a user: give it one with --user"
            ));
        }
        if !groups.is_empty() || role.is_some() {
            return Err(
                "--groups and --role describe the key's user: give it one with --user".to_owned(),
            );
        }
        return Ok(None);
    };
    if scope == Scope::Setup {
        return Err("a setup key runs no query: it takes no --user".to_owned());
    }
    if user.chars().count() > 320 || user.chars().any(char::is_control) {
        return Err("--user must be at most 320 characters, without control characters".to_owned());
    }
    let role = match role.as_deref().map(str::parse::<Role>) {
        None => Role::Member,
        Some(Ok(role)) => role,
        Some(Err(why)) => return Err(format!("--role {why}")),
    };
    let groups: Vec<String> = groups
        .into_iter()
        .map(|g| g.trim().to_owned())
        .filter(|g| !g.is_empty())
        .collect();
    Ok(Some(
        Principal::member(user)
            .groups(groups)
            .role(role)
            .agent(scope == Scope::Agent),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use dbconsole_core::auth::StoredCredentials;
    use dbconsole_core::{Authenticator, CredentialKind, Scope, StaticCredentials};
    use dbconsole_storage_memory::MemoryStorage;

    use super::*;
    use crate::admin::print::print_reply;

    fn node_keys() -> NodeKeys {
        NodeKeys {
            sealer: dbconsole_core::Sealer::ephemeral().unwrap(),
            file: None,
        }
    }

    fn create(kind: CredentialKind, scope: Scope, name: &str) -> AdminRequest {
        AdminRequest::Create {
            kind,
            scope,
            name: name.to_owned(),
            user: None,
            groups: Vec::new(),
            role: None,
        }
    }

    #[tokio::test]
    async fn create_list_revoke_on_a_store() {
        let storage = Arc::new(MemoryStorage::new());
        let reply = execute(
            &*storage,
            &node_keys(),
            create(CredentialKind::ApiKey, Scope::Setup, " ci "),
        )
        .await;
        let AdminReply::Created { key, secret } = &reply else {
            panic!("{reply:?}");
        };
        assert!(key.id.starts_with("key_"), "{key:?}");
        assert_eq!(
            (key.kind, key.scope),
            (CredentialKind::ApiKey, Scope::Setup)
        );
        assert_eq!(key.name, "ci");
        assert_eq!(key.last_used_at, None);
        let secret_text = secret.expose_str().unwrap().to_owned();
        assert!(secret_text.starts_with("dbc_ak_"), "{secret_text}");

        // The secret is in the reply's JSON (that is how it reaches the command), never in
        // its Debug, its listing or what the store keeps.
        let json = serde_json::to_string(&reply).unwrap();
        assert!(json.contains(&secret_text));
        assert!(!format!("{reply:?}").contains(&secret_text));
        let back: AdminReply = serde_json::from_str(&json).unwrap();
        assert!(matches!(back, AdminReply::Created { secret: s, .. } if s == *secret));
        let stored = storage.list_caller_keys().await.unwrap();
        assert_eq!(stored.len(), 1);
        assert_ne!(&stored[0].digest[..], secret.expose());
        assert_eq!(stored[0].created_at, key.created_at);

        // The stored key authenticates, with its scope and only as its kind.
        let auth = StoredCredentials::new(storage.clone(), StaticCredentials::default());
        assert_eq!(
            auth.authenticate(CredentialKind::ApiKey, &secret_text)
                .await
                .unwrap()
                .map(|caller| caller.scope),
            Some(Scope::Setup)
        );
        assert_eq!(
            auth.authenticate(CredentialKind::AccessToken, &secret_text)
                .await
                .unwrap(),
            None
        );

        // The same key, with the use just recorded: written in the background, so it shows
        // up shortly after the request, not necessarily before it answered.
        let mut keys = Vec::new();
        for _ in 0..200 {
            let AdminReply::Listed { keys: listed } =
                execute(&*storage, &node_keys(), AdminRequest::List).await
            else {
                panic!("not listed");
            };
            keys = listed;
            if keys.first().is_some_and(|k| k.last_used_at.is_some()) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].id, key.id);
        assert!(keys[0].last_used_at.is_some(), "{keys:?}");
        let mut listing = Vec::new();
        print_reply(&AdminReply::Listed { keys }, &mut listing).unwrap();
        let listing = String::from_utf8(listing).unwrap();
        assert!(
            listing.contains(&key.id) && listing.contains("setup"),
            "{listing}"
        );
        assert!(!listing.contains(&secret_text), "{listing}");

        let revoke = AdminRequest::Revoke { id: key.id.clone() };
        let reply = execute(&*storage, &node_keys(), revoke.clone()).await;
        assert!(
            matches!(&reply, AdminReply::Revoked { key: gone } if gone.id == key.id),
            "{reply:?}"
        );
        assert_eq!(
            auth.authenticate(CredentialKind::ApiKey, &secret_text)
                .await
                .unwrap(),
            None
        );
        let again = execute(&*storage, &node_keys(), revoke).await;
        assert!(
            matches!(&again, AdminReply::Failed { error: Failure::NotFound, message }
                if message.contains(&key.id)),
            "{again:?}"
        );
        assert!(print_reply(&again, &mut Vec::new()).is_err());

        // The audit trail: the create and the revoke, by `dbconsole keys`.
        let trail = storage
            .list_audit(dbconsole_core::storage::AuditQuery {
                resource: Some(&key.id),
                after: None,
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        let actions: Vec<&str> = trail.iter().map(|event| event.action.as_str()).collect();
        assert_eq!(actions, ["caller_key.revoke", "caller_key.create"]);
        assert!(trail.iter().all(|event| event.actor.name == ADMIN_ACTOR));
    }

    #[tokio::test]
    async fn bad_names_are_refused_and_nothing_is_stored() {
        let storage = MemoryStorage::new();
        let long = "x".repeat(dbconsole_core::validate::KEY_NAME_MAX_CHARS + 1);
        for name in ["", "   ", "a\nb", "tab\there", long.as_str()] {
            let reply = execute(
                &storage,
                &node_keys(),
                create(CredentialKind::AccessToken, Scope::Full, name),
            )
            .await;
            assert!(
                matches!(
                    reply,
                    AdminReply::Failed {
                        error: Failure::Invalid,
                        ..
                    }
                ),
                "{name:?}: {reply:?}"
            );
        }
        assert!(storage.list_caller_keys().await.unwrap().is_empty());
    }
}
