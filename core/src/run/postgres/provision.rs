//! Provisioning on PostgreSQL (docs/data-protection.md, "Provisioning"): as the provisioning
//! login, from the policies and the catalog, the statements that give each protected login
//! what the policies allow, and no more than the provisioning login itself can read:
//!
//! - `USAGE` on each schema provisioned;
//! - `SELECT` on each relation the provisioning login may grant that holds no protected column
//!   (a view or materialized view that reads one with its owner's rights is not granted);
//! - on a table with protected columns (named by a policy, or protected as one: a partition,
//!   child or parent, a generated column computed from one), `SELECT` on its other columns only;
//! - for each such table with a masked column, the login's masking view
//!   (`<login>_mask_<schema>.<table>`, owned by the provisioning login), `USAGE` on its schema and
//!   `SELECT` on it; masking views no longer needed are dropped;
//! - the login's other direct privileges on those relations revoked (writes, a table-level
//!   `SELECT` over protected columns), and `PUBLIC`'s `SELECT` on protected columns.
//!
//! [`apply`] runs the plan in one transaction, serialized across nodes by an advisory lock, and
//! computed again under the lock: a second apply finds nothing to do.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use super::verify::{derived, mask_schema, masking_view_sql, quote};
use crate::model::ColumnAction;
use crate::run::protect::plan::{CatalogColumn, Plan, Provision, ProvisionError, RolePlan, Step};
use crate::run::protect::{ProtectedColumn, Protection};

/// The protected columns as the catalog has them, the unmatched policy columns, and the views
/// that read a protected column with their owner's rights.
const PROTECTED: &str = concat!(
    "WITH RECURSIVE ",
    protected_ctes!(),
    "
SELECT 'derived', json_build_array(n.nspname, c.relname, prot.attname, prot.policy, prot.action,
    prot.how)::text
FROM prot JOIN pg_class c ON c.oid = prot.relid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE prot.how <> 'named'
UNION ALL
SELECT 'named', json_build_array(n.nspname, c.relname, prot.attname)::text
FROM prot JOIN pg_class c ON c.oid = prot.relid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE prot.how = 'named'
UNION ALL
SELECT 'unmatched', p.named FROM policy p WHERE NOT EXISTS (SELECT 1 FROM named WHERE named.n = p.n)
UNION ALL
SELECT 'view', v.oid::text FROM dep JOIN pg_class v ON v.oid = dep.view
WHERE v.relkind = 'm' OR NOT EXISTS (
  SELECT 1 FROM unnest(coalesce(v.reloptions, '{}')) o
  WHERE lower(o) IN ('security_invoker=true', 'security_invoker=on', 'security_invoker=1',
                     'security_invoker=yes'))"
);

/// The relations of the schemas provisioned (`$1`; empty: every schema but the system ones)
/// that the provisioning login may use: oid, schema, name, kind, columns in order, and whether
/// it may grant `SELECT` on it.
const RELATIONS: &str = "\
SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text,
  coalesce(array_agg(a.attname::text ORDER BY a.attnum)
    FILTER (WHERE a.attnum > 0 AND NOT a.attisdropped), '{}'),
  has_table_privilege(c.oid, 'SELECT WITH GRANT OPTION')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = c.oid
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relpersistence <> 't'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  AND (cardinality($1::text[]) = 0 OR n.nspname = ANY($1::text[]))
  AND has_schema_privilege(n.oid, 'USAGE')
GROUP BY c.oid, n.nspname, c.relname, c.relkind
ORDER BY n.nspname, c.relname";

/// The direct privileges of role `$1` (NULL: `PUBLIC`) on relations and on their columns:
/// relation oid, column (NULL for the relation), privilege.
const PRIVILEGES: &str = "\
WITH r AS (SELECT coalesce((SELECT oid FROM pg_roles WHERE rolname = $1), 0) AS oid)
SELECT c.oid::int8, NULL::text, x.privilege_type::text
FROM pg_class c, aclexplode(c.relacl) x, r WHERE x.grantee = r.oid AND c.oid >= 16384
UNION ALL
SELECT a.attrelid::int8, a.attname::text, x.privilege_type::text
FROM pg_attribute a, aclexplode(a.attacl) x, r
WHERE x.grantee = r.oid AND a.attnum > 0 AND a.attrelid >= 16384";

/// The schemas of `$2` (names) role `$1` may not use.
const NO_USAGE: &str = "\
SELECT s FROM unnest($2::text[]) s
WHERE EXISTS (SELECT 1 FROM pg_namespace n WHERE n.nspname = s)
  AND NOT has_schema_privilege($1, s, 'USAGE')";

