//! The verification of a protected database's role (docs/data-protection.md, "How it is
//! enforced"): on a database with data protection policies, a run's session is checked, as the
//! role it logged in as, to be unable to read any protected column by any way PostgreSQL offers,
//! before any statement of the run is parsed, planned or run. What would let it is listed with
//! the statement that removes it, and nothing runs.
//!
//! The full check reads the catalog (a dozen joins); so a session keeps what it verified, with
//! a fingerprint of everything the check depends on (relations, their columns, ACLs, owners,
//! inheritance, view rules, functions, memberships, the role's attributes and settings) and the
//! snapshot it was read in, and checks again whenever the fingerprint or the policies changed.
//! Each run first asks whether anything may have changed ([`UNCHANGED`], one prepared query):
//! a snapshot equal to the verified one sees exactly the same committed transactions, hence
//! the same catalog, and answers at once; any other snapshot (something was written anywhere
//! since) has the fingerprint read again, in the same statement, and compared.

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use tokio_postgres::types::ToSql;

use super::{Session, database_error};
use crate::model::ColumnAction;
use crate::run::RunError;
use crate::run::protect::{Problem, ProtectedColumn, Protection, Refused};

/// The prefix of a role's masking schema for a source schema: `<role>_mask_<schema>`.
pub(super) const MASK_SCHEMA: &str = "_mask_";

/// The masking schema of `schema` for `role`.
pub(super) fn mask_schema(role: &str, schema: &str) -> String {
    format!("{role}{MASK_SCHEMA}{schema}")
}

/// What a verified session reads its statements' columns with.
#[derive(Debug)]
pub(super) struct Kept {
    /// The verified masking views, by oid: the source table's schema and name.
    pub(super) masks: HashMap<u32, (String, String)>,
    /// The policies' columns and those protected as they are (a partition or child, a
    /// parent, a generated column computed from one), each by its own schema and table.
    pub(super) effective: Protection,
}

/// What a session verified: the policies and the catalog it verified them against, and its
/// masking views.
#[derive(Clone, Debug)]
pub(super) struct Verified {
    /// A digest of the policies' columns.
    policies: [u8; 32],
    /// The catalog's fingerprint ([`fingerprint!`]) when it was verified.
    fingerprint: String,
    /// The snapshot (`txid_current_snapshot()`) of the latest check that found the catalog's
    /// fingerprint unchanged: a run in an equal snapshot sees the same catalog.
    snapshot: String,
    /// What the session verified: its masking views and the protection as the catalog has it.
    kept: Arc<Kept>,
    /// Whether the last check found the snapshot as verified: the next check is then the
    /// quiet one ([`SAME_SNAPSHOT`]).
    quiet: bool,
    /// Whether the server is a hot standby: its snapshots prove nothing
    /// ([`FINGERPRINT_ONLY`]).
    standby: bool,
}

/// Everything the verification reads, as one digest (a scalar subquery, so that a statement
/// that may not need it reads nothing of it): each catalog row's identity and `xmin` (the
/// transaction that wrote its current version, so any change to a row changes it: a grant, a
/// redefined view or function, a new column, a membership), the role's attributes and
/// settings, and who the session is. Temporary objects (each session's own) are left out, so
/// that a session's own temporary tables don't make every other session verify again.
macro_rules! fingerprint {
    () => {
        "(SELECT md5(concat_ws('|',
 (SELECT string_agg(oid::text || ':' || xmin::text, ',' ORDER BY oid) FROM pg_class
  WHERE relpersistence <> 't' AND (oid >= 16384 OR relacl IS NOT NULL)),
 (SELECT string_agg(a.attrelid::text || '.' || a.attnum::text || ':' || a.xmin::text, ',')
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  WHERE a.attrelid >= 16384 AND a.attnum > 0 AND c.relpersistence <> 't'),
 (SELECT string_agg(inhrelid::text || '>' || inhparent::text || ':' || xmin::text, ',')
  FROM pg_inherits),
 (SELECT string_agg(oid::text || ':' || xmin::text, ',' ORDER BY oid) FROM pg_rewrite
  WHERE oid >= 16384),
 (SELECT string_agg(oid::text || ':' || xmin::text, ',' ORDER BY oid) FROM pg_proc
  WHERE (oid >= 16384 OR proacl IS NOT NULL) AND pronamespace <> pg_my_temp_schema()),
 (SELECT string_agg(roleid::text || '>' || member::text || ':' || xmin::text, ',')
  FROM pg_auth_members),
 (SELECT concat_ws(',', rolsuper, rolbypassrls, rolreplication, rolconfig) FROM pg_roles
  WHERE rolname = current_user),
 (SELECT string_agg(oid::text || ':' || rolsuper::text || rolinherit::text || rolbypassrls::text,
   ',' ORDER BY oid) FROM pg_roles),
 (SELECT string_agg(oid::text || ':' || xmin::text, ',' ORDER BY oid) FROM pg_namespace
  WHERE nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'),
 (SELECT xmin::text FROM pg_database WHERE datname = current_database()),
 (SELECT string_agg(oid::text || ':' || xmin::text, ',' ORDER BY oid) FROM pg_foreign_server),
 (SELECT string_agg(concat_ws(',', umid, umuser), ';' ORDER BY umid) FROM pg_user_mappings),
 session_user, current_user)))"
    };
}

