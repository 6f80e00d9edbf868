//! [`ValidationErrors`]: field-keyed client errors, rendered as
//! `{"errors":{"<field>":["<message>", ...]}}`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// Validation messages: the ones the README's *Endpoints* section lists, then the project's own
/// (docs/api.md, *Decisions where the spec is silent*).
pub mod message {
    /// Required field absent, null or blank.
    pub const BLANK: &str = "can't be blank";
    /// Wrong JSON type or unreadable value.
    pub const INVALID: &str = "is invalid";
    /// A reserved name.
    pub const RESERVED: &str = "is reserved";
    /// A value that must be unique was used before.
    pub const TAKEN: &str = "has already been taken";
    /// An empty list where at least one item is needed.
    pub const AT_LEAST_ONE: &str = "should have at least 1 item(s)";
    /// Setup's `ssl` other than `"enabled"`, `"disabled"` or blank.
    pub const SSL_CHOICES: &str = "must be one of: enabled, disabled";
    /// `verify_server_hostname` without a CA certificate.
    pub const NEEDS_CA: &str = "requires a CA certificate (ssl_ca_cert)";
    /// A secret that could not be sealed (the system random number generator failed).
    pub const NOT_SEALED: &str = "could not be encrypted";
    /// `inherits_from` names the database itself.
    pub const INHERITS_ITSELF: &str = "can't be the database itself";
    /// `inherits_from` names no stored database.
    pub const INHERITS_MISSING: &str = "does not exist";
    /// Following `inherits_from` from the target leads back to the database.
    pub const INHERITS_CYCLE: &str = "would create an inheritance cycle";
}

/// Errors for one field: messages, or one error set per item of a list (`{}` for a valid item).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldErrors {
    /// Messages about the field itself.
    Messages(Vec<String>),
    /// One error set per list item, in order.
    Items(Vec<ValidationErrors>),
    /// Errors inside a nested object.
    Nested(ValidationErrors),
}

/// Field-keyed validation errors. Empty means valid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValidationErrors(BTreeMap<String, FieldErrors>);

impl ValidationErrors {
    /// No errors.
    pub fn new() -> Self {
        Self::default()
    }

    /// Errors with a single message on one field.
    pub fn single(field: &str, message: impl Into<String>) -> Self {
        let mut errors = Self::new();
        errors.add(field, message);
        errors
    }

    /// Adds a message to a field (once; repeated messages are kept once).
    pub fn add(&mut self, field: &str, message: impl Into<String>) {
        let message = message.into();
        match self
            .0
            .entry(field.to_owned())
            .or_insert_with(|| FieldErrors::Messages(Vec::new()))
        {
            FieldErrors::Messages(messages) => {
                if !messages.contains(&message) {
                    messages.push(message);
                }
            }
            // A list that has item errors gets no field message as well; item errors are the
            // more precise answer.
            FieldErrors::Items(_) | FieldErrors::Nested(_) => {}
        }
    }

    /// Records item errors of a list field; nothing is recorded when every item is valid.
    pub fn add_items(&mut self, field: &str, items: Vec<ValidationErrors>) {
        if items.iter().any(|item| !item.is_empty()) {
            self.0.insert(field.to_owned(), FieldErrors::Items(items));
        }
    }

    /// Records the errors of a nested object field; nothing when it has none.
    pub fn add_nested(&mut self, field: &str, errors: ValidationErrors) {
        if !errors.is_empty() {
            self.0.insert(field.to_owned(), FieldErrors::Nested(errors));
        }
    }

    /// Adds the errors of `other`; a field both have keeps `other`'s.
    pub fn merge(&mut self, other: ValidationErrors) {
        self.0.extend(other.0);
    }

    /// Whether there are no errors.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The errors of one field.
    pub fn get(&self, field: &str) -> Option<&FieldErrors> {
        self.0.get(field)
    }

    /// The fields that have errors, in order.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// `Ok(value)` when there are no errors, else `Err(self)`.
    pub fn into_result<T>(self, value: T) -> Result<T, ValidationErrors> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl std::fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| std::fmt::Error)?;
        write!(f, "invalid fields: {text}")
    }
}

impl std::error::Error for ValidationErrors {}

impl Serialize for ValidationErrors {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (field, errors) in &self.0 {
            match errors {
                FieldErrors::Messages(messages) => map.serialize_entry(field, messages)?,
                FieldErrors::Items(items) => map.serialize_entry(field, items)?,
                FieldErrors::Nested(nested) => map.serialize_entry(field, nested)?,
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_nested_items() {
        let mut errors = ValidationErrors::new();
        errors.add_items(
            "credentials",
            vec![
                ValidationErrors::new(),
                ValidationErrors::single("username", message::BLANK),
            ],
        );
        assert_eq!(
            serde_json::to_string(&errors).unwrap(),
            r#"{"credentials":[{},{"username":["can't be blank"]}]}"#
        );
    }

    #[test]
    fn all_valid_items_record_nothing() {
        let mut errors = ValidationErrors::new();
        errors.add_items("panels", vec![ValidationErrors::new()]);
        assert!(errors.is_empty());
    }
}
