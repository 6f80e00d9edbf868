//! The attempts of the data protection tests (`protect_*.rs`): a statement run in every format,
//! its answer checked for protected values and against what it must come to.

use dbconsole_tests::TestConsole;
use serde_json::{Value, json};

use super::{PASSWORD, alice, redb_run_console};

/// Every protected value the data protection tests seed (the masked `email` and hidden `ssn`
/// of `protect_postgres.rs` and `protect_mysql.rs`): what [`leak_in`] looks for, in every
/// encoding the attempts use. Each test checks, as a superuser, that its fixture holds no other.
pub(crate) const SECRETS: &[&str] = &[
    "s3cr3t.alice@leak.test",
    "s3cr3t.bob@leak.test",
    "s3cr3t.part@leak.test",
    "999-11-0001",
    "999-11-0002",
];

/// What the fixtures show unprotected (their `name` column) and a part of a secret can look
/// like: taken out of an answer before it is searched.
pub(crate) const PUBLIC: &[&str] = &["alice", "bob", "carol"];

/// What an attempt must come to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// 422 naming the policy, before anything runs.
    Refused,
    /// 200, protected columns masked or hidden (the columns listed, in order).
    Runs(&'static [&'static str]),
    /// Either: what matters is that nothing leaks.
    NoLeak,
    /// 422 saying this (the service's refusal or the database's), before anything runs or by
    /// the database.
    Denied(&'static str),
}

/// The shortest part of a secret searched for when it holds a digit or `@` (`right(ssn, 4)`,
/// `s3cr`), and when it holds letters and punctuation only (`leak.t`): a longer part holds one
/// such part, so searching these is searching every longer one too.
const PART: usize = 4;
const WORDS: usize = 6;
/// The shortest run of character codes searched for (`ascii(substr(email, k, 1))` row by
/// row, or a list of them in one value). One code alone is a number like any other.
const CODES: usize = 3;

