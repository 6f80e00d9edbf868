//! Provisioning on MariaDB (docs/data-protection.md, "Provisioning"): as the provisioning
//! login, from the policies and the catalog of the credential's database, the statements that
//! give each protected login what the policies allow, and no more than the provisioning login
//! itself can grant:
//!
//! - on each table (or view with the invoker's rights) that holds no protected column,
//!   `SELECT`; on a table with protected columns (named by a policy, or a generated column
//!   computed from one), `SELECT` on its other columns only; nothing on a view that runs with
//!   its definer's rights;
//! - everything else the login holds on the database taken back (a database-level grant, a
//!   write, a table-level `SELECT` over protected columns);
//! - its shadow database (`<login>_mask_<database>`, [`super::masking`]) with a view per table,
//!   `SELECT, SHOW VIEW` on each; views no longer needed are dropped.
//!
//! The login's accounts (`'login'@'host'`) are read from `mysql.user` (its `User` and `Host`
//! columns), its grants from `mysql.db`, `mysql.tables_priv` and `mysql.columns_priv`.
//! [`apply`] runs the plan statement by statement (MariaDB can't take grants back in a
//! transaction), serialized across nodes by a named lock (`GET_LOCK`), and computes it again
//! after: what is left is answered as an error.

use std::collections::{BTreeMap, BTreeSet};

use mysql_async::Conn;
use mysql_async::prelude::Queryable as _;

use super::masking::{self, literal, quote, shadow, view_sql};
use crate::run::protect::plan::{CatalogColumn, Plan, Provision, ProvisionError, RolePlan, Step};
use crate::run::protect::{ProtectedColumn, Protection};

/// The privileges of a `mysql.db` row, as its columns name them and as a grant does.
const DB_PRIVILEGES: &[(&str, &str)] = &[
    ("Select_priv", "SELECT"),
    ("Insert_priv", "INSERT"),
    ("Update_priv", "UPDATE"),
    ("Delete_priv", "DELETE"),
    ("Create_priv", "CREATE"),
    ("Drop_priv", "DROP"),
    ("References_priv", "REFERENCES"),
    ("Index_priv", "INDEX"),
    ("Alter_priv", "ALTER"),
    ("Create_tmp_table_priv", "CREATE TEMPORARY TABLES"),
    ("Lock_tables_priv", "LOCK TABLES"),
    ("Create_view_priv", "CREATE VIEW"),
    ("Show_view_priv", "SHOW VIEW"),
    ("Create_routine_priv", "CREATE ROUTINE"),
    ("Alter_routine_priv", "ALTER ROUTINE"),
    ("Execute_priv", "EXECUTE"),
    ("Event_priv", "EVENT"),
    ("Trigger_priv", "TRIGGER"),
    ("Delete_history_priv", "DELETE HISTORY"),
    ("Grant_priv", "GRANT OPTION"),
];

/// The database's error as one line.
fn message(error: &mysql_async::Error) -> String {
    match error {
        mysql_async::Error::Server(server) => format!("ERROR {}: {}", server.code, server.message),
        other => other.to_string(),
    }
}

/// A relation of the database: its name, whether it is a view running with its definer's
/// rights, its columns in order, and what partitions it.
struct Relation {
    name: String,
    definer_view: bool,
    columns: Vec<String>,
    partitioned_by: Vec<String>,
}

/// One account's grants on the database and on its shadow database.
#[derive(Default)]
struct Grants {
    /// Database-level privileges, by database.
    database: BTreeMap<String, BTreeSet<String>>,
    /// Table-level privileges, by database and table (lower case).
    tables: BTreeMap<(String, String), BTreeSet<String>>,
    /// Column privileges on the database's tables, by table (lower case) and column.
    columns: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

/// `SET` text (`Select,Show view`) as grant names (`SELECT`, `SHOW VIEW`).
fn privileges(set: &str) -> BTreeSet<String> {
    set.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p {
            "Grant" => "GRANT OPTION".to_owned(),
            other => other.to_uppercase(),
        })
        .collect()
}

