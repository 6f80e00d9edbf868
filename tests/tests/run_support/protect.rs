//! The attempts of the data protection tests (`protect_*.rs`): a statement run in every format,
//! its answer checked for protected values and against what it must come to.

use dbconsole_tests::TestConsole;
use serde_json::{Value, json};

use super::{PASSWORD, alice, redb_run_console};

/// Text that appears in every protected value and nowhere else.
pub(crate) const MARKERS: &[&str] = &["s3cr3t", "leak.test", "999-11"];

/// What an attempt must come to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// 422 naming the policy, before anything runs.
    Refused,
    /// 200, protected columns masked or hidden (the columns listed, in order).
    Runs(&'static [&'static str]),
    /// Either: what matters is that nothing leaks.
    NoLeak,
}

pub(crate) fn leaks(body: &str) -> Option<&'static str> {
    let lower = body.to_ascii_lowercase();
    MARKERS.iter().copied().find(|m| lower.contains(m))
}

pub(crate) struct Fixture {
    pub(crate) console: TestConsole,
    pub(crate) db: String,
    pub(crate) credential: String,
    pub(crate) table: String,
}

impl Fixture {
    /// Runs `sql` in every format and checks `expect`; the JSON answer.
    pub(crate) async fn attempt(&self, sql: &str, expect: Expect) -> Value {
        let mut json_answer = Value::Null;
        for accept in [None, Some("application/x-ndjson"), Some("text/csv")] {
            let (_, answer) = self
                .console
                .query(&alice(), &self.db, &self.credential, sql, None, accept)
                .await;
            let body = match &answer.cut {
                None => answer.text(),
                Some(error) => error.clone(),
            };
            if let Some(marker) = leaks(&body) {
                panic!("{sql} ({accept:?}) leaked {marker}: {body}");
            }
            match expect {
                Expect::Refused => {
                    assert_eq!(answer.status.as_u16(), 422, "{sql}: {body}");
                    assert!(
                        body.contains("data protection"),
                        "{sql}: the refusal says it is data protection's: {body}"
                    );
                }
                Expect::Runs(columns) => {
                    assert_eq!(answer.status.as_u16(), 200, "{sql}: {body}");
                    if accept.is_none() {
                        let result = answer.json();
                        let names: Vec<&str> = result["columns"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|c| c["name"].as_str().unwrap())
                            .collect();
                        assert_eq!(names, columns, "{sql}: {result}");
                    }
                }
                Expect::NoLeak => {
                    assert!(matches!(answer.status.as_u16(), 200 | 422), "{sql}: {body}");
                }
            }
            if accept.is_none() && answer.status.as_u16() == 200 {
                json_answer = answer.json();
            }
        }
        json_answer
    }
}

impl Fixture {
    /// A new service (over redb, see [`redb_run_console`]) and a database of `adapter` on
    /// `127.0.0.1:port` (as `checker`) whose policy `pii` protects `columns` (`[{"column",
    /// "action"}]`), about `table`.
    pub(crate) async fn protected(adapter: &str, port: u16, table: &str, columns: Value) -> Self {
        Self::protected_as(adapter, port, table, columns, "checker").await
    }

    /// [`Fixture::protected`], its credential logging in as `username` (password `checkpw`).
    pub(crate) async fn protected_as(
        adapter: &str,
        port: u16,
        table: &str,
        columns: Value,
        username: &str,
    ) -> Self {
        let console = redb_run_console();
        let (db, credentials) = console
            .database(
                adapter,
                port,
                json!({}),
                json!([{"username": username, "password": PASSWORD}]),
            )
            .await;
        let fixture = Self {
            console,
            db,
            credential: credentials[0].clone(),
            table: table.to_owned(),
        };
        fixture.protect_columns(columns).await;
        fixture
    }

    /// Replaces the database's policies by the one policy `pii`, protecting `columns`
    /// (`[{"column", "action"}]`).
    pub(crate) async fn protect_columns(&self, columns: Value) {
        self.console
            .protect(
                &self.db,
                &json!({"policies": [{"name": "pii", "columns": columns}]}),
            )
            .await;
    }

    /// Rotates the credential to log in as `username` (password `checkpw`): the database's
    /// pools are replaced.
    pub(crate) async fn rotate_credential(&self, username: &str) {
        let body = json!({"credentials": [{"id": self.credential, "username": username,
            "password": PASSWORD}]});
        self.console
            .send(
                http::Method::PATCH,
                &format!("/api/v1/console/databases/{}", self.db),
                None,
                None,
                Some(&body),
            )
            .await
            .expect(200);
    }

    /// A dashboard of one panel per statement, as the fixture's credential (no inputs).
    pub(crate) async fn panels(&self, statements: &[String]) -> Value {
        super::panels_dashboard(
            &self.console,
            "kept",
            &self.credential,
            statements,
            json!([]),
        )
        .await
    }

    /// Runs panel `index` of `dashboard`: an answer that holds no protected value.
    pub(crate) async fn run_unleaked(
        &self,
        dashboard: &Value,
        index: usize,
    ) -> dbconsole_tests::TestResponse {
        let answer = super::run_panel(&self.console, dashboard, index, &json!({})).await;
        assert!(leaks(&answer.text()).is_none(), "{}", answer.text());
        answer
    }

    /// The staleness tests' last two changes between runs, each undone after: a policy that
    /// also hides `{table}.name` (a column the credential may read), then the credential
    /// rotated to `checker` (who may read the protected one). The panel `run(0)` is refused
    /// after each ("can read"); `runs` checks the panels again once it is undone.
    pub(crate) async fn policy_and_rotation_refuse<R, RF, S, SF>(
        &self,
        table: &str,
        username: &str,
        run: R,
        runs: S,
    ) where
        R: Fn(usize) -> RF,
        RF: std::future::Future<Output = dbconsole_tests::TestResponse>,
        S: Fn() -> SF,
        SF: std::future::Future<Output = ()>,
    {
        self.protect_columns(json!([
            {"column": format!("{table}.email"), "action": "mask"},
            {"column": format!("{table}.name"), "action": "hide"},
        ]))
        .await;
        let text = run(0).await.expect(422).text();
        assert!(text.contains("can read"), "after the policy change: {text}");
        self.protect_columns(json!([{"column": format!("{table}.email"), "action": "mask"}]))
            .await;
        runs().await;
        self.rotate_credential("checker").await;
        let text = run(0).await.expect(422).text();
        assert!(text.contains("can read"), "after the rotation: {text}");
        self.rotate_credential(username).await;
        runs().await;
    }

    /// Makes every attempt; how many masked columns their JSON answers held (every value of
    /// each `****` or `null`).
    pub(crate) async fn attempt_all(&self, attempts: &[(String, Expect)]) -> usize {
        let mut masked = 0;
        for (sql, expect) in attempts {
            let result = self.attempt(sql, *expect).await;
            let Some(columns) = result["columns"].as_array() else {
                continue;
            };
            for (i, column) in columns.iter().enumerate() {
                if column["type"] == "masked" {
                    masked += 1;
                    let rows = result["rows"].as_array().expect("rows");
                    assert!(
                        rows.iter().all(|row| row[i] == "****" || row[i].is_null()),
                        "{sql}: {result}"
                    );
                }
            }
        }
        masked
    }
}