/// The snapshot and the catalog's fingerprint, read in that snapshot (one statement), and
/// whether the server is a hot standby.
const CURRENT: &str = concat!(
    "SELECT txid_current_snapshot()::text, ",
    fingerprint!(),
    ", pg_is_in_recovery()"
);

/// [`UNCHANGED`] on a hot standby: there `txid_current_snapshot()` leaves out transactions in
/// progress on the primary, so an equal snapshot is not the same catalog (a `GRANT` committed
/// since can hide behind it). The fingerprint is read at every check. `$1` is not read.
const FINGERPRINT_ONLY: &str = concat!(
    "SELECT CASE WHEN ",
    fingerprint!(),
    " = $2 THEN now.s ELSE current_setting('dbconsole.catalog_changed') END \
     FROM (SELECT txid_current_snapshot()::text AS s, $1::text AS unused) AS now"
);

/// The protected columns as the catalog has them, as common table expressions (the policies'
/// columns are `$1`..`$6`: schema, table, column, policy, action, the name as written):
/// `policy`, `named` (the columns the policies name), `down` and `up` (the same column in each
/// partition or child, and in each parent), `linked` (those, one row each), `prot` (those and
/// each generated column computed from one: relid, attnum, attname, policy, action, ord (the
/// policy column's place, from 1), how) and
/// `dep` (every view or materialized view that reads one, transitively).
macro_rules! protected_ctes {
    () => {
        "policy AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
    WITH ORDINALITY AS p(nsp, rel, col, policy, action, named, ord)
),
named AS (
  SELECT c.oid AS relid, a.attname, p.policy, p.action, p.ord
  FROM policy p
  JOIN pg_attribute a ON lower(a.attname) = lower(p.col) AND a.attnum > 0 AND NOT a.attisdropped
  JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p', 'f', 'm') AND c.oid >= 16384
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE (p.nsp IS NULL OR lower(n.nspname) = lower(p.nsp))
    AND (p.rel IS NULL OR lower(c.relname) = lower(p.rel))
),
down AS (
  SELECT relid, attname, policy, action, ord, 'named'::text AS how FROM named
  UNION
  SELECT i.inhrelid, down.attname, down.policy, down.action, down.ord, 'a partition or child'
  FROM down JOIN pg_inherits i ON i.inhparent = down.relid
),
up AS (
  SELECT relid, attname, policy, action, ord, 'named'::text AS how FROM named
  UNION
  SELECT i.inhparent, up.attname, up.policy, up.action, up.ord, 'the parent of a protected table'
  FROM up JOIN pg_inherits i ON i.inhrelid = up.relid
),
linked AS (
  SELECT DISTINCT ON (l.relid, a.attnum, l.ord) l.relid, a.attnum, a.attname, l.policy,
    l.action, l.ord, l.how
  FROM (SELECT * FROM down UNION SELECT * FROM up) l
  JOIN pg_attribute a ON a.attrelid = l.relid AND a.attname = l.attname AND NOT a.attisdropped
  ORDER BY l.relid, a.attnum, l.ord, l.how = 'named' DESC
),
prot AS (
  SELECT relid, attnum, attname, policy, action, ord, how FROM linked
  UNION
  SELECT g.attrelid, g.attnum, g.attname, l.policy, l.action, l.ord,
    format('computed from %I', l.attname)
  FROM linked l
  JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.refclassid = 'pg_class'::regclass
   AND d.refobjid = l.relid AND d.refobjsubid = l.attnum
  JOIN pg_attrdef ad ON ad.oid = d.objid
  JOIN pg_attribute g ON g.attrelid = ad.adrelid AND g.attnum = ad.adnum AND g.attgenerated <> ''
   AND NOT g.attisdropped
),
dep AS (
  SELECT DISTINCT r.ev_class AS view
  FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
  JOIN prot ON d.refobjid = prot.relid AND (d.refobjsubid = prot.attnum OR d.refobjsubid = 0)
  WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
    AND r.ev_class <> d.refobjid
  UNION
  SELECT r.ev_class
  FROM dep JOIN pg_depend d ON d.refobjid = dep.view AND d.refclassid = 'pg_class'::regclass
  JOIN pg_rewrite r ON r.oid = d.objid
  WHERE d.classid = 'pg_rewrite'::regclass AND r.ev_class <> dep.view
)"
    };
}

