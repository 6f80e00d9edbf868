//! Data protection against ordinary schema features on a real MariaDB (`.ci/db-servers-up.sh`;
//! docs/data-protection.md, "Protection follows the data"): a generated column computed from a
//! protected one, a table partitioned by a protected column (`PARTITION (p)` lists the rows of
//! one value), and a policy naming a view's column. Each was `verified` before; each is now
//! refused with its reason, before anything runs.

mod run_support;

use mysql_async::prelude::Queryable as _;
use run_support::protect::{Expect, Fixture, assert_known_secrets, assert_refused};
use run_support::*;
use serde_json::{Value, json};

const PORT: u16 = 3306;

/// `GRANT SELECT (columns) ON checkdb.table` to `dp_reader` on both of its hosts.
fn grants(what: &str, table: &str) -> Vec<String> {
    ["localhost", "127.0.0.1"]
        .iter()
        .map(|host| format!("GRANT SELECT {what} ON checkdb.{table} TO 'dp_reader'@'{host}'"))
        .collect()
}

async fn protected(t: &str, columns: Value) -> Fixture {
    Fixture::protected_as("mysql", PORT, t, columns, "dp_reader").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_features_never_read_around_the_policies() {
    let mut server = mysql_admin().await;
    let t = format!("dps_{}", std::process::id());
    let tables = [
        format!("{t}_gen"),
        format!("{t}_pt"),
        format!("{t}_ix"),
        format!("{t}_base"),
    ];
    seed(
        &mut server,
        &[
            format!("DROP VIEW IF EXISTS {t}_dv"),
            format!("DROP TABLE IF EXISTS {}", tables.join(", ")),
            format!(
                "CREATE TABLE {t}_gen (id INT PRIMARY KEY, name VARCHAR(32), email VARCHAR(64), \
                 email_norm VARCHAR(64) AS (LOWER(email)) VIRTUAL)"
            ),
            format!(
                "INSERT INTO {t}_gen (id, name, email) VALUES \
                 (1, 'Alice', 's3cr3t.alice@leak.test')"
            ),
            format!(
                "CREATE TABLE {t}_pt (id INT, diagnosis VARCHAR(16)) \
                 PARTITION BY LIST COLUMNS (diagnosis) \
                 (PARTITION p_hiv VALUES IN ('hiv'), PARTITION p_flu VALUES IN ('flu'))"
            ),
            format!("INSERT INTO {t}_pt VALUES (1, 'flu'), (2, 'hiv')"),
            format!("CREATE TABLE {t}_ix (id INT PRIMARY KEY, ssn VARCHAR(16))"),
            format!("INSERT INTO {t}_ix VALUES (1, '999-11-0002'), (2, '999-11-0001')"),
            format!("CREATE TABLE {t}_base (id INT PRIMARY KEY, phone VARCHAR(16))"),
            format!("INSERT INTO {t}_base VALUES (1, '999-11-0001')"),
            format!("CREATE SQL SECURITY INVOKER VIEW {t}_dv AS SELECT id, phone FROM {t}_base"),
        ],
    )
    .await;
    let seeded: Vec<Option<String>> = server
        .query(format!(
            "SELECT email FROM {t}_gen UNION ALL SELECT ssn FROM {t}_ix \
             UNION ALL SELECT phone FROM {t}_base"
        ))
        .await
        .unwrap();
    assert_known_secrets(&seeded.into_iter().flatten().collect::<Vec<_>>());
    let mut granted = Vec::new();
    granted.extend(grants("(id, name, email_norm)", &format!("{t}_gen")));
    granted.extend(grants("(id)", &format!("{t}_pt")));
    granted.extend(grants("(id)", &format!("{t}_ix")));
    granted.extend(grants("", &format!("{t}_base")));
    granted.extend(grants("", &format!("{t}_dv")));
    seed(&mut server, &granted).await;

    // A generated column computed from a protected one, granted: refused, saying so.
    let fixture = protected(
        &format!("{t}_gen"),
        json!([{"column": format!("{t}_gen.email"), "action": "hide"}]),
    )
    .await;
    assert_refused(
        &fixture.status().await,
        "computed from the protected column",
    );
    fixture
        .attempt(&format!("SELECT email_norm FROM {t}_gen"), Expect::Refused)
        .await;
    fixture
        .attempt(&format!("SELECT id, name FROM {t}_gen"), Expect::Refused)
        .await;

    // Partitioned by a protected column: `PARTITION (p_hiv)` lists every such row.
    let fixture = protected(
        &format!("{t}_pt"),
        json!([{"column": format!("{t}_pt.diagnosis"), "action": "hide"}]),
    )
    .await;
    assert_refused(&fixture.status().await, "partitioning");
    fixture
        .attempt(
            &format!("SELECT id FROM {t}_pt PARTITION (p_hiv)"),
            Expect::Refused,
        )
        .await;

    // A policy naming a view's column protects nothing: refused, listed as unmatched.
    let fixture = protected(
        &format!("{t}_dv"),
        json!([{"column": format!("{t}_dv.phone"), "action": "hide"}]),
    )
    .await;
    let refused = fixture.status().await;
    assert_refused(&refused, "a column of the view");
    assert_eq!(
        refused["credentials"][0]["problems"]["unmatched"][0],
        json!(format!(
            "{t}_dv.phone matches no column of a table: it protects nothing"
        )),
        "{refused}"
    );
    fixture
        .attempt(&format!("SELECT id, phone FROM {t}_dv"), Expect::Refused)
        .await;

    // Exemptions: a caller every policy exempts runs as the provisioning credential (here the
    // tables' owner), unprotected; everyone else stays refused.
    fixture_exempt(&t).await;

    // Without the schema features, the same user runs.
    let fixture = protected(
        &format!("{t}_ix"),
        json!([{"column": format!("{t}_ix.ssn"), "action": "hide"}]),
    )
    .await;
    assert_eq!(
        fixture.status().await["credentials"][0]["status"],
        "verified"
    );
    fixture
        .attempt(
            &format!("SELECT id FROM {t}_ix ORDER BY id"),
            Expect::Runs(&["id"]),
        )
        .await;
    seed(
        &mut server,
        &[
            format!("DROP VIEW {t}_dv"),
            format!("DROP TABLE {}", tables.join(", ")),
        ],
    )
    .await;
}

/// A policy exempting carol: her run reads the values, alice's is refused.
async fn fixture_exempt(t: &str) {
    let fixture = protected(
        &format!("{t}_gen"),
        json!([{"column": format!("{t}_gen.email"), "action": "hide"}]),
    )
    .await;
    let document = json!({
        "policies": [{"name": "pii",
                      "columns": [{"column": format!("{t}_gen.email"), "action": "hide"}],
                      "exempt": [{"subject_kind": "user", "subject": "carol@example.com"}]}],
        "provisioning": {"username": "checker", "password": PASSWORD},
    });
    fixture
        .console
        .send(
            http::Method::PUT,
            &format!("/api/v1/console/databases/{}/data-protection", fixture.db),
            None,
            None,
            Some(&document),
        )
        .await
        .expect(200);
    let carol = dbconsole_core::model::Principal::member("carol@example.com");
    let (_, answer) = fixture
        .console
        .query(
            &carol,
            &fixture.db,
            &fixture.credential,
            &format!("SELECT email FROM {t}_gen ORDER BY id"),
            None,
            None,
        )
        .await;
    assert_eq!(
        answer.json()["rows"],
        json!([["s3cr3t.alice@leak.test"]]),
        "the exempt caller reads the value"
    );
    fixture
        .attempt(&format!("SELECT email FROM {t}_gen"), Expect::Refused)
        .await;
}
