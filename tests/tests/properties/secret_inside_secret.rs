//! Property 5 (nested): a secret that contains another (a password cut out of a certificate)
//! is scrubbed whole, and so is the one inside.

use std::sync::Arc;

use http::Method;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::json;

use crate::strategies::*;
use crate::support::*;

/// A password cut out of the CA certificate's body, so that one secret contains another.
fn password_inside(pem: &Pem, start: Index, len: usize) -> String {
    let start = start.index(pem.body.len() - len);
    pem.body[start..start + len].to_owned()
}

/// The checker echoes a certificate that contains the password: both must be scrubbed.
async fn nested_secrets_are_scrubbed(ca: Pem, password: String) -> Checked {
    let api = api_checked_by(Arc::new(EchoingChecker));
    let body = json!({
        "name": "n", "adapter": "postgres", "hostname": "h", "database": "d",
        "ssl_ca_cert": ca.base64,
        "credentials": [{"username": "u", "password": password}],
    });
    let db = api.create_database(&body).await;
    let path = check_path(str_of(&db["id"]), "u");
    let answer = api.db(Method::GET, &path, None).await;
    prop_assert_eq!(answer.status.as_u16(), 200);
    // No piece of the certificate, however it was cut up, and no password outside the
    // "[REDACTED]" markers (which may contain it: "A", "ED"…).
    let text = answer.text();
    let piece = ca
        .body
        .as_bytes()
        .windows(12)
        .find(|w| contains(text.as_bytes(), w));
    prop_assert!(piece.is_none(), "the CA certificate leaked: {}", text);
    let outside_markers = text.replace("[REDACTED]", "\0");
    prop_assert!(
        !outside_markers.contains(&password),
        "the password leaked: {}",
        text
    );
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn a_secret_inside_another_is_scrubbed_too(
        ca in pem("CERTIFICATE"),
        start in any::<Index>(),
        len in 1usize..8,
    ) {
        let password = password_inside(&ca, start, len);
        run(nested_secrets_are_scrubbed(ca, password))?;
    }
}
