//! The text of a statement, read as its database would read it: where its string literals,
//! quoted identifiers and comments are, so that a `;` or a `${key}` inside one is not taken for
//! a statement's end or an input.
//!
//! - [`single`]: one statement per query. A text with a second statement is refused (a
//!   trailing `;` and comments are fine).
//! - [`bind_inputs`]: a panel's `${key}` inputs become the adapter's bind parameters, never
//!   text. An input that is a whole string literal (`'${key}'`, as DevHub users quote them) is
//!   one parameter too; an input inside a larger literal or a comment is refused, since it
//!   could only be pasted in.

/// The SQL dialect rules that change how text is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// PostgreSQL: `$tag$…$tag$` strings, `E'…'` with backslash escapes, nested block comments.
    Postgres,
    /// MySQL / MariaDB: backslash escapes in `'…'` and `"…"`, backtick identifiers, `#` comments.
    Mysql,
    /// ClickHouse: backslash escapes, backtick identifiers.
    Clickhouse,
    /// SQL Server: `[…]` identifiers.
    Sqlserver,
    /// Oracle: `q'[…]'` is not read (rare); plain SQL otherwise.
    Oracle,
}

impl Dialect {
    /// The dialect a statement on a database of this adapter is read in.
    pub fn of(adapter: crate::model::Adapter) -> Self {
        use crate::model::Adapter;
        match adapter {
            Adapter::Postgres => Dialect::Postgres,
            Adapter::Mysql => Dialect::Mysql,
            Adapter::Clickhouse => Dialect::Clickhouse,
            Adapter::Sqlserver => Dialect::Sqlserver,
            Adapter::Oracle => Dialect::Oracle,
        }
    }

    /// The dialect's name, as messages say it.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Postgres => "PostgreSQL",
            Dialect::Mysql => "MySQL",
            Dialect::Clickhouse => "ClickHouse",
            Dialect::Sqlserver => "SQL Server",
            Dialect::Oracle => "Oracle",
        }
    }

    fn backslash_escapes(self) -> bool {
        matches!(self, Dialect::Mysql | Dialect::Clickhouse)
    }
}

/// One piece of a statement's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece {
    /// Code outside any literal or comment.
    Code,
    /// A string literal, quotes included.
    Literal,
    /// A quoted identifier: never touched.
    Identifier,
    /// A comment: never touched.
    Comment,
}

/// Splits `text` into pieces; `Err` names what is left open at the end.
fn pieces(text: &str, dialect: Dialect) -> Result<Vec<(Piece, std::ops::Range<usize>)>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut code_start = 0;
    let mut i = 0;
    let push_code = |out: &mut Vec<(Piece, std::ops::Range<usize>)>, start: usize, end: usize| {
        if end > start {
            out.push((Piece::Code, start..end));
        }
    };
    // Inside a MySQL executable comment (`/*! … */`), whose text the server runs as code.
    let mut executable = false;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        let end = match b {
            b'/' if next == Some(b'*') && dialect == Dialect::Mysql && !executable => {
                match executable_opener(bytes, i) {
                    Some(end) => {
                        executable = true;
                        Some((Piece::Comment, end))
                    }
                    None => Some((Piece::Comment, block_end(bytes, i, dialect)?)),
                }
            }
            b'*' if next == Some(b'/') && executable => {
                executable = false;
                Some((Piece::Comment, i + 2))
            }
            b'\'' => {
                let escapes = dialect.backslash_escapes()
                    || (dialect == Dialect::Postgres
                        && i > 0
                        && matches!(bytes[i - 1], b'e' | b'E')
                        && !bytes
                            .get(i.wrapping_sub(2))
                            .is_some_and(|c| identifier_byte(*c)));
                Some((Piece::Literal, quoted(bytes, i, b'\'', escapes)?))
            }
            b'"' => {
                let piece = if dialect == Dialect::Mysql {
                    Piece::Literal
                } else {
                    Piece::Identifier
                };
                Some((piece, quoted(bytes, i, b'"', dialect.backslash_escapes())?))
            }
            b'`' if matches!(dialect, Dialect::Mysql | Dialect::Clickhouse) => {
                Some((Piece::Identifier, quoted(bytes, i, b'`', false)?))
            }
            b'[' if dialect == Dialect::Sqlserver => {
                let close = text[i..]
                    .find(']')
                    .ok_or("an identifier in [ ] is not closed")?;
                Some((Piece::Identifier, i + close + 1))
            }
            b'-' if next == Some(b'-') => Some((Piece::Comment, line_end(bytes, i))),
            b'#' if dialect == Dialect::Mysql => Some((Piece::Comment, line_end(bytes, i))),
            b'/' if next == Some(b'*') => Some((Piece::Comment, block_end(bytes, i, dialect)?)),
            b'$' if dialect == Dialect::Postgres => {
                dollar_end(text, i)?.map(|e| (Piece::Literal, e))
            }
            _ => None,
        };
        match end {
            Some((piece, end)) => {
                push_code(&mut out, code_start, i);
                out.push((piece, i..end));
                i = end;
                code_start = end;
            }
            None => i += 1,
        }
    }
    if executable {
        return Err("a /*! comment */ is not closed".to_owned());
    }
    push_code(&mut out, code_start, bytes.len());
    Ok(out)
}