/// How a secret can come back: the needle (lower case, searched in the lower-cased answer) and
/// what it is.
struct Needles {
    text: Vec<(String, String)>,
    codes: Vec<(Vec<u64>, String)>,
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .encode(bytes)
        .trim_end_matches('=')
        .to_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Needles {
    fn of(secrets: &[&str]) -> Self {
        let mut needles = Self {
            text: Vec::new(),
            codes: Vec::new(),
        };
        for secret in secrets {
            let reversed: String = secret.chars().rev().collect();
            // The value, reversed, in upper case (hex and base64 of `upper(email)` differ).
            let forms = [
                (secret.to_string(), ""),
                (secret.to_ascii_uppercase(), " in upper case"),
                (reversed.clone(), " reversed"),
                (reversed.to_ascii_uppercase(), " reversed in upper case"),
            ];
            for (index, (form, how)) in forms.iter().enumerate() {
                let bytes = form.as_bytes();
                let reversed = index >= 2;
                for len in [PART, 5, WORDS] {
                    for part in bytes.windows(len) {
                        let text = String::from_utf8_lossy(part).to_ascii_lowercase();
                        let what = |encoding: &str| {
                            format!("{encoding}{text:?}, a part of {secret:?}{how}")
                        };
                        let distinct = part.iter().any(|b| b.is_ascii_digit() || *b == b'@');
                        // Digits alone read backwards are any number (`1000`, SQLSTATE
                        // `42000`); forwards they are the end of an ssn (`right(ssn, 4)`).
                        let number = part.iter().all(u8::is_ascii_digit);
                        if len == WORDS || (len == PART && distinct && !(number && reversed)) {
                            needles.text.push((text.clone(), what("")));
                        }
                        if len == PART {
                            // hex of any longer part starts with the hex of its first 4.
                            needles.text.push((hex(part), what("the hex of ")));
                        }
                        // base64 of a part of 6 or more starts with the base64 of its first
                        // 6; parts of 4 and 5 are searched as themselves.
                        needles
                            .text
                            .push((base64(part).to_ascii_lowercase(), what("the base64 of ")));
                    }
                }
                for run in bytes.windows(CODES) {
                    needles.codes.push((
                        run.iter().map(|b| u64::from(*b)).collect(),
                        format!(
                            "the character codes of {:?}, a part of {secret:?}{how}",
                            String::from_utf8_lossy(run)
                        ),
                    ));
                }
            }
        }
        needles
    }
}

/// The first protected value of [`SECRETS`] found in `body`, in any of the encodings the
/// attempts can produce: the value or a part of it (4 characters with a digit or `@`, 6
/// otherwise: `right(ssn, 4)`, `left(email, 6)`) as it is, in any case, reversed, in hex, in
/// base64, or as the run of its character codes (3 or more, in any separation: one per row or
/// a list in one value). `public` (with [`PUBLIC`]) is what the answer may show that looks
/// like a part of one (a table's name); the answer's `duration_ms` is not searched.
pub(crate) fn leak_in(body: &str, public: &[&str]) -> Option<String> {
    leak_of(SECRETS, body, public)
}

/// Asserts that `seeded`, the protected values a fixture holds (read as a superuser), are all
/// [`SECRETS`]: what the leak check looks for.
#[track_caller]
pub(crate) fn assert_known_secrets(seeded: &[String]) {
    assert!(!seeded.is_empty(), "the fixture holds protected values");
    for value in seeded {
        assert!(
            SECRETS.contains(&value.as_str()),
            "{value:?} is protected but not one of the SECRETS the leak check looks for"
        );
    }
}

fn leak_of(secrets: &[&str], body: &str, public: &[&str]) -> Option<String> {
    let mut lower = body.to_ascii_lowercase();
    for shown in PUBLIC.iter().chain(public) {
        lower = lower.replace(&shown.to_ascii_lowercase(), " ");
    }
    // How long the run took is the one number of an answer that is not the database's.
    while let Some(at) = lower.find("\"duration_ms\":") {
        let end = lower[at + 14..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(lower.len(), |n| at + 14 + n);
        lower.replace_range(at..end, " ");
    }
    let needles = Needles::of(secrets);
    if let Some((_, what)) = needles
        .text
        .iter()
        .find(|(n, _)| lower.contains(n.as_str()))
    {
        return Some(what.clone());
    }
    let numbers: Vec<u64> = lower
        .split(|c: char| !c.is_ascii_digit())
        .filter(|n| !n.is_empty())
        .map(|n| n.parse().unwrap_or(u64::MAX))
        .collect();
    needles
        .codes
        .iter()
        .find(|(run, _)| numbers.windows(run.len()).any(|w| w == run.as_slice()))
        .map(|(_, what)| what.clone())
}

pub(crate) struct Fixture {
    pub(crate) console: TestConsole,
    pub(crate) db: String,
    pub(crate) credential: String,
    pub(crate) table: String,
}

/// Asserts that `status` (a data protection status) refuses its one credential, saying `says`.
#[track_caller]
pub(crate) fn assert_refused(status: &Value, says: &str) {
    let credential = &status["credentials"][0];
    assert_eq!(credential["status"], "refused", "{status}");
    assert!(
        credential["problems"].to_string().contains(says),
        "the status says {says:?}: {status}"
    );
}

impl Fixture {
    /// The data protection status of the fixture's database
    /// (`GET …/data-protection/status`).
    pub(crate) async fn status(&self) -> Value {
        self.console
            .send(
                http::Method::GET,
                &format!(
                    "/api/v1/console/databases/{}/data-protection/status",
                    self.db
                ),
                None,
                None,
                None,
            )
            .await
            .expect(200)
            .json()
    }

    /// The protected value `body` shows, if any ([`leak_in`]; the fixture's table names are
    /// what it may show).
    pub(crate) fn leaks(&self, body: &str) -> Option<String> {
        leak_in(body, &[&self.table])
    }

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
            if let Some(leak) = self.leaks(&body) {
                panic!("{sql} ({accept:?}) leaked {leak}: {body}");
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
                Expect::Denied(says) => {
                    assert_eq!(answer.status.as_u16(), 422, "{sql}: {body}");
                    assert!(
                        body.contains(says),
                        "{sql}: the refusal says {says:?}: {body}"
                    );
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
        let text = answer.text();
        assert_eq!(self.leaks(&text), None, "{text}");
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

/// The leak check itself: it finds a protected value in every encoding the attempts can
/// produce, in every format of an answer, and finds nothing in an answer that holds none.
#[test]
fn the_leak_check_finds_a_protected_value_in_every_encoding() {
    let json = |value: serde_json::Value| {
        json!({"columns": [{"name": "v", "type": "text"}], "rows": [[value]], "row_count": 1,
               "truncated": false, "duration_ms": 3})
        .to_string()
    };
    let codes = |text: &str| text.bytes().map(u32::from).collect::<Vec<_>>();
    let email = "s3cr3t.alice@leak.test";
    let ssn = "999-11-0001";
    let reversed = |text: &str| text.chars().rev().collect::<String>();
    let hex_upper = |text: &str| hex(text.as_bytes()).to_ascii_uppercase();
    let full_base64 = |text: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(text)
    };
    let leaked: Vec<(&str, String)> = vec![
        ("as it is", json(json!(email))),
        ("in upper case", json(json!(email.to_ascii_uppercase()))),
        ("the hidden value", json(json!(ssn))),
        ("in hex", json(json!(hex(email.as_bytes())))),
        ("in upper-case hex", json(json!(hex_upper(ssn)))),
        (
            "as \\x bytea",
            json(json!(format!("\\x{}", hex(ssn.as_bytes())))),
        ),
        (
            "hex of upper()",
            json(json!(hex(b"S3CR3T.ALICE@LEAK.TEST"))),
        ),
        ("in base64", json(json!(full_base64(email)))),
        (
            "in base64 of upper()",
            json(json!(full_base64("S3CR3T.ALICE@LEAK.TEST"))),
        ),
        ("reversed", json(json!(reversed(email)))),
        ("reversed ssn", json(json!(reversed(ssn)))),
        ("right(ssn, 4)", json(json!("0001"))),
        ("right(ssn, 4) as a number", json(json!(999_110_001))),
        ("left(email, 6)", json(json!("s3cr3t"))),
        ("substr(email, 8, 6) of the domain", json(json!("@leak."))),
        ("the domain alone", json(json!("leak.test"))),
        ("hex of right(ssn, 4)", json(json!(hex(b"0001")))),
        ("base64 of right(ssn, 4)", json(json!(full_base64("0001")))),
        ("base64 of a part", json(json!(full_base64("alice@leak")))),
        (
            "base64 of a reversed part",
            json(json!(full_base64("tset.kael"))),
        ),
        ("ascii codes in one value", json(json!(codes(email)))),
        (
            "ascii codes in a string",
            json(json!(format!("{:?}", codes("3cr3t")))),
        ),
        ("ascii codes of the ssn", json(json!(codes(ssn)))),
        (
            "ascii codes one per row",
            json!({"columns": [{"name": "n", "type": "int4"}],
                   "rows": codes("s3cr3t").iter().map(|c| json!([c])).collect::<Vec<_>>(),
                   "row_count": 6, "truncated": false, "duration_ms": 1})
            .to_string(),
        ),
        (
            "in CSV",
            format!("id,v\n1,{}\n2,x\n", hex(b"tset.kael@ecila")),
        ),
        (
            "in NDJSON",
            format!(
                "{{\"columns\":[{{\"name\":\"v\"}}]}}\n[\"{}\"]\n{{\"row_count\":1}}\n",
                reversed("999-11-0002")
            ),
        ),
        (
            "in an error",
            "ERROR: invalid input syntax for type integer: \"s3cr3t.bob@leak.test\"".to_owned(),
        ),
    ];
    for (how, body) in &leaked {
        let found = leak_in(body, &["dp_users_10001"]);
        assert!(found.is_some(), "{how}: no leak found in {body}");
    }
    // What the tests' answers hold when nothing leaks: masks, the unprotected names, ids and
    // counts, the mask's character code, a table whose name holds digits of a secret, and a
    // run's duration.
    let clean = [
        json!({"columns": [{"name": "id"}, {"name": "email"}, {"name": "name"}],
               "rows": [[1, "****", "Alice"], [2, "****", "Bob"], [3, null, "Carol"]],
               "row_count": 3, "truncated": false, "duration_ms": 115_051_099})
        .to_string(),
        json(json!([42, 42, 0])),
        json(json!("alice@example.com")),
        "{\"errors\":{\"detail\":\"permission denied for table dp_users_10001 (data protection)\"}}"
            .to_owned(),
        "id,name\n1,Alice\n2,Bob\n3,Carol\n".to_owned(),
        "{\"errors\":{\"query\":[\"ERROR 1370 (42000): execute command denied\"]}}".to_owned(),
        json(json!([1000, 10_000])),
        "{\"row_count\":3,\"truncated\":false,\"duration_ms\":999}\n".to_owned(),
    ];
    for body in clean {
        assert_eq!(leak_in(&body, &["dp_users_10001"]), None, "{body}");
    }
}
