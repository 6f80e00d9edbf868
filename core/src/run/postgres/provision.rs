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

use super::verify::{PolicyParams, derived, mask_schema, masking_view_sql, quote};
use crate::model::ColumnAction;
use crate::run::protect::plan::{CatalogColumn, Plan, Provision, ProvisionError, RolePlan, Step};
use crate::run::protect::{ProtectedColumn, Protection};

/// The protected columns as the catalog has them, the unmatched policy columns, and the views
/// that read a protected column with their owner's rights.
const PROTECTED: &str = concat!(
    "WITH RECURSIVE ",
    protected_ctes!(),
    "
SELECT 'derived', json_build_array(n.nspname, c.relname, prot.attname, prot.ord,
    prot.how)::text
FROM prot JOIN pg_class c ON c.oid = prot.relid JOIN pg_namespace n ON n.oid = c.relnamespace
UNION ALL
SELECT 'unmatched', p.named FROM policy p
WHERE NOT EXISTS (SELECT 1 FROM named WHERE named.ord = p.ord)
UNION ALL
SELECT 'view', v.oid::text FROM dep JOIN pg_class v ON v.oid = dep.view
WHERE v.relkind = 'm' OR NOT EXISTS (
  SELECT 1 FROM unnest(coalesce(v.reloptions, '{}')) o
  WHERE lower(o) IN ('security_invoker=true', 'security_invoker=on', 'security_invoker=1',
                     'security_invoker=yes'))"
);

/// The relations of the schemas provisioned (`$1`; empty: every schema but the system ones)
/// that the provisioning login may use: oid, schema, name, kind, columns in order, whether it
/// may grant `SELECT` on it, and whether it has row-level security.
const RELATIONS: &str = "\
SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text,
  coalesce(array_agg(a.attname::text ORDER BY a.attnum)
    FILTER (WHERE a.attnum > 0 AND NOT a.attisdropped), '{}'),
  has_table_privilege(c.oid, 'SELECT WITH GRANT OPTION'), c.relrowsecurity
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = c.oid
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relpersistence <> 't'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  AND (cardinality($1::text[]) = 0 OR n.nspname = ANY($1::text[]))
  AND has_schema_privilege(n.oid, 'USAGE')
GROUP BY c.oid, n.nspname, c.relname, c.relkind, c.relrowsecurity
ORDER BY n.nspname, c.relname";

/// The direct privileges of role `$1` (NULL: `PUBLIC`) on relations and on their columns:
/// relation oid, column (NULL for the relation), privilege, and whether the provisioning login
/// may take it back: a `REVOKE` takes back only the grants of whoever runs it, and a member of
/// the owning role (or a superuser) grants and revokes as the owner.
const PRIVILEGES: &str = "\
WITH r AS (SELECT coalesce((SELECT oid FROM pg_roles WHERE rolname = $1), 0) AS oid),
me AS (SELECT oid FROM pg_roles WHERE rolname = current_user)
SELECT c.oid::int8, NULL::text, x.privilege_type::text,
  x.grantor = CASE WHEN pg_has_role(c.relowner, 'USAGE') THEN c.relowner ELSE (SELECT oid FROM me) END
FROM pg_class c, aclexplode(c.relacl) x, r WHERE x.grantee = r.oid AND c.oid >= 16384
UNION ALL
SELECT a.attrelid::int8, a.attname::text, x.privilege_type::text,
  x.grantor = CASE WHEN pg_has_role(c.relowner, 'USAGE') THEN c.relowner ELSE (SELECT oid FROM me) END
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid, aclexplode(a.attacl) x, r
WHERE x.grantee = r.oid AND a.attnum > 0 AND a.attrelid >= 16384";

/// The schemas of `$2` (names) role `$1` may not use, and whether the provisioning login may
/// grant it.
const NO_USAGE: &str = "\
SELECT s, has_schema_privilege(s, 'USAGE WITH GRANT OPTION') FROM unnest($2::text[]) s
WHERE EXISTS (SELECT 1 FROM pg_namespace n WHERE n.nspname = s)
  AND NOT has_schema_privilege($1, s, 'USAGE')";