/// The parameters `$1`..`$6` of [`protected_ctes!`]: each policy column's schema, table,
/// column, policy, action and name as written, in the protection's order.
pub(super) struct PolicyParams {
    schemas: Vec<Option<String>>,
    tables: Vec<Option<String>>,
    columns: Vec<String>,
    policies: Vec<String>,
    actions: Vec<String>,
    named: Vec<String>,
}

impl PolicyParams {
    pub(super) fn of(protection: &Protection) -> Self {
        let all = &protection.columns;
        Self {
            schemas: all.iter().map(|c| c.schema.clone()).collect(),
            tables: all.iter().map(|c| c.table.clone()).collect(),
            columns: all.iter().map(|c| c.column.clone()).collect(),
            policies: all.iter().map(|c| c.policy.clone()).collect(),
            actions: all.iter().map(|c| c.action.as_str().to_owned()).collect(),
            named: all.iter().map(|c| c.named.clone()).collect(),
        }
    }

    pub(super) fn args(&self) -> [&(dyn ToSql + Sync); 6] {
        [
            &self.schemas,
            &self.tables,
            &self.columns,
            &self.policies,
            &self.actions,
            &self.named,
        ]
    }
}

/// Every way the session's role could read a protected column, each with the statement that
/// removes it (or NULL). The policies' columns are `$1`..`$6`: schema (NULL: any), table
/// (NULL: any), column, policy, action (`hide`, `mask`) and the name as the policy wrote it.
///
/// Protection follows the data, not only the names: a column a policy names (`named`) protects
/// the column of that name in each partition or inheritance child below it (`down`: a child's
/// rows are its own) and in each parent above it (`up`: reading the parent reads the child's
/// rows), and each generated column computed from any of those (`prot`). Rows of kind
/// `derived` list those the policies don't name (as JSON: schema, table, column, policy,
/// action, how), so that masking views and result columns treat them as their source; rows of
/// kind `unmatched` are policy columns that match no column of a table (a view's, a typo, a
/// dropped column): never protected, so every run is refused until the policy names the table.
/// A row of kind `view` is a view the role may read that reads a protected column with its
/// owner's rights: the caller decides whether it is a masking view.
const PROBLEMS: &str = concat!("\
WITH RECURSIVE
me AS (
  SELECT oid, rolname, rolsuper, rolbypassrls, rolreplication, rolconfig
  FROM pg_roles WHERE rolname = current_user
),
", protected_ctes!(), ",
reach AS (
  SELECT p.oid, format('can read %s', (SELECT format('%s.%I', prot.relid::regclass, prot.attname)
      FROM prot WHERE has_column_privilege(p.proowner, prot.relid, prot.attnum, 'SELECT')
      LIMIT 1)) AS how
  FROM pg_proc p
  WHERE p.prosecdef
    AND EXISTS (SELECT 1 FROM prot
                WHERE has_column_privilege(p.proowner, prot.relid, prot.attnum, 'SELECT'))
  UNION
  SELECT p.oid, format('may read the view %s, which reads a protected column', v.oid::regclass)
  FROM pg_proc p JOIN dep ON true JOIN pg_class v ON v.oid = dep.view
  WHERE p.prosecdef
    AND (has_table_privilege(p.proowner, v.oid, 'SELECT')
         OR has_any_column_privilege(p.proowner, v.oid, 'SELECT'))
  UNION
  SELECT p.oid, format('may run %s, itself such a function', reach.oid::regprocedure)
  FROM reach JOIN pg_proc p ON p.prosecdef AND p.oid <> reach.oid
   AND has_function_privilege(p.proowner, reach.oid, 'EXECUTE')
)
SELECT 'derived' AS kind, json_build_array(n.nspname, c.relname, prot.attname, prot.ord,
    prot.how)::text AS problem, NULL AS fix
FROM prot JOIN pg_class c ON c.oid = prot.relid JOIN pg_namespace n ON n.oid = c.relnamespace
UNION ALL
SELECT 'unmatched', format('policy \"%s\" names %s, which is no column of a table%s', p.policy,
    p.named, coalesce((
      SELECT format(' (%s is a %s: name the column of the table it reads)', c.oid::regclass,
        CASE c.relkind WHEN 'v' THEN 'view' ELSE 'materialized view' END)
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('v', 'm') AND p.rel IS NOT NULL AND lower(c.relname) = lower(p.rel)
        AND (p.nsp IS NULL OR lower(n.nspname) = lower(p.nsp))
      LIMIT 1), '')),
  p.named
FROM policy p WHERE NOT EXISTS (SELECT 1 FROM named WHERE named.ord = p.ord)
UNION ALL
SELECT 'partition', format('the partition key of %s holds %I, which policy \"%s\" protects: the \
names of its partitions and their row counts (pg_class.reltuples) are readable by every role',
    pt.partrelid::regclass, prot.attname, prot.policy),
  format('partition %s by a column no policy protects', pt.partrelid::regclass)
FROM prot JOIN pg_partitioned_table pt ON pt.partrelid = prot.relid
WHERE prot.attnum = ANY(pt.partattrs::int2[])
   OR (pt.partexprs IS NOT NULL
       AND position(lower(prot.attname) in lower(pg_get_partkeydef(pt.partrelid))) > 0)
UNION ALL
SELECT 'attribute' AS kind, format('the role is %s', concat_ws(', ',
    CASE WHEN rolsuper THEN 'a superuser' END,
    CASE WHEN rolbypassrls THEN 'allowed to bypass row-level security' END,
    CASE WHEN rolreplication THEN 'a replication role' END)) AS problem,
  format('ALTER ROLE %I NOSUPERUSER NOBYPASSRLS NOREPLICATION', rolname) AS fix
FROM me WHERE rolsuper OR rolbypassrls OR rolreplication
UNION ALL
SELECT 'settings', format('the role has settings of its own (%s)', array_to_string(rolconfig, ', ')),
  format('ALTER ROLE %I RESET ALL', rolname)
FROM me WHERE rolconfig IS NOT NULL
UNION ALL
SELECT 'session', format('the session runs as %I but logged in as %I', current_user, session_user),
  NULL
WHERE current_user <> session_user
UNION ALL
SELECT 'member', format('the role is a member of %I (SET ROLE reaches its rights)', r.rolname),
  format('REVOKE %I FROM %I', r.rolname, me.rolname)
FROM me JOIN pg_auth_members m ON m.member = me.oid JOIN pg_roles r ON r.oid = m.roleid
UNION ALL
SELECT 'column', format('the role can read %s.%I (policy \"%s\"%s)', prot.relid::regclass,
    prot.attname, prot.policy, CASE WHEN prot.how <> 'named' THEN ': ' || prot.how END),
  format('REVOKE SELECT ON %s FROM %I, PUBLIC; GRANT SELECT (%s) ON %s TO %I',
    prot.relid::regclass, me.rolname,
    (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) FROM pg_attribute a
     WHERE a.attrelid = prot.relid AND a.attnum > 0 AND NOT a.attisdropped
       AND NOT EXISTS (SELECT 1 FROM prot p2 WHERE p2.relid = a.attrelid AND p2.attnum = a.attnum)),
    prot.relid::regclass, me.rolname)
