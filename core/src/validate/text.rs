//! What a string field may hold: its length bound and the characters it refuses (docs/api.md,
//! *Limits*). Every string field of every body names one [`Text`] rule where it is read, and
//! the OpenAPI document states the same rules, from the same constants.

use std::net::IpAddr;

/// Names, titles, usernames, ids, labels, keys, columns: one line.
pub const NAME_MAX: usize = 255;
/// A host name (RFC 1035's 253 characters, or an IP address).
pub const HOSTNAME_MAX: usize = 253;
/// Connection parameter values, descriptions, prompts.
pub const VALUE_MAX: usize = 4096;
/// Passwords.
pub const PASSWORD_MAX: usize = 1024;
/// A dashboard panel's query.
pub const QUERY_MAX: usize = 100_000;
/// Certificates and keys: the base64 of their PEM (or DER) text.
pub const CERTIFICATE_MAX: usize = 262_144;

/// The message of a string longer than its bound.
pub(crate) fn too_long(max: usize) -> String {
    format!("should be at most {max} character(s)")
}

/// The message of a string with a control character where none is allowed.
pub(crate) const CONTROL_CHARACTERS: &str = "must not contain control characters";
/// The message of a password with a NUL character.
pub(crate) const NUL_CHARACTER: &str = "must not contain a NUL character";
/// The message of a `hostname` that is neither a host name nor an IP address.
pub(crate) const NOT_A_HOST: &str = "must be a host name or an IP address";

/// The rule of one string field. Lengths count characters (Unicode scalar values), as JSON
/// Schema's `maxLength` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Text {
    /// One line of at most this many characters: no control character (C0, DEL, C1).
    Line(usize),
    /// Text of at most this many characters that may span lines: no control character but tab,
    /// line feed and carriage return.
    Lines(usize),
    /// A host name (letters, digits, `-` and `_` in dot-separated labels of at most 63) or an
    /// IPv4 or IPv6 address, at most [`HOSTNAME_MAX`] characters.
    Host,
    /// Anything but NUL, at most this many characters: passwords.
    Opaque(usize),
}

impl Text {
    /// The longest value the rule allows.
    pub fn max_len(self) -> usize {
        match self {
            Self::Line(max) | Self::Lines(max) | Self::Opaque(max) => max,
            Self::Host => HOSTNAME_MAX,
        }
    }

    /// A JSON Schema `pattern` (ECMA 262, also read alike by Python's `re` and Rust's `regex`)
    /// that matches exactly the values whose characters the rule allows (the length is
    /// `maxLength`'s): for a field that is always checked, `""` included. For [`Text::Host`],
    /// the host names: IP addresses are the other alternative (`format: ipv6`; IPv4 addresses
    /// match the pattern).
    pub fn pattern(self) -> String {
        match self {
            Self::Host => HOST_NAME_PATTERN.to_owned(),
            _ => format!("^[^{}]*$", self.refused()),
        }
    }

    /// The pattern of a field where a blank value (empty or white space only) means unset: the
    /// rule's values, or blank.
    pub fn blank_or_valid_pattern(self) -> String {
        match self {
            Self::Host => format!("{HOST_NAME_PATTERN}|^[{WHITE_SPACE}]*$"),
            _ => format!(
                "^(?:[^{refused}]*|[{WHITE_SPACE}]*)$",
                refused = self.refused()
            ),
        }
    }

    /// The pattern of a blank value (empty or white space only), which means unset.
    pub fn blank_pattern() -> String {
        format!("^[{WHITE_SPACE}]*$")
    }

    /// The pattern of a required field: the rule's values that are not blank.
    pub fn non_blank_pattern(self) -> String {
        match self {
            Self::Host => HOST_NAME_PATTERN.to_owned(),
            _ => format!(
                "^[^{refused}]*[^{refused}{WHITE_SPACE}][^{refused}]*$",
                refused = self.refused()
            ),
        }
    }