/// The views of the masking schemas `$1` (names): schema, name, definition, whether the
/// provisioning login owns it, and the one relation it reads (NULL when not exactly one).
const MASK_VIEWS: &str = "\
SELECT n.nspname::text, c.relname::text, pg_get_viewdef(c.oid),
  c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user),
  (SELECT CASE WHEN count(DISTINCT d.refobjid) = 1 THEN min(d.refobjid)::int8 END
   FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
   WHERE r.ev_class = c.oid AND d.classid = 'pg_rewrite'::regclass
     AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> c.oid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'v' AND n.nspname = ANY($1::text[])";

/// The longest name PostgreSQL keeps whole (it cuts longer ones to 63 bytes).
const NAME_MAX: usize = 63;

/// A relation in the schemas provisioned.
struct Relation {
    oid: i64,
    schema: String,
    name: String,
    kind: String,
    columns: Vec<String>,
    grantable: bool,
    row_security: bool,
}

impl Relation {
    fn qualified(&self) -> String {
        format!("{}.{}", quote(&self.schema), quote(&self.name))
    }
}

/// Direct privileges by name: whether the provisioning login granted one (it can take it back),
/// and whether another role did (only that role can).
type Held = BTreeMap<String, (bool, bool)>;

/// Direct privileges: per relation oid, the relation's and each column's.
#[derive(Default)]
struct Privileges {
    table: HashMap<i64, Held>,
    columns: HashMap<i64, BTreeMap<String, Held>>,
}

async fn privileges(client: &Client, role: Option<&str>) -> Result<Privileges, String> {
    let rows = client
        .query(PRIVILEGES, &[&role])
        .await
        .map_err(|e| message(&e))?;
    let mut privileges = Privileges::default();
    for row in rows {
        let (oid, column, privilege, mine): (i64, Option<String>, String, bool) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let held = match column {
            None => privileges.table.entry(oid).or_default(),
            Some(column) => privileges
                .columns
                .entry(oid)
                .or_default()
                .entry(column)
                .or_default(),
        };
        let entry = held.entry(privilege).or_insert((false, false));
        if mine {
            entry.0 = true;
        } else {
            entry.1 = true;
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

/// The protected columns of `relation` (as the catalog names them).
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

/// What a plan collects: each login's steps and the notes.
struct Planner<'a> {
    role: &'a str,
    steps: Vec<Step>,
    notes: &'a mut Vec<String>,
}

impl Planner<'_> {
    fn step(&mut self, sql: String, reason: String) {
        self.steps.push(Step { sql, reason });
    }

    /// `REVOKE <privileges> [(columns)] ON <relation> FROM <grantee>` for what the
    /// provisioning login granted; a note for what another grantor did.
    fn revoke(
        &mut self,
        held: &Held,
        which: &[&str],
        columns: Option<&[String]>,
        qualified: &str,
        grantee: &str,
        reason: &str,
    ) {
        let privileges: Vec<&str> = which
            .iter()
            .copied()
            .filter(|p| held.contains_key(*p))
            .collect();
        if privileges.is_empty() {
            return;
        }
        let on = match columns {
            Some(columns) => format!(
                " ({})",
                columns
                    .iter()
                    .map(|c| quote(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => String::new(),
        };
        let mine: Vec<&str> = privileges.iter().copied().filter(|p| held[*p].0).collect();
        if !mine.is_empty() {
            self.step(
                format!(
                    "REVOKE {}{on} ON {qualified} FROM {grantee}",
                    mine.join(", ")
                ),
                reason.to_owned(),
            );
        }
        let others: Vec<&str> = privileges.iter().copied().filter(|p| held[*p].1).collect();
        if !others.is_empty() {
            self.notes.push(format!(
                "{grantee} holds {}{on} on {qualified}, granted by another role: only that role \
                 (or a superuser) can revoke it ({reason})",
                others.join(", ")
            ));
        }
    }
}

/// The plan for `roles` (the database's credentials' logins) under `protection`, read as the
/// provisioning login `client` is: what [`apply`] would run. Read in one snapshot
/// (`REPEATABLE READ READ ONLY`), rolled back.
pub(crate) async fn plan(
    client: &Client,
    protection: &Protection,
    roles: &[String],
    schemas: &[String],
) -> Result<Plan, String> {
    client
        .batch_execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
             SET LOCAL search_path = pg_catalog, pg_temp",
        )
        .await
        .map_err(|e| message(&e))?;
    let plan = plan_in_transaction(client, protection, roles, schemas).await;
    let _ = client.batch_execute("ROLLBACK").await;
    plan
}

/// [`plan`], inside a transaction whose `search_path` is `pg_catalog, pg_temp` (the masking
/// views' functions are `pg_catalog`'s, and are printed bare).
async fn plan_in_transaction(
    client: &Client,
    protection: &Protection,
    roles: &[String],
    schemas: &[String],
) -> Result<Plan, String> {
    let params = PolicyParams::of(protection);
    let rows = client
        .query(PROTECTED, &params.args())
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
    let all: Vec<Relation> = client
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
            row_security: row.get(6),
        })
        .collect();
    // The masking schemas of the logins are dbconsole's: exactly `<login>_mask_<schema>` of a
    // schema provisioned, not provisioned themselves.
    let sources: BTreeSet<String> = all.iter().map(|r| r.schema.clone()).collect();
    let masking: BTreeSet<String> = roles
        .iter()
        .flat_map(|role| sources.iter().map(move |s| mask_schema(role, s)))
        .collect();
    let relations: Vec<Relation> = all
        .into_iter()
        .filter(|r| !masking.contains(&r.schema))
        .collect();
    let in_scope: Vec<String> = relations
        .iter()
        .map(|r| r.schema.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let public = privileges(client, None).await?;
    let mut notes = Vec::new();
    // PUBLIC's reads of protected columns and of views that read them, once for every role.
    let mut public_plan = Planner {
        role: "PUBLIC",
        steps: Vec::new(),
        notes: &mut notes,
    };
    for relation in relations.iter().filter(|r| r.grantable) {
        let protected = protected_of(&effective, relation);
        let reads_protected = reading_views.contains(&relation.oid);
        if protected.is_empty() && !reads_protected {
            continue;
        }
        let qualified = relation.qualified();
        if let Some(held) = public.table.get(&relation.oid) {
            public_plan.revoke(
                held,
                &["SELECT"],
                None,
                &qualified,
                "PUBLIC",
                &format!("PUBLIC may read {qualified}, which holds or reads protected columns"),
            );
        }
        for (column, held) in public.columns.get(&relation.oid).into_iter().flatten() {
            if reads_protected || protected.iter().any(|(_, c)| c == column) {
                public_plan.revoke(
                    held,
                    &["SELECT"],
                    Some(std::slice::from_ref(column)),
                    &qualified,
                    "PUBLIC",
                    &format!("PUBLIC may read a protected column of {qualified}"),
                );
            }
        }
    }
    let mut public_steps = public_plan.steps;
    for (index, role) in roles.iter().enumerate() {
        let mut planner = Planner {
            role,
            steps: if index == 0 {
                std::mem::take(&mut public_steps)
            } else {
                Vec::new()
            },
            notes: &mut notes,
        };
        role_steps(
            client,
            &mut planner,
            &relations,
            &effective,
            &reading_views,
            &in_scope,
        )
        .await?;
        plan.roles.push(RolePlan {
            role: role.clone(),
            steps: planner.steps,
        });
    }
    if roles.is_empty() && !public_steps.is_empty() {
        notes.push(
            "the database has no credential but the provisioning one: nothing to provision"
                .to_owned(),
        );
    }
    let unreadable: Vec<String> = relations
        .iter()
        .filter(|r| !r.grantable)
        .map(Relation::qualified)
        .collect();
    if !unreadable.is_empty() {
        notes.push(format!(
            "the provisioning login may not grant SELECT on {} (it neither owns them nor holds \
             the grant option), so the plan grants nothing on them and revokes nothing there",
            unreadable.join(", ")
        ));
    }
    plan.notes = notes;
    Ok(plan)
}

/// The steps of one protected login.
async fn role_steps(
    client: &Client,
    planner: &mut Planner<'_>,
    relations: &[Relation],
    effective: &Protection,
    reading_views: &BTreeSet<i64>,
    in_scope: &[String],
) -> Result<(), String> {
    let role = planner.role.to_owned();
    let who = quote(&role);
    let exists = client
        .query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&role])
        .await
        .map_err(|e| message(&e))?
        .is_some();
    if !exists {
        planner.notes.push(format!(
            "the credential's login {role} is no role of the database: create it once \
             (CREATE ROLE {who} LOGIN PASSWORD '…'), then plan again"
        ));
        return Ok(());
    }
    let own = privileges(client, Some(&role)).await?;
    let no_usage: Vec<(String, bool)> = client
        .query(NO_USAGE, &[&role, &in_scope])
        .await
        .map_err(|e| message(&e))?
        .into_iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    for (schema, grantable) in no_usage {
        if grantable {
            planner.step(
                format!("GRANT USAGE ON SCHEMA {} TO {who}", quote(&schema)),
                format!("{role} reads the tables of schema {schema}"),
            );
        } else {
            planner.notes.push(format!(
                "{role} may not use schema {schema}, and the provisioning login may not grant it \
                 (GRANT USAGE ON SCHEMA {} TO {who}, as its owner)",
                quote(&schema)
            ));
        }
    }
    // The masking views this login needs, by masking schema and name: the definition and
    // the table it reads.
    let mut wanted: BTreeMap<(String, String), (String, i64)> = BTreeMap::new();
    let empty = Held::new();
    for relation in relations.iter().filter(|r| r.grantable) {
        let qualified = relation.qualified();
        let table = own.table.get(&relation.oid).unwrap_or(&empty);
        let columns = own.columns.get(&relation.oid).cloned().unwrap_or_default();
        let protected = protected_of(effective, relation);
        let reads_protected = reading_views.contains(&relation.oid);
        let reads_only = format!("{role} reads only (a protected database's login)");
        // Anything but SELECT is taken away: a protected database's logins read only.
        let writes: Vec<&str> = table
            .keys()
            .map(String::as_str)
            .filter(|p| *p != "SELECT")
            .collect();
        planner.revoke(table, &writes, None, &qualified, &who, &reads_only);
        for (column, held) in &columns {
            let writes: Vec<&str> = held
                .keys()
                .map(String::as_str)
                .filter(|p| *p != "SELECT")
                .collect();
            planner.revoke(
                held,
                &writes,
                Some(std::slice::from_ref(column)),
                &qualified,
                &who,
                &reads_only,
            );
        }
        let selects = table.contains_key("SELECT");
        // A table-level SELECT another role granted stays whatever the plan does (noted).
        let stays = table.get("SELECT").is_some_and(|(_, others)| *others);
        let readable = |c: &str| columns.get(c).is_some_and(|p| p.contains_key("SELECT"));
        if reads_protected {
            let why = format!("{qualified} reads a protected column with its owner's rights");
            planner.revoke(table, &["SELECT"], None, &qualified, &who, &why);
            for (column, held) in &columns {
                planner.revoke(
                    held,
                    &["SELECT"],
                    Some(std::slice::from_ref(column)),
                    &qualified,
                    &who,
                    &why,
                );
            }
            continue;
        }
        if protected.is_empty() {
            if !selects {
                planner.step(
                    format!("GRANT SELECT ON {qualified} TO {who}"),
                    format!("{qualified} holds no protected column"),
                );
            }
            continue;
        }
        let policies: BTreeSet<&str> = protected.iter().map(|(p, _)| p.policy.as_str()).collect();
        let policies = policies.into_iter().collect::<Vec<_>>().join("\", \"");
        planner.revoke(
            table,
            &["SELECT"],
            None,
            &qualified,
            &who,
            &format!(
                "{qualified} holds columns policy \"{policies}\" protects: only its other \
                 columns are granted"
            ),
        );
        let to_revoke: Vec<String> = protected
            .iter()
            .filter(|(_, c)| readable(c))
            .map(|(_, c)| c.clone())
            .collect();
        for column in &to_revoke {
            planner.revoke(
                &columns[column],
                &["SELECT"],
                Some(std::slice::from_ref(column)),
                &qualified,
                &who,
                &format!("policy \"{policies}\" protects it"),
            );
        }
        let to_grant: Vec<String> = relation
            .columns
            .iter()
            .filter(|c| !protected.iter().any(|(_, p)| p == *c))
            .filter(|c| !stays && !readable(c))
            .map(|c| quote(c))
            .collect();
        if !to_grant.is_empty() {
            planner.step(
                format!(
                    "GRANT SELECT ({}) ON {qualified} TO {who}",
                    to_grant.join(", ")
                ),
                format!("the columns of {qualified} no policy protects"),
            );
        }
        if !protected
            .iter()
            .any(|(p, _)| p.action == ColumnAction::Mask)
            || relation.kind == "v"
        {
            continue;
        }
        let schema = mask_schema(&role, &relation.schema);
        if relation.row_security {
            planner.notes.push(format!(
                "{qualified} has row-level security, which a masking view (read with its \
                 owner's rights) would not apply: {role} reads its unprotected columns only"
            ));
        } else if schema.len() > NAME_MAX {
            planner.notes.push(format!(
                "the masking schema of {qualified} for {role} ({schema}) is longer than \
                 PostgreSQL keeps a name: {role} reads its unprotected columns only"
            ));
        } else {
            wanted.insert(
                (schema, relation.name.clone()),
                (
                    masking_view_sql(
                        &relation.schema,
                        &relation.name,
                        &relation.columns,
                        effective,
                    ),
                    relation.oid,
                ),
            );
        }
    }
    let masking: Vec<String> = in_scope.iter().map(|s| mask_schema(&role, s)).collect();
    masking_views(client, planner, &masking, &wanted).await
}

/// The steps that make the login's masking views what `wanted` says (by masking schema and
/// name: the definition and the table it reads), and drop the others of its masking schemas
/// (`masking`) that the provisioning login owns.
async fn masking_views(
    client: &Client,
    planner: &mut Planner<'_>,
    masking: &[String],
    wanted: &BTreeMap<(String, String), (String, i64)>,
) -> Result<(), String> {
    let role = planner.role.to_owned();
    let who = quote(&role);
    // Schema and name → (definition, owned by the provisioning login, the table it reads).
    let existing: BTreeMap<(String, String), (String, bool, Option<i64>)> = client
        .query(MASK_VIEWS, &[&masking])
        .await
        .map_err(|e| message(&e))?
        .into_iter()
        .map(|row| {
            (
                (row.get(0), row.get(1)),
                (row.get(2), row.get(3), row.get(4)),
            )
        })
        .collect();
    let schemas: BTreeSet<String> = client
        .query(
            "SELECT nspname::text FROM pg_namespace WHERE nspname = ANY($1::text[])",
            &[&masking],
        )
        .await
        .map_err(|e| message(&e))?
        .into_iter()
        .map(|row| row.get(0))
        .collect();
    for ((schema, name), (_, owned, _)) in &existing {
        if wanted.contains_key(&(schema.clone(), name.clone())) {
            continue;
        }
        let qualified = format!("{}.{}", quote(schema), quote(name));
        if *owned {
            planner.step(
                format!("DROP VIEW {qualified}"),
                format!("no masked column of a table {name} any more"),
            );
        } else {
            planner.notes.push(format!(
                "{qualified}, in {role}'s masking schema, belongs to another role: drop it"
            ));
        }
    }
    let mut made = BTreeSet::new();
    for ((schema, name), (definition, source)) in wanted {
        let qualified = format!("{}.{}", quote(schema), quote(name));
        let current = existing.get(&(schema.clone(), name.clone()));
        if let Some((_, false, _)) = current {
            planner.notes.push(format!(
                "{qualified} belongs to another role: the provisioning login can't make {role}'s \
                 masking view of {name} until it is dropped"
            ));
            continue;
        }
        let same = current.is_some_and(|(printed, _, reads)| {
            *reads == Some(*source) && super::viewdef::same_view(printed, definition)
        });
        if !schemas.contains(schema) && made.insert(schema.clone()) {
            planner.step(
                format!("CREATE SCHEMA {}", quote(schema)),
                format!("{role}'s masking views"),
            );
        }
        let usage = schemas.contains(schema)
            && client
                .query_one(
                    "SELECT has_schema_privilege($1, $2::text, 'USAGE')",
                    &[&role, schema],
                )
                .await
                .map_err(|e| message(&e))?
                .get::<_, bool>(0);
        if !usage && !made.contains(&format!("usage {schema}")) {
            made.insert(format!("usage {schema}"));
            planner.step(
                format!("GRANT USAGE ON SCHEMA {} TO {who}", quote(schema)),
                format!("{role} reads its masking views"),
            );
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
                planner.step(
                    format!("GRANT SELECT ON {qualified} TO {who}"),
                    format!("{role} reads the masked columns of {name} through it"),
                );
            }
            continue;
        }
        if current.is_some() {
            planner.step(
                format!("DROP VIEW {qualified}"),
                format!("the masking view of {name} is not what the policies make it"),
            );
        }
        planner.step(
            format!("CREATE VIEW {qualified} AS {definition}"),
            format!("{role} reads the masked columns of {name} through it"),
        );
        planner.step(
            format!("GRANT SELECT ON {qualified} TO {who}"),
            format!("{role} reads the masked columns of {name} through it"),
        );
    }
    Ok(())
}

