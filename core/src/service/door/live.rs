//! The door sessions open on this node: the caps per person and per credential, the cancel
//! keys handed to clients (each mapped to its backend's), and the ending of a session from the
//! console, at a deactivation or at a shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::watch;

/// Cancels what a door session's backend is running.
pub(crate) type Canceller = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// An open door session, as its person sees it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DoorSessionView {
    /// `door_…`: what ends it.
    pub(crate) id: String,
    /// The person.
    pub(crate) user: String,
    /// The database and credential it runs as.
    pub(crate) database_id: String,
    pub(crate) credential_id: String,
    pub(crate) username: String,
    /// The client's address and application name.
    pub(crate) client_address: String,
    pub(crate) application_name: String,
    /// When it opened.
    pub(crate) opened_at: String,
    /// The door password it signed in with (`None`: a key).
    pub(crate) password_id: Option<String>,
}

struct Entry {
    view: DoorSessionView,
    key: (i32, i32),
    cancel: Canceller,
    end: watch::Sender<bool>,
}

/// The open door sessions.
#[derive(Default)]
pub(crate) struct Live {
    entries: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").finish_non_exhaustive()
    }
}

/// Why a session was not registered: a cap.
#[derive(Debug)]
pub(crate) enum Full {
    /// The person holds `max` sessions.
    Person(usize),
    /// The credential holds `max` sessions.
    Credential(usize),
}

/// A registered session: removed when dropped. `ended` turns true when it is to end.
#[derive(Debug)]
pub(crate) struct Registered {
    live: Arc<Live>,
    pub(crate) id: String,
    pub(crate) ended: watch::Receiver<bool>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.live.lock().remove(&self.id);
    }
}

impl Live {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a session under the caps, with the cancel key its client was given.
    pub(crate) fn register(
        self: &Arc<Self>,
        view: DoorSessionView,
        key: (i32, i32),
        cancel: Canceller,
        caps: (usize, usize),
    ) -> Result<Registered, Full> {
        let mut entries = self.lock();
        let person = entries
            .values()
            .filter(|e| e.view.user == view.user)
            .count();
        if person >= caps.0 {
            return Err(Full::Person(caps.0));
        }
        let credential = entries
            .values()
            .filter(|e| e.view.credential_id == view.credential_id)
            .count();
        if credential >= caps.1 {
            return Err(Full::Credential(caps.1));
        }
        let (end, ended) = watch::channel(false);
        let id = view.id.clone();
        entries.insert(
            id.clone(),
            Entry {
                view,
                key,
                cancel,
                end,
            },
        );
        Ok(Registered {
            live: Arc::clone(self),
            id,
            ended,
        })
    }

    /// Whether one more session of `user` as `credential_id` fits the caps now.
    pub(crate) fn has_room(
        &self,
        user: &str,
        credential_id: &str,
        caps: (usize, usize),
    ) -> Result<(), Full> {
        let entries = self.lock();
        if entries.values().filter(|e| e.view.user == user).count() >= caps.0 {
            return Err(Full::Person(caps.0));
        }
        if entries
            .values()
            .filter(|e| e.view.credential_id == credential_id)
            .count()
            >= caps.1
        {
            return Err(Full::Credential(caps.1));
        }
        Ok(())
    }

    /// What cancels the session whose client holds `key`.
    pub(crate) fn canceller(&self, key: (i32, i32)) -> Option<Canceller> {
        self.lock()
            .values()
            .find(|e| e.key == key)
            .map(|e| Arc::clone(&e.cancel))
    }

    /// `user`'s open sessions, oldest first.
    pub(crate) fn of_user(&self, user: &str) -> Vec<DoorSessionView> {
        let mut views: Vec<DoorSessionView> = self
            .lock()
            .values()
            .filter(|e| e.view.user == user)
            .map(|e| e.view.clone())
            .collect();
        views.sort_by(|a, b| a.id.cmp(&b.id));
        views
    }

    /// Ends `user`'s session `id`: whether there was one.
    pub(crate) fn end(&self, user: &str, id: &str) -> bool {
        let entries = self.lock();
        match entries.get(id) {
            Some(entry) if entry.view.user == user => {
                entry.end.send_replace(true);
                true
            }
            _ => false,
        }
    }

    /// Ends every session signed in with door password `id` (revoked).
    pub(crate) fn end_password(&self, id: &str) {
        for entry in self
            .lock()
            .values()
            .filter(|e| e.view.password_id.as_deref() == Some(id))
        {
            entry.end.send_replace(true);
        }
    }

    /// Ends every session of `user` (deactivated).
    pub(crate) fn end_user(&self, user: &str) {
        for entry in self.lock().values().filter(|e| e.view.user == user) {
            entry.end.send_replace(true);
        }
    }

    /// Ends every session.
    pub(crate) fn end_all(&self) {
        for entry in self.lock().values() {
            entry.end.send_replace(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Timestamp;

    fn view(id: &str, user: &str, credential: &str) -> DoorSessionView {
        DoorSessionView {
            id: id.to_owned(),
            user: user.to_owned(),
            database_id: "db_1".to_owned(),
            credential_id: credential.to_owned(),
            username: "reader".to_owned(),
            client_address: "127.0.0.1".to_owned(),
            application_name: "psql".to_owned(),
            opened_at: Timestamp::now().to_string(),
            password_id: Some("ses_1".to_owned()),
        }
    }

    fn nothing() -> Canceller {
        Arc::new(|| Box::pin(async {}))
    }

    #[test]
    fn caps_hold_per_person_and_credential_and_a_dropped_session_leaves() {
        let live = Arc::new(Live::default());
        let a = live
            .register(view("door_1", "ann", "cr_1"), (1, 1), nothing(), (2, 3))
            .unwrap();
        let _b = live
            .register(view("door_2", "ann", "cr_1"), (2, 2), nothing(), (2, 3))
            .unwrap();
        assert!(matches!(
            live.register(view("door_3", "ann", "cr_2"), (3, 3), nothing(), (2, 3)),
            Err(Full::Person(2))
        ));
        let _c = live
            .register(view("door_4", "bob", "cr_1"), (4, 4), nothing(), (2, 3))
            .unwrap();
        assert!(matches!(
            live.register(view("door_5", "cy", "cr_1"), (5, 5), nothing(), (2, 3)),
            Err(Full::Credential(3))
        ));
        assert!(matches!(
            live.has_room("ann", "cr_9", (2, 3)),
            Err(Full::Person(2))
        ));
        assert!(matches!(
            live.has_room("cy", "cr_1", (2, 3)),
            Err(Full::Credential(3))
        ));
        assert!(live.has_room("cy", "cr_2", (2, 3)).is_ok());
        assert!(live.canceller((1, 1)).is_some());
        assert!(live.canceller((1, 2)).is_none());
        assert!(!live.end("bob", "door_1"), "only its person ends it");
        assert!(live.end("ann", "door_1"));
        assert!(*a.ended.borrow());
        drop(a);
        assert_eq!(live.of_user("ann").len(), 1);
        assert!(live.canceller((1, 1)).is_none());
    }
}