FROM prot CROSS JOIN me WHERE has_column_privilege(prot.relid, prot.attnum, 'SELECT')
UNION ALL
SELECT 'write', format('the role may change %s (a protected database''s role reads only)',
    c.oid::regclass),
  format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON %s FROM %I, PUBLIC',
    c.oid::regclass, me.rolname)
FROM pg_class c CROSS JOIN me
WHERE c.oid >= 16384 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relpersistence <> 't'
  AND (has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
       OR has_any_column_privilege(c.oid, 'INSERT, UPDATE, REFERENCES'))
UNION ALL
SELECT 'view', v.oid::text, NULL
FROM dep JOIN pg_class v ON v.oid = dep.view
WHERE (has_table_privilege(v.oid, 'SELECT') OR has_any_column_privilege(v.oid, 'SELECT'))
  AND (v.relkind = 'm' OR NOT EXISTS (
    SELECT 1 FROM unnest(coalesce(v.reloptions, '{}')) o
    WHERE lower(o) IN ('security_invoker=true', 'security_invoker=on', 'security_invoker=1',
                       'security_invoker=yes')))
UNION ALL
SELECT 'definer', format('%s runs with the rights of %I, who %s', p.oid::regprocedure,
    pg_get_userbyid(p.proowner),
    (SELECT string_agg(how, '; ') FROM (SELECT DISTINCT how FROM reach r WHERE r.oid = p.oid) h)),
  format('REVOKE EXECUTE ON FUNCTION %s FROM %I, PUBLIC', p.oid::regprocedure, me.rolname)
FROM pg_proc p CROSS JOIN me
WHERE p.oid IN (SELECT oid FROM reach) AND has_function_privilege(p.oid, 'EXECUTE')
UNION ALL
SELECT 'function', format('the role may run %s, which PUBLIC may not', p.oid::regprocedure),
  format('REVOKE EXECUTE ON FUNCTION %s FROM %I', p.oid::regprocedure, me.rolname)
FROM pg_proc p CROSS JOIN me
WHERE p.oid < 16384 AND p.proacl IS NOT NULL AND has_function_privilege(p.oid, 'EXECUTE')
  AND NOT EXISTS (SELECT 1 FROM aclexplode(p.proacl) x
                  WHERE x.grantee = 0 AND x.privilege_type = 'EXECUTE')
UNION ALL
SELECT 'foreign', format('the role may use foreign server %I', s.srvname),
  format('REVOKE USAGE ON FOREIGN SERVER %I FROM %I, PUBLIC', s.srvname, me.rolname)
FROM pg_foreign_server s CROSS JOIN me WHERE has_server_privilege(s.oid, 'USAGE')
UNION ALL
SELECT 'mapping', format('a user mapping for %s on foreign server %I', u.usename, u.srvname),
  format('DROP USER MAPPING FOR %s SERVER %I',
    CASE WHEN u.umuser = 0 THEN 'PUBLIC' ELSE quote_ident(u.usename) END, u.srvname)