/// Applies the plan in one transaction, after taking the advisory lock `lock` (one per
/// database record, so that two nodes apply one after the other), computing it again under
/// the lock, and checking before it commits that nothing is left to do (a statement
/// PostgreSQL took without doing it, as a grant it had no right to make, rolls everything
/// back): the plan applied (empty when another apply did it all).
pub(crate) async fn apply(
    client: &Client,
    protection: &Protection,
    roles: &[String],
    schemas: &[String],
    lock: i64,
) -> Result<Plan, String> {
    client
        .batch_execute("BEGIN; SET LOCAL search_path = pg_catalog, pg_temp")
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
        let left = plan_in_transaction(client, protection, roles, schemas).await?;
        if !left.is_empty() {
            let statements: Vec<&str> = left
                .roles
                .iter()
                .flat_map(|r| r.steps.iter().map(|s| s.sql.as_str()))
                .collect();
            return Err(format!(
                "the plan did not take (nothing was applied): after it, these would still run: \
                 {}",
                statements.join("; ")
            ));
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

/// The columns of the schemas provisioned (`schemas`; empty: all but the system ones) that the
/// provisioning login sees, the masking schemas of `roles` left out.
async fn catalog(client: &Client, roles: &[String], schemas: &[String]) -> Result<Plan, String> {
    let rows = client
        .query(
            "SELECT table_schema::text, table_name::text, column_name::text, data_type::text \
             FROM information_schema.columns \
             WHERE table_schema NOT IN ('pg_catalog', 'information_schema') \
               AND table_schema NOT LIKE 'pg\\_%' \
               AND (cardinality($1::text[]) = 0 OR table_schema = ANY($1::text[])) \
             ORDER BY table_schema, table_name, ordinal_position",
            &[&schemas],
        )
        .await
        .map_err(|e| message(&e))?;
    let sources: BTreeSet<String> = rows.iter().map(|row| row.get(0)).collect();
    let masking: BTreeSet<String> = roles
        .iter()
        .flat_map(|role| sources.iter().map(move |s| mask_schema(role, s)))
        .collect();
    Ok(Plan {
        catalog: rows
            .into_iter()
            .filter(|row| !masking.contains(&row.get::<_, String>(0)))
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
        Provision::Catalog => catalog(&client, roles, schemas).await,
        Provision::Apply(lock) => apply(&client, protection, roles, schemas, lock).await,
    };
    done.map_err(ProvisionError::Refused)
}
