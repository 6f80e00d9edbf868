//! Data protection on a hot standby (`.ci/db-servers-up.sh`: a streaming replica of the test
//! PostgreSQL on 127.0.0.1:5433; docs/data-protection.md, "Drift"): the role verifies there
//! without writing anything, so a masked column answers masked through its masking view; and
//! since a standby's snapshot leaves out what is in progress on the primary, no snapshot is
//! trusted: a `GRANT` committed on the primary and replayed refuses the next run of a panel
//! whose session verified before, and its `REVOKE` lets it run again.

mod run_support;

use std::time::Duration;

use dbconsole_tests::eventually;
use run_support::protect::{Fixture, assert_known_secrets};
use run_support::*;
use serde_json::json;

const STANDBY: u16 = 5433;
const READER: &str = "dp_reader";
const MASKS: &str = "dp_reader_mask_public";

async fn standby_admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={STANDBY} user=checker password={PASSWORD} dbname=checkdb"),
        tokio_postgres::NoTls,
    )
    .await
    .unwrap_or_else(|error| {
        panic!(
            "the PostgreSQL standby is not running on 127.0.0.1:{STANDBY} ({error}): start the \
             test database servers with `sudo bash .ci/db-servers-up.sh`"
        )
    });
    tokio::spawn(connection);
    client
}

/// Waits until the standby replayed everything the primary wrote so far.
async fn replayed(primary: &tokio_postgres::Client, standby: &tokio_postgres::Client) {
    let lsn: String = primary
        .query_one("SELECT pg_current_wal_lsn()::text", &[])
        .await
        .unwrap()
        .get(0);
    eventually(Duration::from_secs(30), "the standby replays", || async {
        standby
            .query_one(
                "SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn",
                &[&lsn],
            )
            .await
            .unwrap()
            .get::<_, bool>(0)
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_verifies_without_writing_and_trusts_no_snapshot() {
    let primary = postgres_admin().await;
    let standby = standby_admin().await;
    let in_recovery: bool = standby
        .query_one("SELECT pg_is_in_recovery()", &[])
        .await
        .unwrap()
        .get(0);
    assert!(in_recovery, "port {STANDBY} is a hot standby");
    let t = format!("dp_standby_{}", std::process::id());
    primary
        .batch_execute(&format!(
            "DROP VIEW IF EXISTS {MASKS}.{t}; DROP TABLE IF EXISTS {t} CASCADE;
             CREATE TABLE {t} (id int PRIMARY KEY, email text, name text);
             INSERT INTO {t} VALUES (1, 's3cr3t.alice@leak.test', 'Alice'), (2, NULL, 'Bob');
             GRANT SELECT (id, name) ON {t} TO {READER};
             GRANT SELECT ON {t} TO dp_owner;
             SET ROLE dp_owner;
             CREATE VIEW {MASKS}.{t} AS SELECT id,
               CASE WHEN email IS NULL THEN NULL ELSE '****'::text END AS email, name FROM public.{t};
             RESET ROLE;
             GRANT SELECT ON {MASKS}.{t} TO {READER};"
        ))
        .await
        .unwrap();
    let seeded = primary
        .query(&format!("SELECT email FROM {t}"), &[])
        .await
        .unwrap();
    assert_known_secrets(
        &seeded
            .iter()
            .filter_map(|row| row.get::<_, Option<String>>(0))
            .collect::<Vec<_>>(),
    );
    replayed(&primary, &standby).await;
    let fixture = Fixture::protected_as(
        "postgres",
        STANDBY,
        &t,
        json!([{"column": format!("{t}.email"), "action": "mask"}]),
        READER,
    )
    .await;
    let status = fixture.status().await;
    assert_eq!(status["credentials"][0]["status"], "verified", "{status}");
    let dashboard = fixture
        .panels(&[format!("SELECT id, email, name FROM {t} ORDER BY id")])
        .await;
    let masked = json!([[1, "****", "Alice"], [2, null, "Bob"]]);
    // Twice: the second run checks what the first verified.
    for _ in 0..2 {
        assert_eq!(
            fixture.run_unleaked(&dashboard, 0).await.expect(200).json()["rows"],
            masked
        );
    }
    // A grant committed on the primary, replayed: the kept verification is not trusted.
    primary
        .batch_execute(&format!("GRANT SELECT (email) ON {t} TO {READER}"))
        .await
        .unwrap();
    replayed(&primary, &standby).await;
    let refused = fixture.run_unleaked(&dashboard, 0).await.expect(422).text();
    assert!(refused.contains("can read"), "{refused}");
    primary
        .batch_execute(&format!("REVOKE SELECT (email) ON {t} FROM {READER}"))
        .await
        .unwrap();
    replayed(&primary, &standby).await;
    assert_eq!(
        fixture.run_unleaked(&dashboard, 0).await.expect(200).json()["rows"],
        masked
    );
    // A console query on the standby: read-only, rolled back, masked.
    let (_, answer) = fixture
        .console
        .query(
            &alice(),
            &fixture.db,
            &fixture.credential,
            &format!("SELECT email FROM {t} ORDER BY id"),
            None,
            None,
        )
        .await;
    assert_eq!(answer.json()["rows"], json!([["****"], [null]]));
    primary
        .batch_execute(&format!("DROP VIEW {MASKS}.{t}; DROP TABLE {t} CASCADE"))
        .await
        .unwrap();
}
