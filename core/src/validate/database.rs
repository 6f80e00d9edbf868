//! Databases: the create/update body (one function for both) and the setup body.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::ValidationErrors;
use super::errors::message;
use super::reader::{Given, Items, Reader, TakenSecret};
use super::text::{NAME_MAX, Text, VALUE_MAX};
use crate::model::{
    Adapter, ConnectionParameter, Credential, CredentialId, Database, DatabaseId, HELD, Secret,
    Timestamp, TlsField, TlsMaterial,
};
use crate::seal::{Place, Sealer};

/// The `ai_max_rows` of a database that does not set it.
pub const DEFAULT_AI_MAX_ROWS: u32 = 500;

/// The rule of the one-line names and ids of a database.
const NAME: Text = Text::Line(NAME_MAX);

const RESERVED_PARAMETERS: [&str; 2] = ["user", "database"];

/// Sets `target` from a nullable field: absent keeps it, null resets it to `default`.
fn assign<T>(target: &mut T, given: Given<T>, default: T) {
    if let Some(value) = given {
        *target = value.unwrap_or(default);
    }
}

/// Sets an optional field: absent keeps it, null or blank clears it.
fn assign_opt<T>(target: &mut Option<T>, given: Given<T>) {
    if let Some(value) = given {
        *target = value;
    }
}

fn u32_field(reader: &mut Reader<'_>, key: &str, min: i64) -> Given<u32> {
    reader
        .integer(key, min, i64::from(u32::MAX))
        .map(|value| value.map(|v| v as u32))
}

fn port(reader: &mut Reader<'_>) -> Given<u16> {
    reader
        .integer("port", 1, 65535)
        .map(|value| value.map(|v| v as u16))
}

/// A database with every field unset (its create defaults), for a create to start from and
/// for the audit trail to tell what a create set.
pub(crate) fn blank_database(now: Timestamp) -> Database {
    Database {
        id: DatabaseId::generate(),
        api_id: None,
        name: String::new(),
        adapter: Adapter::Postgres,
        hostname: String::new(),
        port: None,
        database: String::new(),
        ssl: false,
        verify_server_hostname: false,
        restrict_access: false,
        review_bypass_allowed: false,
        group: None,
        slack_channel: None,
        tunnel_id: None,
        ai_enabled: false,
        ai_max_rows: DEFAULT_AI_MAX_ROWS,
        connection_parameters: Vec::new(),
        credentials: Vec::new(),
        tls: TlsMaterial::default(),
        inserted_at: now,
        updated_at: now,
    }
}