/// The views in the masking schemas of role `$1` (schemas named `$1_mask_…`): schema, name,
/// definition.
const MASK_VIEWS: &str = "\
SELECT n.nspname::text, c.relname::text, pg_get_viewdef(c.oid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'v' AND starts_with(n.nspname, $1 || '_mask_')";

/// A relation in the schemas provisioned.
struct Relation {
    oid: i64,
    schema: String,
    name: String,
    kind: String,
    columns: Vec<String>,
    grantable: bool,
}

impl Relation {
    fn qualified(&self) -> String {
        format!("{}.{}", quote(&self.schema), quote(&self.name))
    }
}

/// Direct privileges: per relation oid, the relation's and each column's.
#[derive(Default)]
struct Privileges {
    table: HashMap<i64, BTreeSet<String>>,
    columns: HashMap<i64, BTreeMap<String, BTreeSet<String>>>,
}

async fn privileges(client: &Client, role: Option<&str>) -> Result<Privileges, String> {
    let rows = client
        .query(PRIVILEGES, &[&role])
        .await
        .map_err(|e| message(&e))?;
    let mut privileges = Privileges::default();
    for row in rows {
        let (oid, column, privilege): (i64, Option<String>, String) =
            (row.get(0), row.get(1), row.get(2));
        match column {
            None => {
                privileges.table.entry(oid).or_default().insert(privilege);
            }
            Some(column) => {
                privileges
                    .columns
                    .entry(oid)
                    .or_default()
                    .entry(column)
                    .or_default()
                    .insert(privilege);
            }
        }
    }
    Ok(privileges)
}

/// The database's error as one line.
fn message(error: &tokio_postgres::Error) -> String {
    error
        .as_db_error()
        .map_or_else(|| error.to_string(), |db| db.message().to_owned())
}

/// `schema.table` as the protection names it, and the protected columns of it.
fn protected_of<'p>(
    effective: &'p Protection,
    relation: &Relation,
) -> Vec<(&'p ProtectedColumn, String)> {
    relation
        .columns
        .iter()
        .filter_map(|c| {
            effective
                .find(&relation.schema, &relation.name, c)
                .map(|p| (p, c.clone()))
        })
        .collect()
}

/// The plan for `roles` (the database's credentials' logins) under `protection`, read as the
/// provisioning login `client` is: what [`apply`] would run. Read in a transaction rolled
/// back (the plan writes nothing; the transaction gives it one snapshot).
pub(crate) async fn plan(
    client: &Client,
    protection: &Protection,
    roles: &[String],
    schemas: &[String],
) -> Result<Plan, String> {
    client
        .batch_execute("BEGIN")
        .await
        .map_err(|e| message(&e))?;
    let plan = plan_in_transaction(client, protection, roles, schemas).await;
    let _ = client.batch_execute("ROLLBACK").await;
    plan
}