FROM pg_user_mappings u CROSS JOIN me WHERE u.umuser IN (0, me.oid)
UNION ALL
SELECT 'create', format('the role may create objects in schema %I', n.nspname),
  format('REVOKE CREATE ON SCHEMA %I FROM %I, PUBLIC', n.nspname, me.rolname)
FROM pg_namespace n CROSS JOIN me
WHERE has_schema_privilege(n.oid, 'CREATE') AND n.nspname NOT LIKE 'pg\\_temp\\_%'
  AND n.nspname NOT LIKE 'pg\\_toast\\_temp\\_%'
UNION ALL
SELECT 'create', 'the role may create schemas in the database',
  format('REVOKE CREATE ON DATABASE %I FROM %I, PUBLIC', current_database(), me.rolname)
FROM me WHERE has_database_privilege(current_database(), 'CREATE')
UNION ALL
SELECT 'owner', format('the role owns %s', c.oid::regclass),
  format('ALTER TABLE %s OWNER TO <another role>', c.oid::regclass)
FROM pg_class c CROSS JOIN me WHERE c.relowner = me.oid AND c.relpersistence <> 't'
UNION ALL
SELECT 'owner', format('the role owns %s', p.oid::regprocedure),
  format('ALTER ROUTINE %s OWNER TO <another role>', p.oid::regprocedure)
FROM pg_proc p CROSS JOIN me WHERE p.proowner = me.oid AND p.pronamespace <> pg_my_temp_schema()
UNION ALL
SELECT 'owner', format('the role owns schema %I', n.nspname),
  format('ALTER SCHEMA %I OWNER TO <another role>', n.nspname)
FROM pg_namespace n CROSS JOIN me WHERE n.nspowner = me.oid
UNION ALL
SELECT 'stats', 'pg_stats_ext shows sample values of columns the role can''t read \
(CVE-2024-4317): update PostgreSQL (15.7, 14.12, 13.15, 12.19 or later) and run the fix script of \
its release notes', NULL
WHERE pg_get_viewdef('pg_catalog.pg_stats_ext'::regclass) NOT LIKE '%pg_has_role%'
   OR pg_get_viewdef('pg_catalog.pg_stats_ext_exprs'::regclass) NOT LIKE '%pg_has_role%'");

/// A view the role may read that reads a protected column: its schema and name, the relations
/// its rule reads, and whether row-level security is on for them.
const VIEW: &str = "\
SELECT vn.nspname::text, v.relname::text,
  (SELECT array_agg(DISTINCT d.refobjid::int8) FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
   WHERE r.ev_class = v.oid AND d.classid = 'pg_rewrite'::regclass
     AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> v.oid)
FROM pg_class v JOIN pg_namespace vn ON vn.oid = v.relnamespace
WHERE v.oid = $1::int8::oid AND v.relkind = 'v'";

/// A relation's schema, name, row-level security and columns in order.
const BASE: &str = "\
SELECT n.nspname::text, c.relname::text, c.relrowsecurity,
  array_agg(a.attname::text ORDER BY a.attnum)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.oid = $1::int8::oid
GROUP BY n.nspname, c.relname, c.relrowsecurity";

/// `$1` (the snapshot) when the catalog is what was verified: the snapshot equals the verified
/// one (`$1`: nothing committed since, anywhere), or the fingerprint read in it equals the
/// verified one (`$2`). The fingerprint is read only when the snapshots differ (PostgreSQL
/// evaluates `OR` left to right, and a scalar subquery when first needed). When the catalog
/// changed it fails (SQLSTATE 42704, naming [`CHANGED_SETTING`]): sent in a panel's
/// transaction ahead of its statement, PostgreSQL then refuses the statement before planning it.
const UNCHANGED: &str = concat!(
    "SELECT CASE WHEN now.s = $1 OR ",
    fingerprint!(),
    " = $2 THEN now.s ELSE current_setting('dbconsole.catalog_changed') END \
     FROM (SELECT txid_current_snapshot()::text AS s) AS now"
);

/// The setting [`UNCHANGED`] names when the catalog changed: it is never set.
const CHANGED_SETTING: &str = "dbconsole.catalog_changed";

/// [`UNCHANGED`] for a session whose last check found the snapshot as verified (a quiet
/// database): `$1` when the snapshot still is, else it fails naming [`MOVED_SETTING`], and the
/// run checks again with [`UNCHANGED`]. Its plan holds none of the fingerprint's subqueries,
/// which PostgreSQL sets up at every execution even when it reads none of them (that setup was
/// most of a protected panel's cost on the database). `$2` is not read.
const SAME_SNAPSHOT: &str = "\
SELECT CASE WHEN now.s = $1 THEN now.s ELSE current_setting('dbconsole.snapshot_moved') END \
FROM (SELECT txid_current_snapshot()::text AS s, $2::text AS unused) AS now";

