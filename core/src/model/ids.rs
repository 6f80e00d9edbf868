//! Identifiers: `<prefix>_<ULID in lowercase>`, sortable by creation time.

use std::fmt;
use std::sync::Mutex;

use ulid::{Generator, Ulid};

/// One process-wide monotonic generator, so that ids made in the same millisecond still sort
/// in the order they were made.
static GENERATOR: Mutex<Option<Generator>> = Mutex::new(None);

fn next_ulid() -> Ulid {
    let mut guard = GENERATOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let generator = guard.get_or_insert_with(Generator::new);
    // The generator only fails when 2^80 ids were made in one millisecond.
    generator.generate().unwrap_or_else(|_| Ulid::new())
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// The prefix that every id of this kind starts with (without the underscore).
            pub const PREFIX: &'static str = $prefix;

            /// A new, unique id.
            pub fn generate() -> Self {
                Self(format!("{}_{}", $prefix, next_ulid().to_string().to_ascii_lowercase()))
            }

            /// Wraps a stored id without checking it (ids come back from storage as written).
            pub fn from_stored(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// Id of a database record (`db_…`).
    DatabaseId,
    "db"
);
id_type!(
    /// Id of a credential inside a database (`crd_…`).
    CredentialId,
    "crd"
);
id_type!(
    /// Id of a dashboard (`dash_…`).
    DashboardId,
    "dash"
);
id_type!(
    /// Id of a panel inside a dashboard (`pl_…`).
    PanelId,
    "pl"
);
id_type!(
    /// Id of a row action inside a panel (`act_…`).
    ActionId,
    "act"
);
id_type!(
    /// Id of a stored caller credential (`key_…`).
    KeyId,
    "key"
);
id_type!(
    /// Id of a browser session or sign-in link (`ses_…`); not its secret.
    SessionId,
    "ses"
);
id_type!(
    /// Id of a query (`qry_…`), ordered by the time it was created.
    QueryId,
    "qry"
);
id_type!(
    /// Id of a saved query (`sq_…`).
    SavedQueryId,
    "sq"
);
id_type!(
    /// Id of a delivery of the outbox (`dlv_…`), ordered by the time it was made.
    DeliveryId,
    "dlv"
);
id_type!(
    /// Id of an audit event (`evt_…`), ordered by the time the event was made.
    EventId,
    "evt"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_prefix_and_lowercase_ulid() {
        let id = DatabaseId::generate();
        let (prefix, rest) = id.as_str().split_once('_').unwrap();
        assert_eq!(prefix, "db");
        assert_eq!(rest.len(), 26);
        assert_eq!(rest, rest.to_ascii_lowercase());
        assert!(Ulid::from_string(&rest.to_ascii_uppercase()).is_ok());
    }

    #[test]
    fn ids_sort_in_creation_order() {
        let ids: Vec<_> = (0..1000).map(|_| DashboardId::generate()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
    }
}