/// [`plan`], inside a transaction.
async fn plan_in_transaction(
    client: &Client,
    protection: &Protection,
    roles: &[String],
    schemas: &[String],
) -> Result<Plan, String> {
    let mut params = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut named = Vec::new();
    for column in &protection.columns {
        params.0.push(column.schema.clone());
        params.1.push(column.table.clone());
        params.2.push(column.column.clone());
        params.3.push(column.policy.clone());
        params.4.push(column.action.as_str().to_owned());
        named.push(column.named.clone());
    }
    let args: [&(dyn ToSql + Sync); 6] = [
        &params.0, &params.1, &params.2, &params.3, &params.4, &named,
    ];
    let rows = client
        .query(PROTECTED, &args)
        .await
        .map_err(|e| message(&e))?;
    let mut effective = protection.clone();
    let mut plan = Plan::default();
    let mut reading_views = BTreeSet::new();
    for row in rows {
        let (kind, value): (String, String) = (row.get(0), row.get(1));
        match kind.as_str() {
            "derived" => effective.columns.extend(derived(&value, protection)),
            "unmatched" => plan.unmatched.push(value),
            "view" => {
                reading_views.insert(value.parse::<i64>().unwrap_or(0));
            }
            _ => {}
        }
    }
    let relations: Vec<Relation> = client
        .query(RELATIONS, &[&schemas])
        .await
        .map_err(|e| message(&e))?
        .into_iter()
        .map(|row| Relation {
            oid: row.get(0),
            schema: row.get(1),
            name: row.get(2),
            kind: row.get(3),
            columns: row.get(4),
            grantable: row.get(5),
        })
        .filter(|r| {
            !roles
                .iter()
                .any(|role| r.schema.starts_with(&mask_schema(role, "")))
        })
        .collect();
    let public = privileges(client, None).await?;
    let in_scope: Vec<String> = relations
        .iter()
        .map(|r| r.schema.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // PUBLIC's reads of protected columns, once for every role.
    let mut public_steps = Vec::new();
    for relation in relations.iter().filter(|r| r.grantable) {
        let protected = protected_of(&effective, relation);
        if protected.is_empty() {
            continue;
        }
        let qualified = relation.qualified();
        if public
            .table
            .get(&relation.oid)
            .is_some_and(|p| p.contains("SELECT"))
        {
            public_steps.push(Step {
                sql: format!("REVOKE SELECT ON {qualified} FROM PUBLIC"),
                reason: format!(
                    "PUBLIC may read every column of {qualified}, protected ones included"
                ),
            });
        }
        let columns = public.columns.get(&relation.oid);
        let readable: Vec<String> = protected
            .iter()
            .filter(|(_, c)| {
                columns
                    .and_then(|cs| cs.get(c.as_str()))
                    .is_some_and(|p| p.contains("SELECT"))
            })
            .map(|(_, c)| quote(c))
            .collect();
        if !readable.is_empty() {
            public_steps.push(Step {
                sql: format!(
                    "REVOKE SELECT ({}) ON {qualified} FROM PUBLIC",
                    readable.join(", ")
                ),
                reason: format!("PUBLIC may read protected columns of {qualified}"),
            });
        }
    }
    for (index, role) in roles.iter().enumerate() {
        let mut steps = if index == 0 {
            std::mem::take(&mut public_steps)
        } else {
            Vec::new()
        };
        role_steps(
            client,
            role,
            &relations,
            &effective,
            &reading_views,
            &in_scope,
            &mut steps,
        )
        .await?;
        plan.roles.push(RolePlan {
            role: role.clone(),
            steps,
        });
    }
    let unreadable: Vec<&Relation> = relations.iter().filter(|r| !r.grantable).collect();
    if !unreadable.is_empty() {
        plan.notes.push(format!(
            "the provisioning login may not grant SELECT on {} (it neither owns them nor holds \
             the grant option), so the plan grants nothing on them and revokes nothing there",
            unreadable
                .iter()
                .map(|r| r.qualified())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(plan)
}

/// The steps of one protected login.
async fn role_steps(
    client: &Client,
    role: &str,
    relations: &[Relation],
    effective: &Protection,
    reading_views: &BTreeSet<i64>,
    in_scope: &[String],
    steps: &mut Vec<Step>,
) -> Result<(), String> {
    let who = quote(role);
    let exists = client
        .query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&role])
        .await
        .map_err(|e| message(&e))?
        .is_some();
    if !exists {
        return Err(format!(
            "the credential's login {role} is no role of the database: create it once \
             (CREATE ROLE {who} LOGIN PASSWORD '…'), then plan again"
        ));
    }
    let own = privileges(client, Some(role)).await?;
    let no_usage: Vec<String> = client
        .query(NO_USAGE, &[&role, &in_scope])
        .await
        .map_err(|e| message(&e))?
        .into_iter()
        .map(|row| row.get(0))
        .collect();
    for schema in no_usage {
        steps.push(Step {
            sql: format!("GRANT USAGE ON SCHEMA {} TO {who}", quote(&schema)),
            reason: format!("{role} reads the tables of schema {schema}"),
        });
    }
    // The masking views this login needs, by masking schema and name.
    let mut wanted: BTreeMap<(String, String), String> = BTreeMap::new();
    for relation in relations.iter().filter(|r| r.grantable) {
        let qualified = relation.qualified();
        let table = own.table.get(&relation.oid).cloned().unwrap_or_default();
        let columns = own.columns.get(&relation.oid).cloned().unwrap_or_default();
        let protected = protected_of(effective, relation);
        let reads_protected = reading_views.contains(&relation.oid);
        // Anything but SELECT is taken away: a protected database's logins read only.
        let other: Vec<&str> = table
            .iter()
            .map(String::as_str)
            .filter(|p| *p != "SELECT")
            .collect();
        if !other.is_empty() {
            steps.push(Step {
                sql: format!("REVOKE {} ON {qualified} FROM {who}", other.join(", ")),
                reason: format!("{role} reads only (a protected database's login)"),
            });
        }
        let column_writes: BTreeSet<&str> = columns
            .values()
            .flatten()
            .map(String::as_str)
            .filter(|p| *p != "SELECT")
            .collect();
        for privilege in column_writes {
            let names: Vec<String> = columns
                .iter()
                .filter(|(_, p)| p.contains(privilege))
                .map(|(c, _)| quote(c))
                .collect();
            steps.push(Step {
                sql: format!(
                    "REVOKE {privilege} ({}) ON {qualified} FROM {who}",
                    names.join(", ")
                ),
                reason: format!("{role} reads only (a protected database's login)"),
            });
        }
        let selects = table.contains("SELECT");
        if reads_protected {
            if selects {
                steps.push(Step {
                    sql: format!("REVOKE SELECT ON {qualified} FROM {who}"),
                    reason: format!("{qualified} reads a protected column with its owner's rights"),
                });
            }
            continue;
        }
        if protected.is_empty() {
            if !selects {
                steps.push(Step {
                    sql: format!("GRANT SELECT ON {qualified} TO {who}"),
                    reason: format!("{qualified} holds no protected column"),
                });
            }
            continue;
        }
        let policies: BTreeSet<&str> = protected.iter().map(|(p, _)| p.policy.as_str()).collect();
        let policies = policies.into_iter().collect::<Vec<_>>().join("\", \"");
        if selects {
            steps.push(Step {
                sql: format!("REVOKE SELECT ON {qualified} FROM {who}"),
                reason: format!(
                    "{qualified} holds columns policy \"{policies}\" protects: only its other \
                     columns are granted"
                ),
            });
        }
        let readable = |c: &str| columns.get(c).is_some_and(|p| p.contains("SELECT"));
        let to_revoke: Vec<String> = protected
            .iter()
            .filter(|(_, c)| readable(c))
            .map(|(_, c)| quote(c))
            .collect();
        if !to_revoke.is_empty() {
            steps.push(Step {
                sql: format!(
                    "REVOKE SELECT ({}) ON {qualified} FROM {who}",
                    to_revoke.join(", ")
                ),
                reason: format!("policy \"{policies}\" protects them"),
            });
        }
        let to_grant: Vec<String> = relation
            .columns
            .iter()
            .filter(|c| !protected.iter().any(|(_, p)| p == *c))
            .filter(|c| selects || !readable(c))
            .map(|c| quote(c))
            .collect();
        if !to_grant.is_empty() {
            steps.push(Step {
                sql: format!(
                    "GRANT SELECT ({}) ON {qualified} TO {who}",
                    to_grant.join(", ")
                ),
                reason: format!("the columns of {qualified} no policy protects"),
            });
        }
        if protected
            .iter()
            .any(|(p, _)| p.action == ColumnAction::Mask)
            && relation.kind != "v"
        {
            wanted.insert(
                (mask_schema(role, &relation.schema), relation.name.clone()),
                masking_view_sql(
                    &relation.schema,
                    &relation.name,
                    &relation.columns,
                    effective,
                ),
            );
        }
    }
    masking_views(client, role, &wanted, steps).await
}

/// The steps that make `role`'s masking views what `wanted` says (by masking schema and name:
/// the definition), and drop the others in its masking schemas.
async fn masking_views(
    client: &Client,
    role: &str,
    wanted: &BTreeMap<(String, String), String>,
    steps: &mut Vec<Step>,
) -> Result<(), String> {
    let who = quote(role);
    let existing: BTreeMap<(String, String), String> = client
        .query(MASK_VIEWS, &[&role])
        .await
        .map_err(|e| message(&e))?
        .into_iter()
        .map(|row| ((row.get(0), row.get(1)), row.get(2)))
        .collect();
    let schemas: BTreeSet<String> = client
        .query(
            "SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, $1 || '_mask_')",
            &[&role],
        )
        .await
        .map_err(|e| message(&e))?
        .into_iter()
        .map(|row| row.get(0))
        .collect();
    for (schema, name) in existing.keys() {
        if !wanted.contains_key(&(schema.clone(), name.clone())) {
            steps.push(Step {
                sql: format!("DROP VIEW {}.{}", quote(schema), quote(name)),
                reason: format!("no masked column of a table {name} any more"),
            });
        }
    }
    let mut made_schemas = BTreeSet::new();
    for ((schema, name), definition) in wanted {
        let qualified = format!("{}.{}", quote(schema), quote(name));
        let same = match existing.get(&(schema.clone(), name.clone())) {
            Some(current) => super::viewdef::same_view(current, definition),
            None => false,
        };
        if !schemas.contains(schema) && made_schemas.insert(schema.clone()) {
            steps.push(Step {
                sql: format!("CREATE SCHEMA {}", quote(schema)),
                reason: format!(
                    "{role}'s masking views of schema {}",
                    &schema[role.len() + 6..]
                ),
            });
        }
        let usage = client
            .query_one(
                "SELECT coalesce(has_schema_privilege($1, n.oid, 'USAGE'), false) \
                 FROM (SELECT (SELECT oid FROM pg_namespace WHERE nspname = $2) AS oid) n",
                &[&role, schema],
            )
            .await
            .map_err(|e| message(&e))?
            .get::<_, bool>(0);
        if !usage && (made_schemas.contains(schema) || schemas.contains(schema)) {
            steps.push(Step {
                sql: format!("GRANT USAGE ON SCHEMA {} TO {who}", quote(schema)),
                reason: format!("{role} reads its masking views"),
            });
        }
        if same {
            let granted = client
                .query_one(
                    "SELECT has_table_privilege($1, $2::text::regclass, 'SELECT')",
                    &[&role, &qualified],
                )
                .await
                .map_err(|e| message(&e))?
                .get::<_, bool>(0);
            if !granted {
                steps.push(Step {
                    sql: format!("GRANT SELECT ON {qualified} TO {who}"),
                    reason: format!("{role} reads the masked columns of {name} through it"),
                });
            }
            continue;
        }
        if existing.contains_key(&(schema.clone(), name.clone())) {
            steps.push(Step {
                sql: format!("DROP VIEW {qualified}"),
                reason: format!("the masking view of {name} is not what the policies make it"),
            });
        }
        steps.push(Step {
            sql: format!("CREATE VIEW {qualified} AS {definition}"),
            reason: format!("{role} reads the masked columns of {name} through it"),
        });
        steps.push(Step {
            sql: format!("GRANT SELECT ON {qualified} TO {who}"),
            reason: format!("{role} reads the masked columns of {name} through it"),
        });
    }
    Ok(())
}

/// Applies the plan in one transaction, after taking the advisory lock `lock` (one per
/// database record, so that two nodes apply one after the other), computing it again under
/// the lock: the plan applied (empty when another apply did it all).
pub(crate) async fn apply(
    client: &Client,
    protection: &Protection,
    roles: &[String],
    schemas: &[String],
    lock: i64,
) -> Result<Plan, String> {
    client
        .batch_execute("BEGIN")
        .await
        .map_err(|e| message(&e))?;
    let applied = async {
        client
            .execute("SELECT pg_advisory_xact_lock($1)", &[&lock])
            .await
            .map_err(|e| message(&e))?;
        let plan = plan_in_transaction(client, protection, roles, schemas).await?;
        for role in &plan.roles {
            for step in &role.steps {
                client
                    .batch_execute(&step.sql)
                    .await
                    .map_err(|e| format!("{}: {}", step.sql, message(&e)))?;
            }
        }
        client
            .batch_execute("COMMIT")
            .await
            .map_err(|e| message(&e))?;
        Ok(plan)
    }
    .await;
    if applied.is_err() {
        let _ = client.batch_execute("ROLLBACK").await;
    }
    applied
}

/// [`crate::run::protect::plan::provision`] on PostgreSQL.
pub(crate) async fn run(
    target: &crate::check::CheckTarget,
    protection: &Protection,
    roles: &[String],
    schemas: &[String],
    what: Provision,
) -> Result<Plan, ProvisionError> {
    let client = crate::check::postgres::connect(target)
        .await
        .map_err(ProvisionError::Connect)?;
    let done = match what {
        Provision::Connect => Ok(Plan::default()),
        Provision::Plan => plan(&client, protection, roles, schemas).await,
        Provision::Catalog => catalog(&client, schemas).await,
        Provision::Apply(lock) => apply(&client, protection, roles, schemas, lock).await,
    };
    done.map_err(ProvisionError::Refused)
}

/// The columns of the schemas provisioned (`schemas`; empty: all but the system ones) that the
/// provisioning login sees, masking schemas left out.
async fn catalog(client: &Client, schemas: &[String]) -> Result<Plan, String> {
    let rows = client
        .query(
            "SELECT table_schema::text, table_name::text, column_name::text, data_type::text \
             FROM information_schema.columns \
             WHERE table_schema NOT IN ('pg_catalog', 'information_schema') \
               AND table_schema NOT LIKE 'pg\\_%' AND table_schema NOT LIKE '%\\_mask\\_%' \
               AND (cardinality($1::text[]) = 0 OR table_schema = ANY($1::text[])) \
             ORDER BY table_schema, table_name, ordinal_position",
            &[&schemas],
        )
        .await
        .map_err(|e| message(&e))?;
    Ok(Plan {
        catalog: rows
            .into_iter()
            .map(|row| CatalogColumn {
                schema: row.get(0),
                table: row.get(1),
                column: row.get(2),
                type_name: row.get(3),
            })
            .collect(),
        ..Plan::default()
    })
}