/// The setting [`SAME_SNAPSHOT`] names when the snapshot moved: it is never set.
const MOVED_SETTING: &str = "dbconsole.snapshot_moved";

/// The check that the session's verification under `protection` still holds
/// ([`UNCHANGED`]) and its parameters: sent alone by [`ensure`], or in a panel's
/// transaction ahead of its statement. `None` when the session must verify first.
pub(super) async fn kept(
    session: &mut Session,
    protection: &Protection,
) -> Result<Option<(tokio_postgres::Statement, [String; 2])>, RunError> {
    let Some(verified) = &session.verified else {
        return Ok(None);
    };
    if verified.policies != digest(protection) {
        return Ok(None);
    }
    let params = [verified.snapshot.clone(), verified.fingerprint.clone()];
    let check = if verified.standby {
        FINGERPRINT_ONLY
    } else if verified.quiet {
        SAME_SNAPSHOT
    } else {
        UNCHANGED
    };
    let statement = session
        .prepare(check)
        .await
        .map_err(|e| database_error(&e))?;
    Ok(Some((statement, params)))
}

/// What the check sent ahead of a statement ([`kept`]) answered.
pub(super) enum Verdict {
    /// The catalog is what was verified; the snapshot it was read in ([`seen`]).
    Unchanged(String),
    /// It changed: nothing of the statement ran ([`forget`], then verify again).
    Changed,
    /// The snapshot moved since the quiet check ([`SAME_SNAPSHOT`]): nothing of the statement
    /// ran ([`moved`], then check again with the fingerprint).
    Moved,
    /// The check itself failed.
    Failed(RunError),
}

/// The [`Verdict`] of the check's `answer`.
pub(super) fn verdict(answer: Result<&tokio_postgres::Row, &tokio_postgres::Error>) -> Verdict {
    let error = match answer {
        Ok(row) => return Verdict::Unchanged(row.get(0)),
        Err(error) => error,
    };
    // The check fails naming the setting of what it found (neither is ever set).
    let named = |setting: &str| {
        error.as_db_error().is_some_and(|db| {
            db.code() == &tokio_postgres::error::SqlState::UNDEFINED_OBJECT
                && db.message().contains(setting)
        })
    };
    if named(CHANGED_SETTING) {
        Verdict::Changed
    } else if named(MOVED_SETTING) {
        Verdict::Moved
    } else {
        Verdict::Failed(database_error(error))
    }
}

/// The session's verification held in `snapshot`: the next check compares with it, the quiet
/// way ([`SAME_SNAPSHOT`]) when the snapshot had not moved since the last check.
pub(super) fn seen(session: &mut Session, snapshot: String) {
    if let Some(verified) = session.verified.as_mut() {
        verified.quiet = !verified.standby && verified.snapshot == snapshot;
        verified.snapshot = snapshot;
    }
}

/// The snapshot moved since the session's quiet check: the next check reads the fingerprint.
pub(super) fn moved(session: &mut Session) {
    if let Some(verified) = session.verified.as_mut() {
        verified.quiet = false;
    }
}

/// The session forgets what it verified (and its statements' columns, read under it).
pub(super) fn forget(session: &mut Session) {
    session.verified = None;
    session.treatments.clear();
}

/// Checks that `session`'s role can't read a column `protection` protects (again only when the
/// policies or the catalog changed since the session last verified it), and answers its
/// verified masking views (by oid: the table each masks) and the protection as the catalog has
/// it; refused, naming what to change, when it can. A new verification forgets what the
/// session kept of its statements' columns.
pub(super) async fn ensure(
    session: &mut Session,
    protection: &Protection,
) -> Result<Arc<Kept>, RunError> {
    // At most twice: the quiet check, then the fingerprint's when the snapshot moved.
    while let Some((unchanged, [snapshot, fingerprint])) = kept(session, protection).await? {
        let answer = session
            .client
            .query_one(&unchanged, &[&snapshot, &fingerprint])
            .await;
        match verdict(answer.as_ref()) {
            Verdict::Unchanged(now) => {
                seen(session, now);
                if let Some(verified) = &session.verified {
                    return Ok(Arc::clone(&verified.kept));
                }
            }
            Verdict::Moved => {
                moved(session);
                continue;
            }
            Verdict::Changed => {}
            Verdict::Failed(error) => return Err(error),
        }
        break;
    }
    forget(session);
    let current = session
        .prepare(CURRENT)
        .await
        .map_err(|e| database_error(&e))?;
    let row = session
        .client
        .query_one(&current, &[])
        .await
        .map_err(|e| database_error(&e))?;
    let (snapshot, fingerprint, standby): (String, String, bool) =
        (row.get(0), row.get(1), row.get(2));
    let kept = Arc::new(verify(session, protection).await?);
    // What was verified is what the catalog was before the check: a change made while it ran
    // makes the next run check again.
    session.verified = Some(Verified {
        policies: digest(protection),
        fingerprint,
        snapshot,
        kept: Arc::clone(&kept),
        quiet: !standby,
        standby,
    });
    Ok(kept)
}