/// The end of the opener of a MySQL executable comment at `start` (`/*!`, `/*M!`, each with an
/// optional version number), or `None` when the comment at `start` is an ordinary one.
fn executable_opener(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 2;
    if bytes.get(i) == Some(&b'M') {
        i += 1;
    }
    if bytes.get(i) != Some(&b'!') {
        return None;
    }
    i += 1;
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    Some(i)
}

/// `text` as a SQL parser should read it: each comment a space (a MySQL executable comment's
/// text stays, as the server runs it), each `${key}` input `NULL` (a whole-literal `'${key}'`
/// stays a literal).
pub fn for_parsing(text: &str, dialect: Dialect) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    for (piece, range) in pieces(text, dialect)? {
        let part = &text[range];
        match piece {
            Piece::Comment => out.push(' '),
            Piece::Literal | Piece::Identifier => out.push_str(part),
            Piece::Code => {
                let mut rest = part;
                while let Some(open) = rest.find("${") {
                    out.push_str(&rest[..open]);
                    let after = &rest[open + 2..];
                    let close = after
                        .find('}')
                        .ok_or_else(|| "an input ${ is not closed with }".to_owned())?;
                    out.push_str(" NULL ");
                    rest = &after[close + 1..];
                }
                out.push_str(rest);
            }
        }
    }
    Ok(out)
}

/// The end (exclusive) of a literal opened by `quote` at `start`; a doubled quote is a quote.
fn quoted(bytes: &[u8], start: usize, quote: u8, escapes: bool) -> Result<usize, String> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if escapes => i += 2,
            c if c == quote => {
                if bytes.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    return Ok(i + 1);
                }
            }
            _ => i += 1,
        }
    }
    Err(match quote {
        b'\'' => "a string literal is not closed".to_owned(),
        _ => "a quoted identifier is not closed".to_owned(),
    })
}

fn line_end(bytes: &[u8], start: usize) -> usize {
    bytes[start..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(bytes.len(), |p| start + p + 1)
}

fn block_end(bytes: &[u8], start: usize, dialect: Dialect) -> Result<usize, String> {
    let nested = dialect == Dialect::Postgres;
    let mut depth = 0usize;
    let mut i = start;
    while i + 1 < bytes.len() {
        if bytes[i] == b'/' && bytes[i + 1] == b'*' && (nested || depth == 0) {
            depth += 1;
            i += 2;
        } else if bytes[i] == b'*' && bytes[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Ok(i);
            }
        } else {
            i += 1;
        }
    }
    Err("a /* comment */ is not closed".to_owned())
}

/// Whether `b` may be part of an identifier as PostgreSQL's lexer reads one: a letter, a digit,
/// `_`, `$`, or any byte of a character past ASCII (so `é$a$` is one identifier, not `é` and a
/// dollar quote).
fn identifier_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// A PostgreSQL dollar-quoted string at `start` (`$$…$$`, `$tag$…$tag$`): its end, or `None`
/// when the `$` opens none (a `$1` parameter, or a `$` inside an identifier).
fn dollar_end(text: &str, start: usize) -> Result<Option<usize>, String> {
    let bytes = text.as_bytes();
    if start > 0 && identifier_byte(bytes[start - 1]) {
        return Ok(None);
    }
    let rest = &text[start + 1..];
    let tag_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b >= 0x80)
        .count();
    if rest.as_bytes().get(tag_len) != Some(&b'$')
        || rest.as_bytes().first().is_some_and(u8::is_ascii_digit)
    {
        return Ok(None);
    }
    let delimiter = &text[start..start + tag_len + 2];
    let body = start + delimiter.len();
    match text[body..].find(delimiter) {
        Some(at) => Ok(Some(body + at + delimiter.len())),
        None => Err("a $-quoted string is not closed".to_owned()),
    }
}