/// Builds a database from a create body (`stored` is `None`) or applies an update body to the
/// stored database. One pass: every field error of the body is reported at once.
///
/// `body` is the typed patch of the request ([`DatabaseBody`]): its secrets were taken out of
/// the JSON when it was parsed.
///
/// Fields left out keep their stored values (their defaults on create); null or a blank string
/// resets a field to its default; `credentials` and `connection_parameters`, when given, are
/// the whole new list (credentials merge with stored ones by id, see the README, *Endpoints*).
/// Passwords and TLS material are sealed with `sealer` for their place.
pub fn database_from_body(
    stored: Option<&Database>,
    body: &DatabaseBody,
    now: Timestamp,
    sealer: &Sealer,
) -> Result<Database, ValidationErrors> {
    let creating = stored.is_none();
    let mut db = stored.cloned().unwrap_or_else(|| blank_database(now));
    let mut r = Reader::new(&body.fields);

    if let Some(name) = r.required_text("name", creating, NAME) {
        db.name = name;
    }
    if let Some(adapter) = r.choice::<Adapter>("adapter", creating) {
        db.adapter = adapter;
    }
    if let Some(hostname) = r.required_text("hostname", creating, Text::Host) {
        db.hostname = hostname;
    }
    if let Some(database) = r.required_text("database", creating, NAME) {
        db.database = database;
    }
    assign_opt(&mut db.port, port(&mut r));
    assign(&mut db.ssl, r.boolean("ssl"), false);
    assign(
        &mut db.verify_server_hostname,
        r.boolean("verify_server_hostname"),
        false,
    );
    assign(&mut db.restrict_access, r.boolean("restrict_access"), false);
    assign(
        &mut db.review_bypass_allowed,
        r.boolean("review_bypass_allowed"),
        false,
    );
    assign_opt(&mut db.group, r.text("group", NAME));
    assign_opt(&mut db.slack_channel, r.text("slack_channel", NAME));
    assign_opt(&mut db.tunnel_id, r.text("tunnel_id", NAME));
    assign(&mut db.ai_enabled, r.boolean("ai_enabled"), false);
    assign(
        &mut db.ai_max_rows,
        u32_field(&mut r, "ai_max_rows", 1),
        DEFAULT_AI_MAX_ROWS,
    );
    for field in TlsField::ALL {
        let taken = body.tls.get(field).unwrap_or(&TakenSecret::Absent);
        let given = r.base64_secret(field.body_key(), taken);
        let place = Place::tls(db.id.as_str(), field);
        let sealed = r.sealed(field.body_key(), given, sealer, &place);
        assign_opt(db.tls.get_mut(field), sealed);
    }

    if let Some(parameters) = r.objects("connection_parameters") {
        let items = parameters.unwrap_or_default();
        if let Some(parsed) = connection_parameters(&items, r.errors()) {
            db.connection_parameters = parsed;
        }
    }

    match r.objects("credentials") {
        None if creating => {
            r.blank::<()>("credentials");
        }
        None => {}
        Some(None) => {
            r.blank::<()>("credentials");
        }
        Some(Some(items)) if items.is_empty() => {
            r.errors().add("credentials", message::AT_LEAST_ONE);
        }
        Some(Some(items)) => {
            let seal = CredentialSealing {
                sealer,
                database_id: db.id.as_str(),
                passwords: &body.passwords,
            };
            if let Some(credentials) = credentials(&db.credentials, &items, &seal, r.errors()) {
                db.credentials = credentials;
            }
        }
    }

    if db.verify_server_hostname && db.tls.ca_cert.is_none() {
        r.errors().add("verify_server_hostname", message::NEEDS_CA);
    }
    bind_passwords(stored, &mut db);

    if let Some(stored) = stored {
        db.updated_at = now.not_before_next(stored.updated_at);
    }
    r.finish().into_result(db)
}

/// What sealing a credential's password needs: the sealer, the database it belongs to, and the
/// passwords taken out of the body's `credentials`, by position.
struct CredentialSealing<'a> {
    sealer: &'a Sealer,
    database_id: &'a str,
    passwords: &'a [TakenSecret],
}

/// A database request body (`POST` and `PATCH` of a database, check-connection) as a typed
/// patch: the JSON object without its secrets, and the secrets (`ssl_ca_cert`, `ssl_cert`,
/// `ssl_key`, and each `credentials[i].password`) taken out of it when it is parsed, each in a
/// buffer wiped when dropped. A write that retries holds this, never a plaintext copy; its
/// `Debug` shows no secret.
#[derive(Debug)]
pub struct DatabaseBody {
    fields: Map<String, Value>,
    tls: TlsMaterial<TakenSecret>,
    passwords: Vec<TakenSecret>,
}

impl DatabaseBody {
    /// A field of the body that is not a secret (`None` for a secret, which was taken out).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }
}

impl From<Map<String, Value>> for DatabaseBody {
    fn from(mut fields: Map<String, Value>) -> Self {
        let mut tls = TlsMaterial::default();
        for field in TlsField::ALL {
            *tls.get_mut(field) = Some(TakenSecret::take(&mut fields, field.body_key()));
        }
        let passwords = match fields.get_mut("credentials") {
            Some(Value::Array(items)) => items
                .iter_mut()
                .map(|item| match item {
                    Value::Object(item) => TakenSecret::take(item, "password"),
                    _ => TakenSecret::Absent,
                })
                .collect(),
            _ => Vec::new(),
        };
        Self {
            fields,
            tls,
            passwords,
        }
    }
}

fn connection_parameters(
    items: &[&Map<String, Value>],
    errors: &mut ValidationErrors,
) -> Option<Vec<ConnectionParameter>> {
    Items::read(items, |_, r| {
        let name = r.required_text("name", true, NAME);
        if let Some(name) = &name
            && RESERVED_PARAMETERS.contains(&name.to_ascii_lowercase().as_str())
        {
            r.errors().add("name", message::RESERVED);
        }
        let value = r
            .raw_text("value", Text::Line(VALUE_MAX))
            .unwrap_or_default();
        name.map(|name| ConnectionParameter { name, value })
    })
    .unique_by("name", |p| Some(p.name.to_ascii_lowercase()))
    .finish(errors, "connection_parameters")
}

