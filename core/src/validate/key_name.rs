//! The name of a caller key (`dbconsole keys create --name`): the rule every place that
//! makes a key applies.

/// The longest key name, in characters.
pub const KEY_NAME_MAX_CHARS: usize = 100;

/// Why a key name is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyNameError {
    /// Nothing but whitespace.
    #[error("the key name must not be empty")]
    Empty,
    /// More than [`KEY_NAME_MAX_CHARS`] characters.
    #[error("the key name must be at most {KEY_NAME_MAX_CHARS} characters")]
    TooLong,
    /// A control character (a newline, a tab…): names are printed in a table.
    #[error("the key name must not contain control characters")]
    ControlCharacter,
}

/// A key's name, trimmed: not empty, at most [`KEY_NAME_MAX_CHARS`] characters, no control
/// characters (it is printed in a table).
pub fn check_key_name(name: &str) -> Result<String, KeyNameError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(KeyNameError::Empty);
    }
    if name.chars().count() > KEY_NAME_MAX_CHARS {
        return Err(KeyNameError::TooLong);
    }
    if name.chars().any(char::is_control) {
        return Err(KeyNameError::ControlCharacter);
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_refused_for_a_reason() {
        assert_eq!(check_key_name(" \t "), Err(KeyNameError::Empty));
        assert_eq!(
            check_key_name(&"x".repeat(KEY_NAME_MAX_CHARS + 1)),
            Err(KeyNameError::TooLong)
        );
        assert_eq!(
            check_key_name("a\u{7}b"),
            Err(KeyNameError::ControlCharacter)
        );
        assert_eq!(check_key_name("  ci  ").as_deref(), Ok("ci"));
        assert_eq!(
            KeyNameError::TooLong.to_string(),
            format!("the key name must be at most {KEY_NAME_MAX_CHARS} characters")
        );
    }

    #[test]
    fn the_longest_name_counts_characters_not_bytes() {
        assert!(check_key_name(&"é".repeat(KEY_NAME_MAX_CHARS)).is_ok());
    }
}