/// The one statement of `text`, without a trailing `;` (and what follows it, whitespace and
/// comments). `Err` says why it is not one statement: empty, several, or a literal left open.
pub fn single(text: &str, dialect: Dialect) -> Result<&str, String> {
    const SEVERAL: &str =
        "holds more than one statement: a query runs one statement (send each as its own query)";
    let pieces = pieces(text, dialect)?;
    let mut end: Option<usize> = None;
    let mut has_code = false;
    for (piece, range) in &pieces {
        let part = &text[range.clone()];
        match (end, piece) {
            (None, Piece::Code) => {
                let code = match part.find(';') {
                    Some(at) => {
                        end = Some(range.start + at);
                        if !part[at + 1..].trim().is_empty() {
                            return Err(SEVERAL.to_owned());
                        }
                        &part[..at]
                    }
                    None => part,
                };
                has_code |= !code.trim().is_empty();
            }
            (None, Piece::Literal | Piece::Identifier) => has_code = true,
            (_, Piece::Comment) => {}
            (Some(_), Piece::Code) if part.trim().is_empty() => {}
            (Some(_), _) => return Err(SEVERAL.to_owned()),
        }
    }
    if !has_code {
        return Err("holds no statement".to_owned());
    }
    Ok(end.map_or(text, |at| &text[..at]))
}

/// Each statement of `text`, split at the `;` outside literals, quoted identifiers and
/// comments, without its `;`; pieces holding only whitespace and comments are left out (the
/// wire door's multi-statement texts). `Err` when a literal is left open.
pub fn statements(text: &str, dialect: Dialect) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut has_code = false;
    for (piece, range) in pieces(text, dialect)? {
        match piece {
            Piece::Code => {
                let mut from = range.start;
                for (at, _) in text[range.clone()].match_indices(';') {
                    let end = range.start + at;
                    has_code |= !text[from..end].trim().is_empty();
                    if has_code {
                        out.push(&text[start..end]);
                    }
                    start = end + 1;
                    from = start;
                    has_code = false;
                }
                has_code |= !text[from..range.end].trim().is_empty();
            }
            Piece::Literal | Piece::Identifier => has_code = true,
            Piece::Comment => {}
        }
    }
    if has_code {
        out.push(&text[start..]);
    }
    Ok(out)
}

/// Where each input goes once bound: the statement with each `${key}` replaced by the marker
/// `marker(n)` gives its `n`th (0-based) parameter, and the keys in parameter order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// The statement to send.
    pub statement: String,
    /// The input of each parameter, in order (a key used twice is two parameters).
    pub keys: Vec<String>,
}

/// Replaces each `${key}` of `statement` (outside comments and quoted identifiers) with
/// `marker(n, key)`. A literal that is exactly `'${key}'` is replaced whole; a `${…}` inside a
/// larger literal is refused, as is one whose key is not among `known`.
pub fn bind_inputs(
    statement: &str,
    dialect: Dialect,
    known: &[&str],
    marker: impl FnMut(usize, &str) -> String,
) -> Result<Bound, String> {
    bind_with(statement, dialect, |key| check_known(key, known), marker)
}