    /// The characters the rule refuses, as the inside of a regex character class.
    fn refused(self) -> &'static str {
        match self {
            Self::Line(_) | Self::Host => r"\u0000-\u001f\u007f-\u009f",
            Self::Lines(_) => r"\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f",
            Self::Opaque(_) => r"\u0000",
        }
    }

    /// Checks `value` (a non-blank string as sent); the message when the rule refuses it.
    pub fn check(self, value: &str) -> Result<(), String> {
        if value.chars().count() > self.max_len() {
            return Err(too_long(self.max_len()));
        }
        let allowed = match self {
            Self::Line(_) => !value.chars().any(char::is_control),
            Self::Lines(_) => !value
                .chars()
                .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')),
            Self::Opaque(_) => !value.contains('\0'),
            Self::Host => is_host(value),
        };
        if allowed {
            return Ok(());
        }
        Err(match self {
            Self::Line(_) | Self::Lines(_) => CONTROL_CHARACTERS,
            Self::Opaque(_) => NUL_CHARACTER,
            Self::Host => NOT_A_HOST,
        }
        .to_owned())
    }
}

/// White space as Rust's `str::trim` knows it (Unicode White_Space), as the inside of a regex
/// character class: a string of only these is blank.
const WHITE_SPACE: &str =
    r"\t\n\u000b\u000c\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";

/// Dot-separated labels of 1 to 63 letters, digits, `-` or `_`, not starting or ending with
/// `-`, and one trailing dot allowed.
const HOST_NAME_PATTERN: &str = r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$";

/// A host name ([`HOST_NAME_PATTERN`]) or an IP address.
fn is_host(value: &str) -> bool {
    if value.parse::<IpAddr>().is_ok() {
        return true;
    }
    let name = value.strip_suffix('.').unwrap_or(value);
    !name.is_empty()
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_count_characters() {
        assert!(Text::Line(3).check("äöü").is_ok());
        assert_eq!(
            Text::Line(3).check("äöüx"),
            Err("should be at most 3 character(s)".into())
        );
    }

    #[test]
    fn control_characters_by_rule() {
        for bad in ["a\nb", "a\0b", "a\u{1b}[31m", "a\u{7f}", "a\u{85}"] {
            assert_eq!(Text::Line(99).check(bad), Err(CONTROL_CHARACTERS.into()));
        }
        assert!(Text::Lines(99).check("SELECT 1\r\n\tFROM t").is_ok());
        assert_eq!(
            Text::Lines(99).check("a\u{1b}b"),
            Err(CONTROL_CHARACTERS.into())
        );
        assert!(Text::Opaque(99).check("p\u{1b}\nw").is_ok());
        assert_eq!(Text::Opaque(99).check("p\0w"), Err(NUL_CHARACTER.into()));
    }

    #[test]
    fn hosts() {
        for good in [
            "db.internal",
            "localhost",
            "127.0.0.1",
            "::1",
            "2001:db8::10",
            "pg-1.eu_west.example.com.",
            "a",
        ] {
            assert!(Text::Host.check(good).is_ok(), "{good}");
        }
        for bad in [
            "db internal",
            "db\n",
            "-db",
            "db-.x",
            "a..b",
            "db:5432",
            "[::1]",
            "ünï.example",
            ".",
            &"a".repeat(64),
            &format!("{}.x", "a".repeat(250)),
        ] {
            assert!(Text::Host.check(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        /// Each rule's patterns (as the OpenAPI document states them) accept exactly what the
        /// service accepts, for values within the length bound. Strings are drawn from the
        /// characters where the rules differ.
        #[test]
        fn patterns_agree_with_the_checks(
            value in "[a-z0-9_.:\\- \\t\\n\\r\\x00\\x0b\\x1b\\x1c\\x7f\\u{85}\\u{a0}\\u{2003}]{0,70}"
        ) {
            let blank = value.trim().is_empty();
            for rule in [Text::Line(100), Text::Lines(100), Text::Opaque(100), Text::Host] {
                let matches = |pattern: String| {
                    regex::Regex::new(&pattern).unwrap().is_match(&value)
                        || (rule == Text::Host && value.parse::<std::net::Ipv6Addr>().is_ok())
                };
                let valid = rule.check(&value).is_ok();
                if rule != Text::Host {
                    proptest::prop_assert_eq!(matches(rule.pattern()), valid, "{:?} {:?}", rule, value);
                }
                proptest::prop_assert_eq!(
                    matches(rule.blank_or_valid_pattern()),
                    blank || valid,
                    "blank or valid: {:?} {:?}", rule, value
                );
                proptest::prop_assert_eq!(
                    matches(rule.non_blank_pattern()),
                    !blank && valid,
                    "non-blank: {:?} {:?}", rule, value
                );
            }
        }
    }
}