/// The new credential list: items with the id of a stored credential update it (fields left out
/// keep their values); other items are new credentials; stored ones not listed are dropped.
fn credentials(
    stored: &[Credential],
    items: &[&Map<String, Value>],
    seal: &CredentialSealing<'_>,
    errors: &mut ValidationErrors,
) -> Option<Vec<Credential>> {
    let mut kept_ids = HashSet::new();
    let mut index = 0;
    Items::read(items, |_, r| {
        let existing = r
            .text("id", NAME)
            .flatten()
            .and_then(|id| stored.iter().find(|c| c.id.as_str() == id))
            .filter(|c| kept_ids.insert(c.id.clone()));
        index += 1;
        credential(existing, seal, index - 1, r)
    })
    .unique_by("username", |c| Some(c.username.clone()))
    .unique_by("default_credential", |c| c.default_credential.then_some(()))
    .finish(errors, "credentials")
}

/// Binds each password of `db` (as `stored` becomes it, or as created) to where it goes
/// ([`Credential::password_for`]): a password given now, to the destination now; one kept
/// that was bound to nothing yet (stored before dbconsole kept this), to the destination it
/// was stored for; one kept by a change that gives another CA certificate, to [`HELD`]. So a
/// change of host, port, tunnel or TLS holds a password back until it is given again
/// (docs/api.md, "Where a stored password goes"). Nothing is opened.
pub(crate) fn bind_passwords(stored: Option<&Database>, db: &mut Database) {
    let new_ca = stored.is_some_and(|stored| stored.tls.ca_cert != db.tls.ca_cert);
    let destinations: Vec<Option<[u8; 32]>> = db
        .credentials
        .iter()
        .map(|credential| {
            credential.password.as_ref()?;
            let old = stored.and_then(|stored| {
                stored
                    .credentials
                    .iter()
                    .find(|o| o.id == credential.id && o.password == credential.password)
                    .map(|o| (stored, o))
            });
            match old {
                // Kept as it was stored.
                Some(_) if new_ca => Some(HELD),
                Some((stored, o)) => o.password_for.or_else(|| Some(stored.destination(o))),
                // Given now.
                None => Some(db.destination(credential)),
            }
        })
        .collect();
    for (credential, bound) in db.credentials.iter_mut().zip(destinations) {
        credential.password_for = bound;
    }
}

fn credential(
    existing: Option<&Credential>,
    seal: &CredentialSealing<'_>,
    index: usize,
    r: &mut Reader<'_>,
) -> Option<Credential> {
    let mut credential = existing.cloned().unwrap_or_else(|| Credential {
        id: CredentialId::generate(),
        username: String::new(),
        password: None,
        password_for: None,
        hostname: None,
        ai_allowed: false,
        timeout: None,
        reviews_required: 0,
        default_credential: false,
    });
    let username = r.required_text("username", existing.is_none(), NAME);
    if let Some(username) = username.clone() {
        credential.username = username;
    }
    let taken = seal.passwords.get(index).unwrap_or(&TakenSecret::Absent);
    let password = r.password("password", taken);
    let place = Place::password(seal.database_id, credential.id.as_str());
    let password = r.sealed("password", password, seal.sealer, &place);
    assign_opt(&mut credential.password, password);
    assign_opt(&mut credential.hostname, r.text("hostname", Text::Host));
    assign(&mut credential.ai_allowed, r.boolean("ai_allowed"), false);
    assign_opt(&mut credential.timeout, u32_field(r, "timeout", 1));
    assign(
        &mut credential.reviews_required,
        u32_field(r, "reviews_required", 0),
        0,
    );
    assign(
        &mut credential.default_credential,
        r.boolean("default_credential"),
        false,
    );
    (existing.is_some() || username.is_some()).then_some(credential)
}