fn digest(protection: &Protection) -> [u8; 32] {
    let mut hash = Sha256::new();
    for column in &protection.columns {
        for part in [
            column.schema.as_deref().unwrap_or("\u{0}"),
            column.table.as_deref().unwrap_or("\u{0}"),
            &column.column,
            column.action.as_str(),
            &column.mask.encode().unwrap_or_default(),
            &column.policy,
        ] {
            hash.update(part.as_bytes());
            hash.update([0xff]);
        }
    }
    hash.finalize().into()
}

/// The whole check; `Ok` with the masking views the role may read and the protection as the
/// catalog has it.
async fn verify(session: &mut Session, protection: &Protection) -> Result<Kept, RunError> {
    let params = PolicyParams::of(protection);
    let rows = session
        .client
        .query(PROBLEMS, &params.args())
        .await
        .map_err(|e| database_error(&e))?;
    let role: String = session
        .client
        .query_one("SELECT session_user::text", &[])
        .await
        .map_err(|e| database_error(&e))?
        .get(0);
    let mut problems: Vec<Problem> = Vec::new();
    let mut unmatched = Vec::new();
    let mut views = Vec::new();
    let mut effective = protection.clone();
    for row in rows {
        let kind: String = row.get(0);
        let problem: String = row.get(1);
        let fix: Option<String> = row.get(2);
        match kind.as_str() {
            "view" => views.push(problem.parse().unwrap_or(0)),
            "derived" => effective.columns.extend(derived(&problem, protection)),
            "unmatched" => {
                unmatched.push(fix.unwrap_or_default());
                problems.push((problem, None));
            }
            _ => problems.push((problem, fix)),
        }
    }
    let mut masks = HashMap::new();
    for oid in views {
        match masking_view(session, oid, &role, &effective).await? {
            Ok(source) => {
                masks.insert(oid, source);
            }
            Err(problem) => problems.push(problem),
        }
    }
    if problems.is_empty() {
        return Ok(Kept { masks, effective });
    }
    let mut refused = Refused::unverified(
        protection,
        &format!("the role {role}"),
        &problems,
        "as an owner or superuser",
    );
    refused.unmatched = unmatched;
    Err(RunError::Protected(refused))
}

/// A protected column as the catalog has it ([`PROBLEMS`]' rows of kind `derived`: its schema,
/// table and column as the catalog names them, the place of the policy column it comes from
/// (from 1) and how), as a protected column of its own table: the policy column's policy,
/// action and mask, but the full mask for a generated column (a partial mask of a column
/// computed from the protected one could show the protected one's characters).
pub(super) fn derived(row: &str, protection: &Protection) -> Option<ProtectedColumn> {
    let (schema, table, column, ord, how): (String, String, String, usize, String) =
        serde_json::from_str(row).ok()?;
    let source = protection.columns.get(ord.checked_sub(1)?)?;
    let generated = how.starts_with("computed from");
    Some(ProtectedColumn {
        policy: source.policy.clone(),
        database_id: source.database_id.clone(),
        mask: if generated {
            crate::model::Mask::default()
        } else {
            source.mask
        },
        exempt: source.exempt.clone(),
        named: if how == "named" {
            source.named.clone()
        } else {
            format!("{schema}.{table}.{column} ({how})")
        },
        schema: Some(schema),
        table: Some(table),
        column,
        action: source.action,
    })
}

