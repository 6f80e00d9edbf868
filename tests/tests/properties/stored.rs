//! The records stored before hostile requests, the placeholders that name them, and the check
//! that a refused request changed nothing.

use bytes::Bytes;
use dbconsole_tests::{ACCESS_TOKEN, API_KEY, Api, DASHBOARDS, DATABASES};
use http::{Method, Request, header};
use http_body_util::Full;
use proptest::prelude::*;
use serde_json::Value;

use crate::strategies::*;
use crate::support::*;

/// The ids of the records stored before the hostile requests, for the placeholders.
pub(crate) struct Stored {
    pub(crate) api: Api,
    pub(crate) db: String,
    pub(crate) setup_db: String,
    pub(crate) crd: String,
    pub(crate) dash: String,
    pub(crate) pl: String,
    pub(crate) act: String,
}

impl Stored {
    /// A database with two credentials, one made by setup, and a dashboard with a panel.
    pub(crate) async fn new() -> Self {
        let api = fresh_api();
        let db = api.create_database(&stored_database()).await;
        let setup = api
            .db(
                Method::PUT,
                &format!("{DATABASES}/setup"),
                Some(&setup_database()),
            )
            .await
            .expect(200)
            .json();
        let dash = api.create_dashboard(&stored_dashboard()).await;
        let panel = &dash["panels"][0];
        Self {
            db: str_of(&db["id"]).to_owned(),
            setup_db: str_of(&setup["id"]).to_owned(),
            crd: str_of(&db["credentials"][0]["id"]).to_owned(),
            dash: str_of(&dash["id"]).to_owned(),
            pl: str_of(&panel["id"]).to_owned(),
            act: str_of(&panel["actions"][0]["id"]).to_owned(),
            api,
        }
    }

    /// `text` with the placeholders `{db}`, `{crd}`, `{dash}`, `{pl}`, `{act}`, `{api}` and
    /// `{user}` replaced by the stored records' ids (and the setup api_id, a username).
    pub(crate) fn fill(&self, text: &str) -> String {
        text.replace("{db}", &self.db)
            .replace("{crd}", &self.crd)
            .replace("{dash}", &self.dash)
            .replace("{pl}", &self.pl)
            .replace("{act}", &self.act)
            .replace("{api}", SETUP_API_ID)
            .replace("{user}", "reader")
    }

    pub(crate) fn fill_json(&self, value: &mut Value) {
        match value {
            Value::String(text) => *text = self.fill(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.fill_json(item)),
            Value::Object(object) => object.values_mut().for_each(|item| self.fill_json(item)),
            _ => {}
        }
    }

    /// What every listing and retrieve answers now: equal before and after a refused request.
    pub(crate) async fn snapshot(&self) -> Vec<(u16, String)> {
        let paths = [
            format!("{DATABASES}?limit=500"),
            database_path(&self.db),
            database_path(&self.setup_db),
        ];
        let mut answers = Vec::new();
        for path in &paths {
            let answer = self.api.db(Method::GET, path, None).await;
            answers.push((answer.status.as_u16(), answer.text()));
        }
        for path in [
            format!("{DASHBOARDS}?limit=500"),
            dashboard_path(&self.dash),
        ] {
            let answer = self.api.dash(Method::GET, &path, None).await;
            answers.push((answer.status.as_u16(), answer.text()));
        }
        // Dashboard responses carry no timestamps.
        if let Ok(Some(dashboard)) = self.api.service.storage().dashboard(&self.dash).await {
            let timestamps = format!("{:?} {:?}", dashboard.inserted_at, dashboard.updated_at);
            answers.push((0, timestamps));
        }
        answers
    }

    /// Sends `request`, checks that it is no 5xx and that a refusal changed nothing.
    pub(crate) async fn send_checked(
        &self,
        request: Request<Full<Bytes>>,
        described: &str,
    ) -> Result<(), TestCaseError> {
        let before = self.snapshot().await;
        let answer = self.api.send(request).await;
        prop_assert!(
            answer.status.as_u16() < 500,
            "{} answered {}: {}",
            described,
            answer.status,
            answer.text()
        );
        if answer.status.as_u16() != 200 {
            let after = self.snapshot().await;
            prop_assert_eq!(
                after,
                before,
                "{} was refused ({}) but changed what is stored",
                described,
                answer.status
            );
        }
        Ok(())
    }
}

impl HostileBody {
    pub(crate) fn request(&self, stored: &Stored) -> Request<Full<Bytes>> {
        let (method, path) = self.endpoint.method_and_path();
        let body = match &self.payload {
            Payload::Json(value) => {
                let mut value = value.clone();
                stored.fill_json(&mut value);
                value.to_string().into_bytes()
            }
            Payload::Bytes(bytes) => bytes.clone(),
        };
        raw_request(method, &stored.fill(path), self.content_type, body)
    }
}

impl HostilePath {
    pub(crate) fn request(&self, stored: &Stored) -> Request<Full<Bytes>> {
        let path = stored.fill(&self.path);
        let mut builder = Request::builder().method(self.method.clone()).uri(&path);
        let bearer = format!("Bearer {ACCESS_TOKEN}");
        let headers: &[(&str, &str)] = match self.caller {
            Caller::Both => &[("x-api-key", API_KEY), ("authorization", &bearer)],
            Caller::ApiKey => &[("x-api-key", API_KEY)],
            Caller::Bearer => &[("authorization", &bearer)],
            Caller::Nobody => &[],
            Caller::WrongKey => &[("x-api-key", "wrong"), ("authorization", "Bearer wrong")],
        };
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let body = match &self.body {
            Some(body) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                let mut body = body.clone();
                stored.fill_json(&mut body);
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        builder
            .body(Full::new(body))
            .unwrap_or_else(|e| panic!("request to {path:?}: {e}"))
    }
}