/// A validated setup body (`PUT /api/v1/console/databases/setup`).
#[derive(Clone, Debug)]
pub struct SetupRequest {
    /// The external id (`id` in the body), stored as `api_id`.
    pub api_id: String,
    adapter: Adapter,
    hostname: String,
    database: String,
    username: String,
    password: Secret,
    name: Option<String>,
    port: Option<u16>,
    group: Option<String>,
    tunnel_id: Option<String>,
    ssl: bool,
    tls: TlsMaterial<Secret>,
    reviews_required: u32,
    review_bypass_allowed: bool,
}

/// Reads a setup body, taking its secrets out of it first (as [`DatabaseBody`] does). Setup is
/// declarative: [`apply_setup`] sets every field it maps, absent optional ones to their
/// defaults.
pub fn parse_setup(mut body: Map<String, Value>) -> Result<SetupRequest, ValidationErrors> {
    let password = TakenSecret::take(&mut body, "password");
    let mut taken_tls = TlsMaterial::default();
    for field in TlsField::ALL {
        *taken_tls.get_mut(field) = Some(TakenSecret::take(&mut body, field.body_key()));
    }
    let mut r = Reader::new(&body);
    let api_id = r.required_text("id", true, NAME);
    let adapter = r.choice::<Adapter>("adapter", true);
    let hostname = r.required_text("hostname", true, Text::Host);
    let database = r.required_text("database", true, NAME);
    let username = r.required_text("username", true, NAME);
    let password = r.password("password", &password).flatten();
    if password.is_none() {
        r.blank::<()>("password");
    }
    let name = r.text("name", NAME).flatten();
    let port = port(&mut r).flatten();
    let group = r.text("group", NAME).flatten();
    let tunnel_id = r.text("tunnel_id", NAME).flatten();
    // Only "enabled" turns TLS on; a typo is refused rather than read as "off".
    let ssl = match r.text("ssl", NAME) {
        Some(Some(value)) if value == "enabled" => true,
        Some(Some(value)) if value == "disabled" => false,
        Some(Some(_)) => {
            r.errors().add("ssl", message::SSL_CHOICES);
            false
        }
        _ => false,
    };
    let mut tls = TlsMaterial::default();
    for field in TlsField::ALL {
        let taken = taken_tls.get(field).unwrap_or(&TakenSecret::Absent);
        *tls.get_mut(field) = r.base64_secret(field.body_key(), taken).flatten();
    }
    let reviews_required = u32_field(&mut r, "reviews_required", 0)
        .flatten()
        .unwrap_or(0);
    let review_bypass_allowed = r
        .boolean("review_bypass_allowed")
        .flatten()
        .unwrap_or(false);
    let errors = r.finish();
    match (api_id, adapter, hostname, database, username, password) {
        (
            Some(api_id),
            Some(adapter),
            Some(hostname),
            Some(database),
            Some(username),
            Some(password),
        ) if errors.is_empty() => Ok(SetupRequest {
            api_id,
            adapter,
            hostname,
            database,
            username,
            password,
            name,
            port,
            group,
            tunnel_id,
            ssl,
            tls,
            reviews_required,
            review_bypass_allowed,
        }),
        _ => Err(errors),
    }
}