async fn grants(conn: &mut Conn, user: &str, host: &str, dbs: [&str; 2]) -> Result<Grants, String> {
    let mut grants = Grants::default();
    let columns: Vec<&str> = DB_PRIVILEGES.iter().map(|(c, _)| *c).collect();
    let rows: Vec<mysql_async::Row> = conn
        .exec(
            format!(
                "SELECT Db, {} FROM mysql.db WHERE User = ? AND Host = ? AND Db IN (?, ?)",
                columns.join(", ")
            ),
            (user, host, dbs[0], dbs[1]),
        )
        .await
        .map_err(|e| read_grants(&e))?;
    for row in rows {
        let db: String = row.get(0).unwrap_or_default();
        let held: BTreeSet<String> = DB_PRIVILEGES
            .iter()
            .enumerate()
            .filter(|(i, _)| row.get::<String, _>(i + 1).as_deref() == Some("Y"))
            .map(|(_, (_, name))| (*name).to_owned())
            .collect();
        grants.database.insert(db, held);
    }
    let rows: Vec<(String, String, String)> = conn
        .exec(
            "SELECT Db, Table_name, Table_priv FROM mysql.tables_priv \
             WHERE User = ? AND Host = ? AND Db IN (?, ?)",
            (user, host, dbs[0], dbs[1]),
        )
        .await
        .map_err(|e| read_grants(&e))?;
    for (db, table, set) in rows {
        grants
            .tables
            .insert((db, table.to_lowercase()), privileges(&set));
    }
    let rows: Vec<(String, String, String)> = conn
        .exec(
            "SELECT Table_name, Column_name, Column_priv FROM mysql.columns_priv \
             WHERE User = ? AND Host = ? AND Db = ?",
            (user, host, dbs[0]),
        )
        .await
        .map_err(|e| read_grants(&e))?;
    for (table, column, set) in rows {
        grants
            .columns
            .entry(table.to_lowercase())
            .or_default()
            .insert(column, privileges(&set));
    }
    Ok(grants)
}

fn read_grants(error: &mysql_async::Error) -> String {
    format!(
        "the provisioning login can't read the logins' grants ({}): GRANT SELECT ON mysql.db, \
         SELECT ON mysql.tables_priv, SELECT ON mysql.columns_priv and SELECT (User, Host) ON \
         mysql.user to it",
        message(error)
    )
}

/// The database's relations as the provisioning login sees them, and the protection with the
/// generated columns computed from protected ones.
async fn catalog_of(
    conn: &mut Conn,
    protection: &Protection,
    home: &str,
) -> Result<(Vec<Relation>, Protection), String> {
    let tables: Vec<(String, String, Option<String>)> = conn
        .exec(
            "SELECT t.TABLE_NAME, t.TABLE_TYPE, v.SECURITY_TYPE FROM information_schema.TABLES t \
             LEFT JOIN information_schema.VIEWS v ON v.TABLE_SCHEMA = t.TABLE_SCHEMA \
               AND v.TABLE_NAME = t.TABLE_NAME \
             WHERE t.TABLE_SCHEMA = ? ORDER BY t.TABLE_NAME",
            (home,),
        )
        .await
        .map_err(|e| message(&e))?;
    let columns: Vec<(String, String, Option<String>)> = conn
        .exec(
            "SELECT TABLE_NAME, COLUMN_NAME, GENERATION_EXPRESSION FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION",
            (home,),
        )
        .await
        .map_err(|e| message(&e))?;
    let partitions: Vec<(String, Option<String>, Option<String>)> = conn
        .exec(
            "SELECT DISTINCT TABLE_NAME, PARTITION_EXPRESSION, SUBPARTITION_EXPRESSION \
             FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = ? \
             AND PARTITION_NAME IS NOT NULL",
            (home,),
        )
        .await
        .map_err(|e| message(&e))?;
    let generated: Vec<(String, String, String)> = columns
        .iter()
        .filter_map(|(t, c, e)| e.clone().map(|e| (t.clone(), c.clone(), e)))
        .collect();
    let mut effective = protection.clone();
    effective
        .columns
        .extend(masking::derived(protection, home, &generated));
    let relations = tables
        .into_iter()
        .filter(|(_, kind, _)| kind == "BASE TABLE" || kind == "VIEW" || kind == "SYSTEM VERSIONED")
        .map(|(name, _, security)| Relation {
            definer_view: security.as_deref() == Some("DEFINER"),
            columns: columns
                .iter()
                .filter(|(t, _, _)| *t == name)
                .map(|(_, c, _)| c.clone())
                .collect(),
            partitioned_by: partitions
                .iter()
                .filter(|(t, _, _)| *t == name)
                .flat_map(|(_, e, s)| [e.clone(), s.clone()])
                .flatten()
                .collect(),
            name,
        })
        .collect();
    Ok((relations, effective))
}

