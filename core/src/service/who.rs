//! Who may call an endpoint: the caller credentials its mount takes ([`Credentials`]) and the
//! scopes it admits ([`Who`]). Pure, and read by the route table, the pipeline and `GET /me`.

use crate::auth::Caller;
use crate::model::{CredentialKind, Scope};

/// The caller credentials a route takes: a set of kinds, possibly empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Credentials(u8);

impl Credentials {
    /// None at all: the route is open (the OpenAPI document; later the console's pages and
    /// sign-in).
    pub(crate) const NONE: Self = Self(0);
    /// `x-api-key`.
    pub(crate) const API_KEY: Self = Self(1);
    /// `Authorization: Bearer`.
    pub(crate) const BEARER: Self = Self(2);
    /// Either of the two.
    pub(crate) const EITHER: Self = Self(1 | 2);

    /// Whether it takes any credential.
    pub(crate) fn required(self) -> bool {
        self != Self::NONE
    }

    /// Whether a 401 carries `www-authenticate: Bearer`.
    pub(crate) fn takes_bearer(self) -> bool {
        self.0 & Self::BEARER.0 != 0
    }

    /// Whether a presented credential of this kind is looked at.
    pub(crate) fn accepts(self, kind: CredentialKind) -> bool {
        let bit = match kind {
            CredentialKind::ApiKey => Self::API_KEY.0,
            CredentialKind::AccessToken => Self::BEARER.0,
        };
        self.0 & bit != 0
    }

    /// What a 401 says the route takes, and why what was presented did not do: `presented` is
    /// whether a credential the route takes was sent, `other` whether one it does not take was.
    pub(crate) fn hint(self, presented: bool, other: bool) -> &'static str {
        match (self, presented, other) {
            (Self::API_KEY, true, _) => "the API key (x-api-key) is not valid",
            (Self::API_KEY, false, true) => {
                "this route takes an API key in the x-api-key header, not an access token"
            }
            (Self::API_KEY, false, false) => "this route takes an API key in the x-api-key header",
            (Self::BEARER, true, _) => "the access token (Authorization: Bearer) is not valid",
            (Self::BEARER, false, true) => {
                "this route takes an access token (Authorization: Bearer <token>), not an API key"
            }
            (Self::BEARER, false, false) => {
                "this route takes an access token (Authorization: Bearer <token>)"
            }
            (_, true, _) => "the credential is not valid",
            (_, false, _) => {
                "this route takes an API key in the x-api-key header or an access token (Authorization: Bearer <token>)"
            }
        }
    }
}

/// Who may call an endpoint: a predicate over the caller's scope and principal. (Whether a
/// principal may act on a given record, such as the author of a query, is its handler's
/// question: it needs the record.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Who {
    /// Anyone, authenticated or not.
    Anyone,
    /// A full-scope caller.
    Full,
    /// A full- or setup-scope caller (declarative setup and removal).
    Setup,
    /// A full-, query- or agent-scope caller: the routes that run queries (their handlers
    /// need a principal, and say so).
    Querier,
    /// A full-scope caller, or a query-scope one whose principal administers the database (its
    /// handler asks: [`super::admission::Admission::administered`]).
    Administrator,
    /// A full-scope caller, or a query-scope one (a person, not an agent) whose principal may
    /// make or change the dashboard: its handler asks (docs/dashboards.md, "Who edits and
    /// views").
    Editor,
}

impl Who {
    /// Whether `caller` may call the endpoint.
    pub(crate) fn permits(self, caller: &Caller) -> bool {
        match self {
            Who::Anyone => true,
            Who::Full => caller.scope == Scope::Full,
            Who::Setup => matches!(caller.scope, Scope::Full | Scope::Setup),
            Who::Querier => matches!(caller.scope, Scope::Full | Scope::Query | Scope::Agent),
            Who::Administrator | Who::Editor => matches!(caller.scope, Scope::Full | Scope::Query),
        }
    }

    /// Whether `caller` may learn which methods a path of such endpoints answers (before a
    /// 405): setup scope reaches only the setup calls themselves.
    pub(crate) fn reaches(self, caller: &Caller) -> bool {
        match self {
            Who::Setup => caller.scope == Scope::Full,
            other => other.permits(caller),
        }
    }
}

/// Where an endpoint is mounted: a path prefix and the credentials it takes there.
#[derive(Debug)]
pub(crate) struct Mount {
    /// Prefixed to the endpoint's path template.
    pub(crate) prefix: &'static str,
    /// What a caller presents there.
    pub(crate) credentials: Credentials,
    /// Whether it is a compatibility path (the Terraform provider's).
    pub(crate) compat: bool,
}

/// A mount at `prefix` taking `credentials`; `compat` for a compatibility path.
pub(crate) const fn mount(prefix: &'static str, credentials: Credentials, compat: bool) -> Mount {
    Mount {
        prefix,
        credentials,
        compat,
    }
}