/// The database a setup leaves: created when `stored` is `None`, else the stored one with every
/// field setup maps set from the request and the rest kept. It ends with exactly one
/// credential, the default one; its id is kept when the stored default credential has the same
/// username. Its secrets are sealed with `sealer` for their place.
pub fn apply_setup(
    stored: Option<&Database>,
    setup: &SetupRequest,
    now: Timestamp,
    sealer: &Sealer,
) -> Result<Database, ValidationErrors> {
    let mut db = stored.cloned().unwrap_or_else(|| blank_database(now));
    db.api_id = Some(setup.api_id.clone());
    db.name = setup.name.clone().unwrap_or_else(|| setup.database.clone());
    db.adapter = setup.adapter;
    db.hostname = setup.hostname.clone();
    db.database = setup.database.clone();
    db.port = setup.port;
    db.group = setup.group.clone();
    db.tunnel_id = setup.tunnel_id.clone();
    db.ssl = setup.ssl;
    let mut errors = ValidationErrors::new();
    let mut seal = |key: &str, secret: Option<&Secret>, place: Place| {
        let sealed = secret.map(|secret| sealer.seal(secret, &place)).transpose();
        sealed.unwrap_or_else(|_| {
            errors.add(key, message::NOT_SEALED);
            None
        })
    };
    for field in TlsField::ALL {
        let place = Place::tls(db.id.as_str(), field);
        *db.tls.get_mut(field) = seal(field.body_key(), setup.tls.get(field), place);
    }
    db.review_bypass_allowed = setup.review_bypass_allowed;
    if db.tls.ca_cert.is_none() {
        db.verify_server_hostname = false;
    }
    let kept = db
        .credentials
        .iter()
        .find(|c| c.default_credential && c.username == setup.username)
        .cloned();
    let mut credential = kept.unwrap_or_else(|| Credential {
        id: CredentialId::generate(),
        username: setup.username.clone(),
        password: None,
        password_for: None,
        hostname: None,
        ai_allowed: false,
        timeout: None,
        reviews_required: 0,
        default_credential: true,
    });
    // Declarative: the setup's host is where its password goes (a host override left on the
    // kept credential by an update would otherwise receive it).
    credential.hostname = None;
    credential.password = seal(
        "password",
        Some(&setup.password),
        Place::password(db.id.as_str(), credential.id.as_str()),
    );
    credential.reviews_required = setup.reviews_required;
    credential.default_credential = true;
    db.credentials = vec![credential];
    bind_passwords(stored, &mut db);
    if let Some(stored) = stored {
        db.updated_at = now.not_before_next(stored.updated_at);
    }
    errors.into_result(db)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(value: Value) -> DatabaseBody {
        match value {
            Value::Object(map) => DatabaseBody::from(map),
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn secrets_are_taken_out_of_the_body_when_it_is_parsed() {
        let parsed = body(json!({
            "name": "Orders", "adapter": "postgres", "hostname": "h", "database": "d",
            "ssl_ca_cert": "c2VjcmV0LWNh",
            "credentials": [
                {"username": "reader", "password": "pw-taken-out-1"},
                {"username": "writer", "password": 7},
            ],
        }));
        // What a retried write holds: no secret in the JSON, none in its Debug.
        let fields = serde_json::to_string(&parsed.fields).unwrap();
        assert!(
            !fields.contains("pw-taken-out") && !fields.contains("c2VjcmV0"),
            "{fields}"
        );
        let debug = format!("{parsed:?}");
        assert!(
            !debug.contains("pw-taken-out") && !debug.contains("c2VjcmV0"),
            "{debug}"
        );
        assert!(parsed.get("ssl_ca_cert").is_none() && parsed.get("name").is_some());

        // Read as they were: the second password is of the wrong type, on its own field.
        let sealer = Sealer::ephemeral().unwrap();
        let errors = database_from_body(None, &parsed, Timestamp::now(), &sealer).unwrap_err();
        let errors = serde_json::to_value(&errors).unwrap();
        assert_eq!(
            errors,
            json!({"credentials": [{}, {"password": ["is invalid"]}]}),
        );
        let mut fixed = body(json!({
            "name": "Orders", "adapter": "postgres", "hostname": "h", "database": "d",
            "ssl_ca_cert": "c2VjcmV0LWNh",
            "credentials": [{"username": "reader", "password": "pw-taken-out-1"}],
        }));
        let db = database_from_body(None, &fixed, Timestamp::now(), &sealer).unwrap();
        let credential = &db.credentials[0];
        let place = Place::password(db.id.as_str(), credential.id.as_str());
        let password = sealer
            .open(credential.password.as_ref().unwrap(), &place)
            .unwrap();
        assert_eq!(password.expose(), b"pw-taken-out-1");
        let ca = db.tls.ca_cert.as_ref().unwrap();
        let place = Place::tls(db.id.as_str(), TlsField::CaCert);
        assert_eq!(sealer.open(ca, &place).unwrap().expose(), b"secret-ca");
        // The same typed patch builds the same secrets again (a retried edit).
        let again = database_from_body(None, &fixed, Timestamp::now(), &sealer).unwrap();
        let credential = &again.credentials[0];
        let place = Place::password(again.id.as_str(), credential.id.as_str());
        let password = sealer.open(credential.password.as_ref().unwrap(), &place);
        assert_eq!(password.unwrap().expose(), b"pw-taken-out-1");
        fixed.passwords.clear();
        assert!(database_from_body(None, &fixed, Timestamp::now(), &sealer).is_ok());
    }
}