/// The policy columns that match no column of the database's base tables (a view's, a typo, a
/// dropped column), among those that name no other schema.
fn unmatched(protection: &Protection, home: &str, relations: &[Relation]) -> Vec<String> {
    let matches = |p: &ProtectedColumn| {
        relations
            .iter()
            .any(|r| !r.definer_view && r.columns.iter().any(|c| p.is(home, &r.name, c)))
    };
    let mut out: Vec<String> = protection
        .columns
        .iter()
        .filter(|p| {
            p.schema
                .as_deref()
                .is_none_or(|s| s.eq_ignore_ascii_case(home))
        })
        .filter(|p| !matches(p))
        .map(|p| p.named.clone())
        .collect();
    out.dedup();
    out
}

/// What a plan collects for one login: its steps, and the notes.
struct Planner<'a> {
    steps: Vec<Step>,
    notes: &'a mut Vec<String>,
}

impl Planner<'_> {
    fn step(&mut self, sql: String, reason: String) {
        self.steps.push(Step { sql, reason });
    }
}

/// The plan for `roles` under `protection`, read as the provisioning login `conn` is.
async fn plan(
    conn: &mut Conn,
    protection: &Protection,
    roles: &[String],
    home: &str,
) -> Result<Plan, String> {
    let (relations, effective) = catalog_of(conn, protection, home).await?;
    let mut plan = Plan {
        unmatched: unmatched(protection, home, &relations),
        ..Plan::default()
    };
    let mut notes = Vec::new();
    for relation in &relations {
        if let Some(key) = relation
            .partitioned_by
            .iter()
            .find_map(|k| super::verify::mentioned(&effective, home, &relation.name, k))
        {
            notes.push(format!(
                "`{home}`.`{}` is partitioned by the protected column {}: its partitions tell \
                 which rows hold which values, so the verification refuses runs until it is \
                 partitioned by another column (ALTER TABLE … REMOVE PARTITIONING)",
                relation.name, key.named
            ));
        }
    }
    for role in roles {
        let mut planner = Planner {
            steps: Vec::new(),
            notes: &mut notes,
        };
        role_steps(conn, &mut planner, role, home, &relations, &effective).await?;
        plan.roles.push(RolePlan {
            role: role.clone(),
            steps: planner.steps,
        });
    }
    plan.notes = notes;
    Ok(plan)
}

/// The steps of one login.
async fn role_steps(
    conn: &mut Conn,
    planner: &mut Planner<'_>,
    role: &str,
    home: &str,
    relations: &[Relation],
    effective: &Protection,
) -> Result<(), String> {
    let hosts: Vec<String> = conn
        .exec(
            "SELECT Host FROM mysql.user WHERE User = ? ORDER BY Host",
            (role,),
        )
        .await
        .map_err(|e| read_grants(&e))?;
    if hosts.is_empty() {
        planner.notes.push(format!(
            "{role} has no account on the server (CREATE USER {}@'%' IDENTIFIED BY …, as an \
             administrator)",
            literal(role)
        ));
        return Ok(());
    }
    let shadow = shadow(role, home);
    let fits = shadow.len() <= masking::NAME_MAX;
    if !fits {
        planner.notes.push(format!(
            "the shadow database of {role} ({shadow}) is longer than MariaDB keeps a name: \
             {role} reads unprotected columns only"
        ));
    }
    // The shadow views it needs: name → (definition, runs with its definer's rights).
    let mut wanted: BTreeMap<String, (String, bool)> = BTreeMap::new();
    for relation in relations.iter().filter(|r| !r.definer_view && fits) {
        if let Some(view) = view_sql(home, &relation.name, &relation.columns, effective) {
            wanted.insert(relation.name.clone(), view);
        }
    }
    if fits && effective.is_empty() {
        // Nothing protected: runs no longer use the shadow database.
        drop_shadow(conn, planner, role, &shadow).await?;
    } else if fits {
        shadow_views(conn, planner, role, &shadow, &wanted).await?;
    }
    for host in &hosts {
        let account = format!("{}@{}", literal(role), literal(host));
        let held = grants(conn, role, host, [home, &shadow]).await?;
        account_steps(planner, &account, home, relations, effective, &held);
        if fits && !effective.is_empty() {
            for name in wanted.keys() {
                let key = (shadow.clone(), name.to_lowercase());
                let has = held.tables.get(&key).cloned().unwrap_or_default();
                if !(has.contains("SELECT") && has.contains("SHOW VIEW")) {
                    planner.step(
                        format!(
                            "GRANT SELECT, SHOW VIEW ON {}.{} TO {account}",
                            quote(&shadow),
                            quote(name)
                        ),
                        format!("{role} reads {name} through its shadow database"),
                    );
                }
            }
            if let Some(db) = held.database.get(&shadow).filter(|p| !p.is_empty()) {
                planner.step(
                    format!(
                        "REVOKE {} ON {}.* FROM {account}",
                        db.iter().cloned().collect::<Vec<_>>().join(", "),
                        quote(&shadow)
                    ),
                    format!("{role} reads its shadow database view by view"),
                );
            }
        }
    }
    Ok(())
}

