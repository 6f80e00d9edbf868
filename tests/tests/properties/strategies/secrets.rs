//! Secrets in every place a request can carry them, and the bodies that misplace them.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::strategies::*;
use crate::support::*;

/// The secrets of one case and where they go.
#[derive(Clone, Debug)]
pub(crate) struct SecretCase {
    /// A database whose credentials all have passwords, with all three certificates.
    pub(crate) create: CreateBody,
    /// New passwords for the stored credentials, by position.
    pub(crate) new_passwords: Vec<String>,
    pub(crate) new_ca: Pem,
    /// The password of a setup create, then of a setup update.
    pub(crate) setup_passwords: [String; 2],
    pub(crate) setup_tls: Tls,
}

pub(crate) fn secret_case() -> BoxedStrategy<SecretCase> {
    (
        create_body(),
        vec(password_text(), 5),
        vec(password_text(), 5),
        pem("CERTIFICATE"),
        prop::array::uniform2(password_text()),
        full_tls(),
        full_tls(),
    )
        .prop_map(
            |(mut create, passwords, new_passwords, new_ca, setup_passwords, tls, setup_tls)| {
                for (credential, password) in create.credentials.iter_mut().zip(passwords) {
                    credential.password = Password::Set(password);
                }
                create.tls = tls;
                SecretCase {
                    create,
                    new_passwords,
                    new_ca,
                    setup_passwords,
                    setup_tls,
                }
            },
        )
        .boxed()
}

impl SecretCase {
    /// Every secret of the case, as it could show up in a response: passwords as they are,
    /// certificates as the base64 that was sent and as the PEM body line inside.
    pub(crate) fn needles(&self) -> Vec<String> {
        let mut needles: Vec<String> = self
            .create
            .credentials
            .iter()
            .filter_map(|c| c.password.stored(None))
            .chain(self.new_passwords.iter().cloned())
            .chain(self.setup_passwords.iter().cloned())
            .collect();
        let pems = self
            .create
            .tls
            .pems()
            .chain(self.setup_tls.pems())
            .chain([&self.new_ca]);
        for pem in pems {
            needles.push(pem.base64.clone());
            needles.push(pem.body.clone());
        }
        needles
    }

    pub(crate) fn setup_body(&self, password: &str) -> Value {
        let mut body = Map::new();
        for (key, value) in [
            ("id", SETUP_API_ID),
            ("adapter", "postgres"),
            ("hostname", "db.internal"),
            ("database", "shop"),
            ("username", "app"),
            ("password", password),
            ("ssl", "enabled"),
        ] {
            body.insert(key.to_owned(), value.into());
        }
        self.setup_tls.add_to(&mut body);
        Value::Object(body)
    }

    /// Bodies that put secrets where they do not belong: each must be refused without echoing
    /// them.
    pub(crate) fn misplaced(&self) -> Vec<Value> {
        let pw = &self.new_passwords[0];
        let other = &self.new_passwords[1];
        let ca = &self.new_ca.base64;
        vec![
            json!({"port": pw}),
            json!({"adapter": pw}),
            json!({"timeout": pw, "ai_max_rows": pw}),
            json!({"ssl_ca_cert": pw}),
            json!({"ssl_ca_cert": format!("{ca}!")}),
            json!({"name": {"password": pw}}),
            json!({"name": ""}),
            json!({"credentials": [{"username": " ", "password": pw}]}),
            json!({"credentials": [{"username": "a", "password": pw}, {"username": "a", "password": other}]}),
            json!({"credentials": [{"password": pw, "default_credential": true}, {"username": "b", "default_credential": true}]}),
            json!({"credentials": []}),
            json!({"credentials": pw}),
            json!({"connection_parameters": [{"name": "user", "value": pw}]}),
            json!({"verify_server_hostname": pw}),
        ]
    }

    /// Broken JSON around a password.
    pub(crate) fn malformed(&self) -> Vec<String> {
        let pw = &self.new_passwords[0];
        vec![
            format!("{{\"credentials\":[{{\"username\":\"u\",\"password\":\"{pw}\""),
            format!("{{\"password\": {pw}}}"),
            pw.clone(),
            format!("\"{pw}\""),
            format!("[\"{pw}\"]"),
        ]
    }
}
