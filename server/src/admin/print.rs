//! Printing key replies for people: what `dbconsole keys` writes on standard output (a created
//! key with its secret, a table of keys, what was revoked), and a failed reply as the error.

use std::io::{self, Write};

use chrono::DateTime;
use dbconsole_core::model::Timestamp;
use dbconsole_core::{CredentialKind, Secret};
use thiserror::Error;

use super::protocol::{AdminReply, Failure, KeyInfo, SessionInfo};

/// Why [`print_reply`] printed nothing, or not everything.
#[derive(Debug, Error)]
pub enum PrintError {
    /// The reply was a [`AdminReply::Failed`]: its message is the error.
    #[error("{message}")]
    Refused {
        /// Why, for programs.
        error: Failure,
        /// Why, for people.
        message: String,
    },
    /// Writing failed.
    #[error("cannot write to standard output: {0}")]
    Write(#[from] io::Error),
}

/// Prints a reply for people on `out`; a [`AdminReply::Failed`] is the error instead.
pub fn print_reply(reply: &AdminReply, out: &mut impl Write) -> Result<(), PrintError> {
    match reply {
        AdminReply::Created { key, secret } => print_created(key, secret, out)?,
        AdminReply::Listed { keys } => print_table(keys, out)?,
        AdminReply::Revoked { key } => writeln!(
            out,
            "revoked {} {} (scope {}, name {})",
            key.kind,
            key.id,
            key.scope,
            printable(&key.name),
        )?,
        AdminReply::BackedUp {
            to,
            databases,
            dashboards,
            caller_keys,
            bytes,
        } => writeln!(
            out,
            "backed up {databases} database(s), {dashboards} dashboard(s) and {caller_keys} \
             caller key(s) to {} ({bytes} bytes). Secrets in it stay sealed: restoring it needs \
             the secret key this data was written with (DATA_DIR/secret.key or \
             DBCONSOLE_SECRET_KEY); keep that key apart from the backup.",
            to.display()
        )?,
        AdminReply::Rotated {
            current,
            started,
            resealed,
            passes,
            retired,
            key_file,
        } => {
            let how = if *started { "made" } else { "finished making" };
            writeln!(
                out,
                "{how} seal key {current} current; sealed the secrets of {resealed} database(s) \
                 again in {passes} pass(es); retired {}.",
                ids(retired)
            )?;
            match key_file {
                Some(file) => writeln!(
                    out,
                    "The retired keys were dropped from {}. Other nodes (PostgreSQL) can drop \
                     them from their keys too.",
                    file.display()
                )?,
                None if !retired.is_empty() => writeln!(
                    out,
                    "Drop the retired keys from DBCONSOLE_SECRET_KEY on every node."
                )?,
                None => {}
            }
        }
        AdminReply::SealKeyAdded { id, key_file } => writeln!(
            out,
            "added seal key {id} to {}; it seals nothing until `dbconsole keys rotate-seal`. On \
             PostgreSQL, give every node this key file (or add the key to its \
             DBCONSOLE_SECRET_KEY) and restart it first.",
            key_file.display()
        )?,
        AdminReply::SealStatus {
            current,
            keys,
            rotating,
        } => writeln!(
            out,
            "current seal key: {current}; keys stored secrets may need: {}{}",
            ids(keys),
            if *rotating {
                " (a rotation is under way: run `dbconsole keys rotate-seal` to finish it)"
            } else {
                ""
            }
        )?,
        AdminReply::SessionsListed { sessions } => print_sessions(sessions, out)?,
        AdminReply::SessionsRevoked { sessions } => {
            for session in sessions {
                writeln!(
                    out,
                    "ended {} {} of {}",
                    session.kind,
                    session.id,
                    printable(&session.user)
                )?;
            }
        }
        AdminReply::LinkCreated { link, token, .. } => writeln!(
            out,
            "sign-in link {} for {} ({}), single use, until {}; its token, shown this once:\n  {}",
            link.id,
            printable(&link.user),
            link.role,
            to_seconds(link.expires_at),
            token.expose_str().unwrap_or_default()
        )?,
        AdminReply::Failed { error, message } => {
            return Err(PrintError::Refused {
                error: *error,
                message: message.clone(),
            });
        }
    }
    Ok(out.flush()?)
}

fn ids(ids: &[u32]) -> String {
    if ids.is_empty() {
        return "none".to_owned();
    }
    ids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_created(key: &KeyInfo, secret: &Secret, out: &mut impl Write) -> io::Result<()> {
    let secret = secret.expose_str().unwrap_or("");
    let (header, routes) = match key.kind {
        CredentialKind::ApiKey => ("x-api-key: <secret>", "the database routes"),
        CredentialKind::AccessToken => ("Authorization: Bearer <secret>", "the dashboard routes"),
    };
    writeln!(out, "id:     {}", key.id)?;
    writeln!(out, "kind:   {}", key.kind)?;
    writeln!(out, "scope:  {}", key.scope)?;
    writeln!(out, "name:   {}", printable(&key.name))?;
    if let Some(user) = &key.user {
        let groups: Vec<String> = key.groups.iter().map(|g| printable(g)).collect();
        writeln!(
            out,
            "user:   {} (role {}; groups: {})",
            printable(user),
            key.role.as_deref().unwrap_or("member"),
            if groups.is_empty() {
                "none".to_owned()
            } else {
                groups.join(", ")
            }
        )?;
    }
    writeln!(out, "secret: {secret}")?;
    writeln!(
        out,
        "Store the secret now: it is shown only this once (only its SHA-256 digest is kept). \
         Send it as `{header}` on {routes}."
    )
}

fn print_table(keys: &[KeyInfo], out: &mut impl Write) -> io::Result<()> {
    if keys.is_empty() {
        return writeln!(out, "no stored keys");
    }
    let rows: Vec<[String; 6]> = keys
        .iter()
        .map(|key| {
            [
                key.id.clone(),
                key.kind.to_string(),
                key.scope.to_string(),
                printable(&key.name),
                to_seconds(key.created_at),
                key.last_used_at
                    .map_or_else(|| "never".to_owned(), to_seconds),
            ]
        })
        .collect();
    let header = ["ID", "KIND", "SCOPE", "NAME", "CREATED", "LAST USED"];
    print_rows(header, &rows, out)
}

fn print_sessions(sessions: &[SessionInfo], out: &mut impl Write) -> io::Result<()> {
    if sessions.is_empty() {
        return writeln!(out, "no sessions");
    }
    let rows: Vec<[String; 6]> = sessions
        .iter()
        .map(|s| {
            [
                s.id.clone(),
                s.kind.clone(),
                printable(&s.user),
                s.role.clone(),
                to_seconds(s.last_seen_at),
                to_seconds(s.expires_at),
            ]
        })
        .collect();
    let header = ["ID", "KIND", "USER", "ROLE", "LAST SEEN", "EXPIRES"];
    print_rows(header, &rows, out)
}

/// A table: the header, then the rows, each column as wide as its widest cell.
fn print_rows<const N: usize>(
    header: [&str; N],
    rows: &[[String; N]],
    out: &mut impl Write,
) -> io::Result<()> {
    let header = header.map(str::to_owned);
    let mut widths = header.clone().map(|cell| cell.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(widths) {
            line.push_str(&format!("{cell:<width$}  "));
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// A time to the second, RFC 3339 UTC: `2026-11-22T10:04:05Z`.
fn to_seconds(at: Timestamp) -> String {
    match DateTime::from_timestamp_micros(at.as_micros()) {
        Some(at) => at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => at.to_string(),
    }
}

/// A name as it can be printed on a terminal: control characters escaped (names are checked
/// at creation, but a store may hold older or foreign ones).
fn printable(name: &str) -> String {
    name.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use dbconsole_core::Scope;

    use super::*;

    fn printed(reply: &AdminReply) -> String {
        let mut out = Vec::new();
        print_reply(reply, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// 2026-01-02T03:04:05.678901Z.
    fn created() -> Timestamp {
        Timestamp::from_micros(1_767_323_045_678_901)
    }

    #[test]
    fn created_output_labels_the_secret_and_the_id() {
        let reply = AdminReply::Created {
            key: Box::new(KeyInfo {
                id: "key_01".to_owned(),
                kind: CredentialKind::AccessToken,
                scope: Scope::Full,
                name: "grafana".to_owned(),
                created_at: created(),
                last_used_at: None,
                user: None,
                groups: Vec::new(),
                role: None,
            }),
            secret: Secret::from("dbc_at_s3cr3t"),
        };
        let out = printed(&reply);
        assert!(out.contains("id:     key_01\n"), "{out}");
        assert!(out.contains("kind:   access-token\n"), "{out}");
        assert!(out.contains("secret: dbc_at_s3cr3t\n"), "{out}");
        assert_eq!(out.matches("dbc_at_s3cr3t").count(), 1, "{out}");
        assert!(out.contains("Authorization: Bearer"), "{out}");
    }

    #[test]
    fn the_table_aligns_columns_and_shortens_times() {
        let key = |id: &str, name: &str, used: Option<Timestamp>| KeyInfo {
            id: id.to_owned(),
            kind: CredentialKind::ApiKey,
            scope: Scope::Full,
            name: name.to_owned(),
            created_at: created(),
            last_used_at: used,
            user: None,
            groups: Vec::new(),
            role: None,
        };
        // 2026-02-03T04:05:06.000001Z.
        let used = Timestamp::from_micros(1_770_091_506_000_001);
        let out = printed(&AdminReply::Listed {
            keys: vec![
                key("key_a", "a long name here", None),
                key("key_b", "bell\u{7}", Some(used)),
            ],
        });
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[0].starts_with("ID     KIND     SCOPE  NAME"), "{out}");
        let created = lines[0].find("CREATED").unwrap();
        assert_eq!(
            lines[1].find("2026-01-02T03:04:05Z"),
            Some(created),
            "{out}"
        );
        assert!(lines[1].ends_with("never"), "{out}");
        assert!(lines[2].ends_with("2026-02-03T04:05:06Z"), "{out}");
        assert!(lines[2].contains("bell\\u{7}"), "{out}");
        assert_eq!(
            printed(&AdminReply::Listed { keys: Vec::new() }),
            "no stored keys\n"
        );
    }

    #[test]
    fn times_are_cut_to_the_second_not_rounded() {
        assert_eq!(
            to_seconds(Timestamp::from_micros(1_767_323_045_999_999)),
            "2026-01-02T03:04:05Z"
        );
        assert_eq!(
            to_seconds(Timestamp::from_micros(0)),
            "1970-01-01T00:00:00Z"
        );
    }

    #[test]
    fn a_failed_reply_is_the_error() {
        let reply = AdminReply::failed(Failure::NotFound, "no key has the id \"key_x\"");
        let error = print_reply(&reply, &mut Vec::new()).unwrap_err();
        assert!(matches!(
            error,
            PrintError::Refused {
                error: Failure::NotFound,
                ..
            }
        ));
        assert_eq!(error.to_string(), "no key has the id \"key_x\"");
    }

    #[test]
    fn rotation_replies_say_what_was_done_and_what_is_left() {
        let rotated = AdminReply::Rotated {
            current: 2,
            started: false,
            resealed: 40,
            passes: 2,
            retired: vec![0, 1],
            key_file: None,
        };
        let text = printed(&rotated);
        assert!(
            text.starts_with("finished making seal key 2 current; sealed the secrets of 40")
                && text.contains("retired 0, 1.")
                && text.contains("Drop the retired keys from DBCONSOLE_SECRET_KEY"),
            "{text}"
        );
        let status = AdminReply::SealStatus {
            current: 2,
            keys: vec![1, 2],
            rotating: true,
        };
        let text = printed(&status);
        assert!(
            text.contains("current seal key: 2; keys stored secrets may need: 1, 2")
                && text.contains("rotation is under way"),
            "{text}"
        );
        let added = AdminReply::SealKeyAdded {
            id: 3,
            key_file: "/srv/secret.key".into(),
        };
        assert!(printed(&added).starts_with("added seal key 3 to /srv/secret.key"));
    }
}