/// The grants one account gets and loses on the database's relations.
fn account_steps(
    planner: &mut Planner<'_>,
    account: &str,
    home: &str,
    relations: &[Relation],
    effective: &Protection,
    held: &Grants,
) {
    let reads_only = "a protected database's login reads only, table by table".to_owned();
    if let Some(db) = held.database.get(home).filter(|p| !p.is_empty()) {
        planner.step(
            format!(
                "REVOKE {} ON {}.* FROM {account}",
                db.iter().cloned().collect::<Vec<_>>().join(", "),
                quote(home)
            ),
            format!("{reads_only}: a database-wide grant reaches protected columns"),
        );
    }
    let empty = BTreeSet::new();
    for relation in relations {
        let qualified = format!("{}.{}", quote(home), quote(&relation.name));
        let lower = relation.name.to_lowercase();
        let table = held
            .tables
            .get(&(home.to_owned(), lower.clone()))
            .unwrap_or(&empty);
        let columns = held.columns.get(&lower).cloned().unwrap_or_default();
        let protected: BTreeSet<&str> = relation
            .columns
            .iter()
            .filter(|c| effective.find(home, &relation.name, c).is_some())
            .map(String::as_str)
            .collect();
        // What the table-level grant must not hold: anything but SELECT, and SELECT itself on
        // a table with protected columns or a view with its definer's rights.
        let keep_select = protected.is_empty() && !relation.definer_view;
        let revoke: Vec<&str> = table
            .iter()
            .map(String::as_str)
            .filter(|p| !(keep_select && *p == "SELECT"))
            .collect();
        if !revoke.is_empty() {
            planner.step(
                format!("REVOKE {} ON {qualified} FROM {account}", revoke.join(", ")),
                if relation.definer_view {
                    format!("{qualified} runs with its definer's rights")
                } else if protected.is_empty() {
                    reads_only.clone()
                } else {
                    format!("{qualified} holds protected columns: only its others are granted")
                },
            );
        }
        for (column, privileges) in &columns {
            let readable = keep_select_column(relation, &protected, column);
            let revoke: Vec<&str> = privileges
                .iter()
                .map(String::as_str)
                .filter(|p| !(readable && *p == "SELECT"))
                .collect();
            if !revoke.is_empty() {
                planner.step(
                    format!(
                        "REVOKE {} ({}) ON {qualified} FROM {account}",
                        revoke.join(", "),
                        quote(column)
                    ),
                    if readable {
                        reads_only.clone()
                    } else {
                        format!("{qualified}.{column} is protected")
                    },
                );
            }
        }
        if relation.definer_view {
            continue;
        }
        if protected.is_empty() {
            if !table.contains("SELECT") {
                planner.step(
                    format!("GRANT SELECT ON {qualified} TO {account}"),
                    format!("{qualified} holds no protected column"),
                );
            }
            continue;
        }
        let selects = |c: &str| {
            columns
                .iter()
                .any(|(name, p)| name.eq_ignore_ascii_case(c) && p.contains("SELECT"))
        };
        let to_grant: Vec<String> = relation
            .columns
            .iter()
            .filter(|c| !protected.contains(c.as_str()) && !selects(c))
            .map(|c| quote(c))
            .collect();
        if !to_grant.is_empty() {
            planner.step(
                format!(
                    "GRANT SELECT ({}) ON {qualified} TO {account}",
                    to_grant.join(", ")
                ),
                format!("the columns of {qualified} no policy protects"),
            );
        }
    }
}

