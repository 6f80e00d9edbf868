//! Property 5: no password, certificate or key ever appears in a response body or header, even
//! when a driver's error message repeats them all.

use std::sync::Arc;

use dbconsole_tests::{Api, DATABASES, TestResponse};
use http::Method;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::model::*;
use crate::strategies::*;
use crate::support::*;

/// Calls the service and checks that no answer carries a secret.
struct Leaks {
    api: Api,
    needles: Vec<String>,
}

impl Leaks {
    fn assert_clean(&self, answer: &TestResponse, call: &str) -> Result<(), TestCaseError> {
        for needle in &self.needles {
            prop_assert!(
                !contains(&answer.body, needle.as_bytes()),
                "{} answered a secret in its body: {}",
                call,
                answer.text()
            );
            for (name, value) in &answer.headers {
                prop_assert!(
                    !contains(value.as_bytes(), needle.as_bytes()),
                    "{} answered a secret in header {}",
                    call,
                    name
                );
            }
        }
        Ok(())
    }

    async fn db(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<TestResponse, TestCaseError> {
        let call = format!("{method} {path}");
        let answer = self.api.db(method, path, body).await;
        self.assert_clean(&answer, &call)?;
        Ok(answer)
    }

    async fn raw(&self, method: Method, path: &str, body: &str) -> Result<u16, TestCaseError> {
        let call = format!("{method} {path} with {body:?}");
        let request = raw_request(
            method,
            path,
            Some("application/json"),
            body.as_bytes().to_vec(),
        );
        let answer = self.api.send(request).await;
        self.assert_clean(&answer, &call)?;
        Ok(answer.status.as_u16())
    }

    /// Lists, and checks the connection of every credential of `db`: the checker echoes every
    /// secret it was given, the service must scrub them.
    async fn list_and_check(&self, db: &Value) -> Result<(), TestCaseError> {
        self.db(Method::GET, &format!("{DATABASES}?limit=500"), None)
            .await?;
        self.db(Method::GET, &database_path(str_of(&db["id"])), None)
            .await?;
        for credential in credentials_of(db) {
            let path = check_path(str_of(&db["id"]), str_of(&credential["username"]));
            let answer = self.db(Method::GET, &path, None).await?;
            prop_assert_eq!(answer.status.as_u16(), 200, "check {}", answer.text());
            if db["tunnel_id"].is_null() {
                prop_assert!(
                    answer.text().contains("[REDACTED]"),
                    "the echoing checker was not reached: {}",
                    answer.text()
                );
            }
        }
        Ok(())
    }
}

async fn no_secret_in_any_response(case: SecretCase) -> Checked {
    let leaks = Leaks {
        api: api_checked_by(Arc::new(EchoingChecker)),
        needles: case.needles(),
    };

    let answer = leaks
        .db(Method::POST, DATABASES, Some(&case.create.json()))
        .await?;
    let db = expect_status(answer, 200, "create")?;
    leaks.list_and_check(&db).await?;
    let path = database_path(str_of(&db["id"]));

    let credentials: Vec<Value> = credentials_of(&db)
        .iter()
        .zip(&case.new_passwords)
        .map(|(credential, password)| json!({"id": credential["id"], "password": password}))
        .collect();
    let update = json!({"credentials": credentials, "ssl_ca_cert": case.new_ca.base64});
    let answer = leaks.db(Method::PATCH, &path, Some(&update)).await?;
    let db = expect_status(answer, 200, "update")?;
    leaks.list_and_check(&db).await?;

    for body in case.misplaced() {
        let answer = leaks.db(Method::PATCH, &path, Some(&body)).await?;
        prop_assert_eq!(answer.status.as_u16(), 422, "{}: {}", body, answer.text());
        let mut create = case.create.json();
        if let (Some(create), Some(body)) = (create.as_object_mut(), body.as_object()) {
            create.extend(body.clone());
        }
        let answer = leaks.db(Method::POST, DATABASES, Some(&create)).await?;
        prop_assert_eq!(
            answer.status.as_u16(),
            422,
            "create with {}: {}",
            body,
            answer.text()
        );
    }
    for body in case.malformed() {
        prop_assert_eq!(
            leaks.raw(Method::PATCH, &path, &body).await?,
            400,
            "{}",
            body
        );
        prop_assert_eq!(
            leaks.raw(Method::POST, DATABASES, &body).await?,
            400,
            "{}",
            body
        );
    }

    let setup_path = format!("{DATABASES}/setup");
    let mut setup = Value::Null;
    for password in &case.setup_passwords {
        let body = case.setup_body(password);
        let answer = leaks.db(Method::PUT, &setup_path, Some(&body)).await?;
        setup = expect_status(answer, 200, "setup")?;
        leaks.list_and_check(&setup).await?;
        let mut invalid = body.clone();
        invalid["port"] = json!(password);
        invalid["ssl_key"] = json!(password);
        let answer = leaks.db(Method::PUT, &setup_path, Some(&invalid)).await?;
        prop_assert_eq!(answer.status.as_u16(), 422, "{}", answer.text());
    }

    let answer = leaks.db(Method::DELETE, &path, None).await?;
    expect_status(answer, 200, "delete")?;
    let remove = format!("{DATABASES}/remove/{SETUP_API_ID}");
    let answer = leaks.db(Method::DELETE, &remove, None).await?;
    let removed = expect_status(answer, 200, "remove")?;
    prop_assert_eq!(&removed["id"], &setup["id"]);
    leaks
        .db(Method::GET, &format!("{DATABASES}?limit=500"), None)
        .await?;
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn no_response_ever_carries_a_secret(case in secret_case()) {
        run(no_secret_in_any_response(case))?;
    }
}