/// Whether the view `oid`, which reads a protected column with its owner's rights, is the role's
/// masking view of one table: in `<role>_mask_<schema>`, named as the table, over that table
/// alone (without row-level security), and defined exactly as dbconsole defines it
/// ([`masking_view_sql`]). `Ok` with the table's schema and name; `Err` with the problem.
async fn masking_view(
    session: &mut Session,
    oid: u32,
    role: &str,
    protection: &Protection,
) -> Result<Result<(String, String), Problem>, RunError> {
    let client = &session.client;
    let found = client
        .query_opt(VIEW, &[&i64::from(oid)])
        .await
        .map_err(|e| database_error(&e))?;
    // `qualified`: the relation's name as SQL writes it.
    let revoke = |qualified: &str| {
        (
            format!(
                "the role may read the view or materialized view {qualified}, which reads a \
                 protected column with its owner's rights"
            ),
            Some(format!(
                "REVOKE SELECT ON {qualified} FROM {}, PUBLIC, or ALTER VIEW … SET \
                 (security_invoker = true)",
                quote(role)
            )),
        )
    };
    let Some(view) = found else {
        // A materialized view (it stores what it read) or a relation gone since.
        let name: Option<String> = client
            .query_opt("SELECT $1::int8::oid::regclass::text", &[&i64::from(oid)])
            .await
            .map_err(|e| database_error(&e))?
            .map(|row| row.get(0));
        return Ok(Err(revoke(&name.unwrap_or_else(|| oid.to_string()))));
    };
    let (schema, name): (String, String) = (view.get(0), view.get(1));
    let qualified = format!("{}.{}", quote(&schema), quote(&name));
    let bases: Vec<i64> = view.get::<_, Option<Vec<i64>>>(2).unwrap_or_default();
    let Some(source_schema) = schema.strip_prefix(&format!("{role}{MASK_SCHEMA}")) else {
        return Ok(Err(revoke(&qualified)));
    };
    let [base] = bases[..] else {
        return Ok(Err(revoke(&qualified)));
    };
    let Some(table) = client
        .query_opt(BASE, &[&base])
        .await
        .map_err(|e| database_error(&e))?
    else {
        return Ok(Err(revoke(&qualified)));
    };
    let (base_schema, base_name, row_security, columns): (String, String, bool, Vec<String>) =
        (table.get(0), table.get(1), table.get(2), table.get(3));
    if base_schema != source_schema || base_name != name {
        return Ok(Err(revoke(&qualified)));
    }
    if row_security {
        return Ok(Err((
            format!(
                "the masking view {qualified} reads {}.{}, which has row-level security: a view \
                 reads it with its owner's rights, so it can't mask it",
                quote(&base_schema),
                quote(&base_name)
            ),
            Some(format!("DROP VIEW {qualified}")),
        )));
    }
    let expected = masking_view_sql(&base_schema, &base_name, &columns, protection);
    // Compared as PostgreSQL prints it, without writing anything (a hot standby verifies too),
    // printed with pg_catalog alone on the search path: a function of any other schema is
    // printed with its schema, and so differs from the definition's.
    let transaction = session
        .client
        .transaction()
        .await
        .map_err(|e| database_error(&e))?;
    let printed = async {
        transaction
            .batch_execute("SET LOCAL search_path = pg_catalog, pg_temp")
            .await?;
        transaction
            .query_one("SELECT pg_get_viewdef($1::int8::oid)", &[&i64::from(oid)])
            .await
            .map(|row| row.get::<_, String>(0))
    }
    .await;
    let _ = transaction.rollback().await;
    let printed = printed.map_err(|e| database_error(&e))?;
    if super::viewdef::same_view(&printed, &expected) {
        return Ok(Ok((base_schema, base_name)));
    }
    Ok(Err((
        format!("the masking view {qualified} is not defined as dbconsole defines it"),
        // Not CREATE OR REPLACE: PostgreSQL refuses to drop or reorder a view's columns.
        Some(format!(
            "DROP VIEW {qualified}; CREATE VIEW {qualified} AS {expected}; GRANT SELECT ON \
             {qualified} TO {}",
            quote(role)
        )),
    )))
}

/// The definition of the masking view of `schema.table` (whose columns are `columns`, in order)
/// under `protection`: every column but the hidden ones, the masked ones as the mask (NULL
/// stays NULL).
pub(super) fn masking_view_sql(
    schema: &str,
    table: &str,
    columns: &[String],
    protection: &Protection,
) -> String {
    let items: Vec<String> = columns
        .iter()
        .filter_map(|column| match protection.find(schema, table, column) {
            Some(p) if p.action == ColumnAction::Hide => None,
            Some(p) => Some(format!(
                "{} AS {}",
                mask_sql(&quote(column), p.mask),
                quote(column)
            )),
            None => Some(quote(column)),
        })
        .collect();
    format!(
        "SELECT {} FROM {}.{}",
        items.join(", "),
        quote(schema),
        quote(table)
    )
}

/// `name` as a quoted identifier.
pub(super) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The expression a masking view selects for the masked column `c` (quoted): NULL stays NULL,
/// anything else becomes its mask's text.
fn mask_sql(c: &str, mask: crate::model::Mask) -> String {
    use crate::model::MaskKind;
    let full = crate::run::protect::MASK;
    match mask.kind {
        MaskKind::Full => format!("CASE WHEN {c} IS NULL THEN NULL ELSE '{full}'::text END"),
        MaskKind::Null => "NULL::text".to_owned(),
        MaskKind::Email => format!(
            "CASE WHEN {c} IS NULL THEN NULL WHEN strpos({c}::text, '@') > 0 THEN \
             regexp_replace({c}::text, '^.*@', '{full}@') ELSE '{full}'::text END"
        ),
        // A value no longer than what is kept would be shown whole: it is the full mask.
        MaskKind::Partial => format!(
            "CASE WHEN {c} IS NULL THEN NULL WHEN length({c}::text) <= {kept} THEN '{full}'::text \
             ELSE left({c}::text, {first}) || '{full}' || right({c}::text, {last}) END",
            kept = u32::from(mask.keep_first) + u32::from(mask.keep_last),
            first = mask.keep_first,
            last = mask.keep_last,
        ),
    }
}