/// Whether `column` of `relation` keeps its column-level `SELECT`.
fn keep_select_column(relation: &Relation, protected: &BTreeSet<&str>, column: &str) -> bool {
    !relation.definer_view
        && relation
            .columns
            .iter()
            .any(|c| c.eq_ignore_ascii_case(column))
        && !protected.iter().any(|p| p.eq_ignore_ascii_case(column))
}

/// The step that drops `role`'s shadow database, when it holds only views.
async fn drop_shadow(
    conn: &mut Conn,
    planner: &mut Planner<'_>,
    role: &str,
    shadow: &str,
) -> Result<(), String> {
    let kinds: Vec<String> = conn
        .exec(
            "SELECT s.SCHEMA_NAME FROM information_schema.SCHEMATA s WHERE s.SCHEMA_NAME = ? \
             UNION ALL SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
            (shadow, shadow),
        )
        .await
        .map_err(|e| message(&e))?;
    let Some((_, contents)) = kinds.split_first() else {
        return Ok(());
    };
    if contents.iter().all(|kind| kind == "VIEW") {
        planner.step(
            format!("DROP DATABASE {}", quote(shadow)),
            format!("nothing is protected: {role}'s runs no longer use its shadow database"),
        );
    } else {
        planner.notes.push(format!(
            "{} holds tables besides dbconsole's views: drop it by hand",
            quote(shadow)
        ));
    }
    Ok(())
}

/// The steps that make `role`'s shadow database hold exactly the views `wanted`.
async fn shadow_views(
    conn: &mut Conn,
    planner: &mut Planner<'_>,
    role: &str,
    shadow: &str,
    wanted: &BTreeMap<String, (String, bool)>,
) -> Result<(), String> {
    let exists: Option<String> = conn
        .exec_first(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
            (shadow,),
        )
        .await
        .map_err(|e| message(&e))?;
    let existing: Vec<(String, String, Option<String>, Option<String>)> = conn
        .exec(
            "SELECT t.TABLE_NAME, t.TABLE_TYPE, v.VIEW_DEFINITION, v.SECURITY_TYPE \
             FROM information_schema.TABLES t LEFT JOIN information_schema.VIEWS v \
               ON v.TABLE_SCHEMA = t.TABLE_SCHEMA AND v.TABLE_NAME = t.TABLE_NAME \
             WHERE t.TABLE_SCHEMA = ?",
            (shadow,),
        )
        .await
        .map_err(|e| message(&e))?;
    if exists.is_none() && !wanted.is_empty() {
        planner.step(
            format!("CREATE DATABASE {}", quote(shadow)),
            format!("{role}'s shadow database: its default in protected runs"),
        );
    }
    let qualified = |name: &str| format!("{}.{}", quote(shadow), quote(name));
    for (name, kind, _, _) in &existing {
        if wanted.contains_key(name) {
            continue;
        }
        if kind == "VIEW" {
            planner.step(
                format!("DROP VIEW {}", qualified(name)),
                format!("no table {name} to show any more"),
            );
        } else {
            planner.notes.push(format!(
                "{} is a table in {role}'s shadow database: drop it (dbconsole makes only views \
                 there)",
                qualified(name)
            ));
        }
    }
    for (name, (definition, definer)) in wanted {
        let security = if *definer { "DEFINER" } else { "INVOKER" };
        let current = existing.iter().find(|(n, _, _, _)| n == name);
        let same = current.is_some_and(|(_, kind, printed, printed_security)| {
            kind == "VIEW"
                && printed.as_deref() == Some(definition.as_str())
                && printed_security.as_deref() == Some(security)
        });
        if same {
            continue;
        }
        if let Some((_, kind, _, _)) = current
            && kind != "VIEW"
        {
            continue;
        }
        planner.step(
            format!(
                "CREATE OR REPLACE SQL SECURITY {security} VIEW {} AS {definition}",
                qualified(name)
            ),
            if *definer {
                format!("{role} reads {name} with its masked columns as their masks")
            } else {
                format!("{role} reads {name} by its name in protected runs")
            },
        );
    }
    Ok(())
}

