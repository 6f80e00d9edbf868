//! Drivers through the PostgreSQL door, each a program run against the real binary and the CI's
//! PostgreSQL (docs/door.md): pgjdbc as a single-file Java program (Debian's
//! `libpostgresql-jdbc-java`, `default-jdk-headless`), psycopg 3 and asyncpg (the contract
//! virtualenv, `target/contract-venv`) and node's `pg` (the console's node_modules). Each prints
//! `N passed, N failed`; a missing runtime fails the test (`bash .ci/tools-up.sh` installs them).

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use support::door::Door;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// What the test gives every client: where the door is, who, and the tables.
struct Setup {
    env: Vec<(String, String)>,
}

/// Runs `program` with `args` and the setup's environment; asserts it printed `N passed, 0
/// failed` and exited 0.
async fn run(setup: &Setup, program: &str, args: &[&str], what: &str) {
    run_checks(setup, program, args, what, 3).await;
}

/// [`run`], with at least `checks` checks passed.
async fn run_checks(setup: &Setup, program: &str, args: &[&str], what: &str, checks: u32) {
    let output = tokio::time::timeout(
        Duration::from_secs(180),
        tokio::process::Command::new(program)
            .args(args)
            .envs(setup.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(root())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{what} hung"))
    .unwrap_or_else(|error| {
        panic!("{what}: cannot run {program} ({error}): install it with bash .ci/tools-up.sh")
    });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && summary.ends_with(" passed, 0 failed"),
        "{what}:\n{stdout}\n{stderr}"
    );
    let passed: u32 = summary.split(' ').next().unwrap().parse().unwrap();
    assert!(passed >= checks, "{what} ran its checks: {stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jdbc_psycopg_asyncpg_and_node_pg_through_the_door() {
    let postgres = support::postgres_admin().await;
    let pid = std::process::id();
    let table = format!("door_clients_{pid}");
    let masked = format!("door_clients_dp_{pid}");
    postgres
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table} CASCADE; DROP TABLE IF EXISTS {masked} CASCADE;
             CREATE TABLE {table} (id int PRIMARY KEY, label text);
             INSERT INTO {table} SELECT g, 'row ' || g FROM generate_series(1, 200) g;
             CREATE TABLE {masked} (id int PRIMARY KEY, email text, ssn text);
             INSERT INTO {masked} VALUES (1, 's3cr3t@leak.test', '999-00-0002'), (2, NULL, NULL);
             GRANT SELECT (id) ON {masked} TO dp_reader;
             GRANT SELECT ON {masked} TO dp_owner;
             SET ROLE dp_owner;
             CREATE VIEW dp_reader_mask_public.{masked} AS SELECT id,
               CASE WHEN email IS NULL THEN NULL ELSE '****'::text END AS email FROM public.{masked};
             RESET ROLE;
             GRANT SELECT ON dp_reader_mask_public.{masked} TO dp_reader;"
        ))
        .await
        .unwrap();
    let door = Door::start(&["--max-rows", "50"]).await;
    let plain = door.database("plain", json!({})).await;
    let protected = door
        .database(
            "protected",
            json!({"credentials": [{"username": "dp_reader", "password": "checkpw"}]}),
        )
        .await;
    door.admin(
        "PUT",
        &format!("/api/v1/console/databases/{protected}/data-protection"),
        Some(json!({"policies": [{"name": "pii", "columns": [
            {"column": format!("{masked}.email"), "action": "mask"},
            {"column": format!("{masked}.ssn"), "action": "hide"},
        ]}]})),
    )
    .await;
    let ann = door.key("ann@example.com").await;
    let (host, port) = door.door.rsplit_once(':').unwrap();
    let env = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<Vec<_>>()
    };
    let setup = Setup {
        env: env(&[
            ("DOOR_HOST", host),
            ("DOOR_PORT", port),
            ("DOOR_USER", "ann@example.com"),
            ("DOOR_PASSWORD", &ann),
            ("DOOR_DB", &plain),
            ("DOOR_TABLE", &table),
            ("DOOR_CAP", "50"),
            ("DOOR_PROTECTED_DB", &protected),
            ("DOOR_PROTECTED_TABLE", &masked),
            (
                "DOOR_URL",
                &format!("jdbc:postgresql://{host}:{port}/{plain}?sslmode=require"),
            ),
            ("CONSOLE_DIR", root().join("console").to_str().unwrap()),
        ]),
    };
    let jar = "/usr/share/java/postgresql.jar";
    assert!(
        Path::new(jar).exists(),
        "pgjdbc is missing at {jar}: apt-get install libpostgresql-jdbc-java (bash .ci/tools-up.sh)"
    );
    run(
        &setup,
        "java",
        &["-cp", jar, "server/tests/door_clients/DoorJdbc.java"],
        "pgjdbc",
    )
    .await;
    let python = root().join("target/contract-venv/bin/python");
    let python = python.to_str().unwrap();
    run(
        &setup,
        python,
        &["server/tests/door_clients/door_psycopg.py"],
        "psycopg 3",
    )
    .await;
    run(
        &setup,
        python,
        &["server/tests/door_clients/door_asyncpg.py"],
        "asyncpg",
    )
    .await;
    run(
        &setup,
        "node",
        &["server/tests/door_clients/door_pg.mjs"],
        "node's pg",
    )
    .await;
    postgres
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table} CASCADE; DROP TABLE IF EXISTS {masked} CASCADE"
        ))
        .await
        .unwrap();
    door.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_sent_to_another_node_ends_the_statement() {
    // Two nodes on one PostgreSQL storage (a fresh schema), each with its door.
    let schema = dbconsole_storage_postgres::testing::fresh_schema();
    let url = dbconsole_storage_postgres::testing::test_url();
    let key = "door-nodes-secret-key-0123456789abcdef0123456789abcdef";
    let secret = base64_key(key);
    let storage = [
        ("DBCONSOLE_STORAGE", "postgres"),
        ("DBCONSOLE_DATABASE_URL", url.as_str()),
        ("DBCONSOLE_DATABASE_SCHEMA", schema.as_str()),
        ("DBCONSOLE_SECRET_KEY", secret.as_str()),
    ];
    let a = Door::start_on(&storage, &[]).await;
    let b = Door::start_on(&storage, &[]).await;
    let db = a.database("across", json!({})).await;
    let ann = a.key("ann@example.com").await;
    let (host, port) = a.door.rsplit_once(':').unwrap();
    let other = b.door.rsplit_once(':').unwrap().1;
    let pairs = [
        ("DOOR_HOST", host),
        ("DOOR_PORT", port),
        ("DOOR_OTHER_PORT", other),
        ("DOOR_USER", "ann@example.com"),
        ("DOOR_PASSWORD", ann.as_str()),
        ("DOOR_DB", db.as_str()),
    ];
    let mut env: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    env.push((
        "CONSOLE_DIR".to_owned(),
        root().join("console").to_str().unwrap().to_owned(),
    ));
    run_checks(
        &Setup { env },
        "node",
        &["server/tests/door_clients/door_pg_cancel_across.mjs"],
        "a cancel across nodes",
        1,
    )
    .await;
    a.server.stop().await;
    b.server.stop().await;
}

/// A secret key as `DBCONSOLE_SECRET_KEY` takes it: 32 bytes in base64.
fn base64_key(seed: &str) -> String {
    use base64::Engine as _;
    let bytes: Vec<u8> = seed.bytes().cycle().take(32).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