/// The `${name}` parameters of `statement` (a saved query's), each once, in the order they
/// first appear; an error where [`bind_inputs`] would refuse the statement (a `${` not closed,
/// a parameter inside a larger literal, a blank name).
pub fn input_keys(statement: &str, dialect: Dialect) -> Result<Vec<String>, String> {
    let check = |key: &str| {
        if key.trim().is_empty() {
            Err("a parameter ${} has no name".to_owned())
        } else {
            Ok(())
        }
    };
    let bound = bind_with(statement, dialect, check, |_, _| String::new())?;
    let mut keys: Vec<String> = Vec::with_capacity(bound.keys.len());
    for key in bound.keys {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    Ok(keys)
}

fn bind_with(
    statement: &str,
    dialect: Dialect,
    check: impl Fn(&str) -> Result<(), String>,
    mut marker: impl FnMut(usize, &str) -> String,
) -> Result<Bound, String> {
    let mut out = String::with_capacity(statement.len());
    let mut keys = Vec::new();
    for (piece, range) in pieces(statement, dialect)? {
        let text = &statement[range];
        match piece {
            Piece::Identifier | Piece::Comment => out.push_str(text),
            Piece::Literal => {
                let inner = text.get(1..text.len().saturating_sub(1)).unwrap_or("");
                if let Some(key) = whole_placeholder(inner) {
                    check(key)?;
                    out.push_str(&marker(keys.len(), key));
                    keys.push(key.to_owned());
                } else if text.contains("${") {
                    return Err(format!(
                        "an input inside a string literal ({text}) can't be bound as a \
                         parameter: put the input alone in the literal ('${{key}}') or \
                         concatenate it"
                    ));
                } else {
                    out.push_str(text);
                }
            }
            Piece::Code => {
                let mut rest = text;
                while let Some(open) = rest.find("${") {
                    out.push_str(&rest[..open]);
                    let after = &rest[open + 2..];
                    let close = after
                        .find('}')
                        .ok_or_else(|| "an input ${ is not closed with }".to_owned())?;
                    let key = &after[..close];
                    check(key)?;
                    out.push_str(&marker(keys.len(), key));
                    keys.push(key.to_owned());
                    rest = &after[close + 1..];
                }
                out.push_str(rest);
            }
        }
    }
    Ok(Bound {
        statement: out,
        keys,
    })
}

fn whole_placeholder(inner: &str) -> Option<&str> {
    let key = inner.strip_prefix("${")?.strip_suffix('}')?;
    (!key.contains('}') && !key.contains("${")).then_some(key)
}

fn check_known(key: &str, known: &[&str]) -> Result<(), String> {
    if known.contains(&key) {
        Ok(())
    } else {
        Err(format!(
            "uses the input ${{{key}}}, which is not one of the panel's inputs"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_statement_with_semicolons_in_literals_and_comments() {
        let pg = Dialect::Postgres;
        assert_eq!(single("SELECT 1;", pg), Ok("SELECT 1"));
        assert_eq!(
            single("SELECT ';' -- ;\n ; -- end", pg),
            Ok("SELECT ';' -- ;\n ")
        );
        assert_eq!(single("SELECT $$a;b$$, $t$;$t$", pg).map(str::len), Ok(23));
        assert_eq!(
            single("SELECT \"a;b\" FROM t /* ; */", pg).map(str::len),
            Ok(27)
        );
        assert_eq!(single("SELECT E'\\';'", pg).map(str::len), Ok(13));
        assert!(single("SELECT 1; SELECT 2", pg).is_err());
        assert!(single("SELECT 1; DROP TABLE t; --", pg).is_err());
        assert!(single("SELECT 1;;", pg).is_err());
        assert!(single("SELECT 1; 'x'", pg).is_err());
        assert!(single("  ; ", pg).is_err());
        assert!(single("-- nothing", pg).is_err());
        assert!(single("SELECT 'open", pg).is_err());
        assert_eq!(single("SELECT $1 FROM t", pg), Ok("SELECT $1 FROM t"));
        let my = Dialect::Mysql;
        assert_eq!(single("SELECT 'a\\';b' # ;\n", my).map(str::len), Ok(19));
        assert!(single("SELECT 1; SELECT 2", my).is_err());
    }

    #[test]
    fn inputs_become_parameters_never_text() {
        let pg = |n: usize, _: &str| format!("${}", n + 1);
        let bound = bind_inputs(
            "SELECT * FROM t WHERE id = ${id} AND name = '${name}' -- ${id}\n AND x = ${id}",
            Dialect::Postgres,
            &["id", "name"],
            pg,
        )
        .unwrap();
        assert_eq!(
            bound.statement,
            "SELECT * FROM t WHERE id = $1 AND name = $2 -- ${id}\n AND x = $3"
        );
        assert_eq!(bound.keys, ["id", "name", "id"]);
        assert!(bind_inputs("SELECT '%${q}%'", Dialect::Postgres, &["q"], pg).is_err());
        assert!(bind_inputs("SELECT ${nope}", Dialect::Postgres, &["q"], pg).is_err());
        assert!(bind_inputs("SELECT ${q", Dialect::Postgres, &["q"], pg).is_err());
    }

    #[test]
    fn statements_split_at_semicolons_outside_literals_and_comments() {
        let text = "SELECT ';' ; -- a; comment\n SELECT \"a;b\" FROM t;; /* x; */ ";
        assert_eq!(
            statements(text, Dialect::Postgres).unwrap(),
            vec!["SELECT ';' ", " -- a; comment\n SELECT \"a;b\" FROM t"]
        );
        assert!(statements("SELECT 'open", Dialect::Postgres).is_err());
        assert!(
            statements(" -- nothing ", Dialect::Postgres)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_dollar_or_an_e_after_an_identifier_past_ascii_opens_nothing() {
        // PostgreSQL reads `é$a$` as one identifier: what follows is code.
        let text = "SELECT 1 AS é$a$; COPY t TO STDOUT; SELECT 2 AS é$a$";
        assert_eq!(statements(text, Dialect::Postgres).unwrap().len(), 3);
        let text = "SELECT 1 AS x$a$; COPY t TO STDOUT; SELECT 2 AS x$a$";
        assert_eq!(statements(text, Dialect::Postgres).unwrap().len(), 3);
        // `é'…'` and `$E'…'` are no escape strings: a backslash does not hide their quote.
        assert_eq!(
            statements("SELECT 1 AS éE'x\\'; DELETE FROM t; --'", Dialect::Postgres)
                .map(|s| s.len()),
            statements("SELECT 1 AS aE'x\\'; DELETE FROM t; --'", Dialect::Postgres)
                .map(|s| s.len()),
        );
        // A tag past ASCII is a dollar quote, as PostgreSQL reads it.
        assert_eq!(
            statements("SELECT $é$ ; COPY $é$", Dialect::Postgres)
                .unwrap()
                .len(),
            1
        );
    }
}