/// The credential's database (the provisioning credential's default), which provisioning
/// covers; `schemas` may name it and nothing else.
async fn home(conn: &mut Conn, schemas: &[String]) -> Result<String, String> {
    let home: Option<String> = conn
        .query_first("SELECT DATABASE()")
        .await
        .map_err(|e| message(&e))?
        .flatten();
    let home = home.ok_or_else(|| {
        "the database record names no database: provisioning on MariaDB covers the \
         connection's database"
            .to_owned()
    })?;
    if let Some(other) = schemas.iter().find(|s| **s != home) {
        return Err(format!(
            "on MariaDB provisioning covers the connection's database ({home}) and nothing \
             else: leave out {other}"
        ));
    }
    Ok(home)
}

/// Applies the plan statement by statement under the named lock of `lock` (one per database
/// record: two nodes apply one after the other), computed again under it, then checks that
/// nothing is left to do: the plan applied.
async fn apply(
    conn: &mut Conn,
    protection: &Protection,
    roles: &[String],
    home: &str,
    lock: i64,
) -> Result<Plan, String> {
    let name = format!("dbconsole-provision-{lock:x}");
    let locked: Option<Option<i64>> = conn
        .exec_first("SELECT GET_LOCK(?, 60)", (name.as_str(),))
        .await
        .map_err(|e| message(&e))?;
    if locked.flatten() != Some(1) {
        return Err("another apply of this database held its lock for 60 s".to_owned());
    }
    let applied = async {
        let plan = plan(conn, protection, roles, home).await?;
        for step in plan.roles.iter().flat_map(|r| &r.steps) {
            conn.query_drop(&step.sql).await.map_err(|e| {
                format!(
                    "{}: {} (the statements before it were applied)",
                    step.sql,
                    message(&e)
                )
            })?;
        }
        let left = plan_again(conn, protection, roles, home).await?;
        if !left.is_empty() {
            let statements: Vec<&str> = left
                .roles
                .iter()
                .flat_map(|r| r.steps.iter().map(|s| s.sql.as_str()))
                .collect();
            return Err(format!(
                "the plan did not take: after it, these would still run: {}",
                statements.join("; ")
            ));
        }
        Ok(plan)
    }
    .await;
    let _ = conn
        .exec_drop("SELECT RELEASE_LOCK(?)", (name.as_str(),))
        .await;
    applied
}

/// [`plan`] again (boxed: it is called from within an apply).
async fn plan_again(
    conn: &mut Conn,
    protection: &Protection,
    roles: &[String],
    home: &str,
) -> Result<Plan, String> {
    Box::pin(plan(conn, protection, roles, home)).await
}

/// The columns of the database the provisioning login sees.
async fn catalog(conn: &mut Conn, home: &str) -> Result<Plan, String> {
    let rows: Vec<(String, String, String, String)> = conn
        .exec(
            "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE FROM \
             information_schema.COLUMNS WHERE TABLE_SCHEMA = ? \
             ORDER BY TABLE_NAME, ORDINAL_POSITION",
            (home,),
        )
        .await
        .map_err(|e| message(&e))?;
    Ok(Plan {
        catalog: rows
            .into_iter()
            .map(|(schema, table, column, type_name)| CatalogColumn {
                schema,
                table,
                column,
                type_name,
            })
            .collect(),
        ..Plan::default()
    })
}

/// [`crate::run::provision::provision`] on MariaDB.
pub(crate) async fn run(
    target: &crate::check::CheckTarget,
    protection: &Protection,
    roles: &[String],
    schemas: &[String],
    what: Provision,
) -> Result<Plan, ProvisionError> {
    let mut conn = crate::check::mysql::connect(target)
        .await
        .map_err(ProvisionError::Connect)?;
    let done = async {
        if matches!(what, Provision::Connect) {
            return Ok(Plan::default());
        }
        let home = home(&mut conn, schemas).await?;
        match what {
            Provision::Connect => Ok(Plan::default()),
            Provision::Plan => plan(&mut conn, protection, roles, &home).await,
            Provision::Catalog => catalog(&mut conn, &home).await,
            Provision::Apply(lock) => apply(&mut conn, protection, roles, &home, lock).await,
        }
    }
    .await;
    let _ = conn.disconnect().await;
    done.map_err(ProvisionError::Refused)
}
