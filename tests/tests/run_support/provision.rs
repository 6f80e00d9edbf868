//! The provisioning tests' driver (`provision_postgres.rs`, `provision_mysql.rs`): one
//! database record, its credential, and the routes of its data protection, through the API.

use dbconsole_core::model::Principal;
use serde_json::{Value, json};

use super::alice;

/// A database record of the test console and the credential its runs use.
pub(crate) struct Setup {
    pub(crate) console: dbconsole_tests::TestConsole,
    pub(crate) db: String,
    pub(crate) credential: String,
}

impl Setup {
    /// `method` on the database's `path` (below `/api/v1/console/databases/{id}`) with the API
    /// key: the 200 answer's JSON.
    pub(crate) async fn send(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Value {
        self.console
            .send(
                method,
                &format!("/api/v1/console/databases/{}{path}", self.db),
                None,
                None,
                body,
            )
            .await
            .expect(200)
            .json()
    }

    pub(crate) async fn plan(&self) -> Value {
        self.send(http::Method::GET, "/data-protection/plan", None)
            .await
    }

    pub(crate) async fn apply(&self) -> Value {
        self.send(http::Method::POST, "/data-protection/apply", None)
            .await
    }

    pub(crate) async fn status(&self) -> Value {
        self.send(http::Method::GET, "/data-protection/status", None)
            .await
    }

    /// Runs `sql` as `who`: the status and the JSON answer (its text when it is not JSON).
    pub(crate) async fn run_as(&self, who: &Principal, sql: &str) -> (u16, Value) {
        let (_, answer) = self
            .console
            .query(who, &self.db, &self.credential, sql, None, None)
            .await;
        let status = answer.status.as_u16();
        let text = answer.text();
        (status, serde_json::from_str(&text).unwrap_or(json!(text)))
    }

    /// Runs `sql` as alice.
    pub(crate) async fn run(&self, sql: &str) -> (u16, Value) {
        self.run_as(&alice(), sql).await
    }
}

/// Every statement of a plan.
pub(crate) fn statements(plan: &Value) -> Vec<String> {
    plan["roles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["steps"].as_array().unwrap().iter())
        .map(|s| s["sql"].as_str().unwrap().to_owned())
        .collect()
}
