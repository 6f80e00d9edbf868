//! [`Reader`]: typed, error-accumulating access to the fields of one JSON object.
//!
//! Every accessor answers in three states, `None` (absent), `Some(None)` (null, or a blank
//! string: the docs treat both as "unset") and `Some(Some(value))`, and records the
//! field's error itself, so a body is read in one pass and every error is reported at once.

use std::collections::HashSet;
use std::hash::Hash;

use base64::Engine as _;
use serde_json::{Map, Value};
use zeroize::Zeroizing;

use super::ValidationErrors;
use super::errors::message;
use super::text::{CERTIFICATE_MAX, NAME_MAX, PASSWORD_MAX, Text};
use crate::model::{SealedSecret, Secret};
use crate::seal::{Place, Sealer};

/// `None`: the field is absent. `Some(None)`: null or blank. `Some(Some(v))`: a value.
pub(crate) type Given<T> = Option<Option<T>>;

/// A secret field taken out of a request body the moment it was parsed: its JSON string moved
/// (not copied) into a buffer that is wiped when dropped, so the rest of the body, which a write
/// may hold while it retries, holds no secret. Its `Debug` shows no text.
pub(crate) enum TakenSecret {
    /// Not in the body.
    Absent,
    /// `null`.
    Null,
    /// A string.
    Text(Zeroizing<String>),
    /// Any other JSON value (an error when read).
    Other,
}

impl TakenSecret {
    /// Field `key` of `object`, copied (for a body read more than once).
    pub(crate) fn copied(object: &Map<String, Value>, key: &str) -> Self {
        match object.get(key) {
            None => TakenSecret::Absent,
            Some(Value::Null) => TakenSecret::Null,
            Some(Value::String(text)) => TakenSecret::Text(Zeroizing::new(text.clone())),
            Some(_) => TakenSecret::Other,
        }
    }

    /// Takes field `key` out of `object`.
    pub(crate) fn take(object: &mut Map<String, Value>, key: &str) -> Self {
        match object.remove(key) {
            None => TakenSecret::Absent,
            Some(Value::Null) => TakenSecret::Null,
            Some(Value::String(text)) => TakenSecret::Text(Zeroizing::new(text)),
            Some(_) => TakenSecret::Other,
        }
    }
}

impl std::fmt::Debug for TakenSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TakenSecret::Absent => "Absent",
            TakenSecret::Null => "Null",
            TakenSecret::Text(_) => "Text([REDACTED])",
            TakenSecret::Other => "Other",
        })
    }
}

pub(crate) struct Reader<'a> {
    object: &'a Map<String, Value>,
    errors: ValidationErrors,
}

/// A whole number, also when JSON wrote it as a float with no fraction (`5.0`, `1e30`); one
/// beyond `i128` saturates (it is out of every bound anyway).
fn whole_number(value: &Value) -> Option<i128> {
    let Value::Number(number) = value else {
        return None;
    };
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
        .or_else(|| {
            // `as` saturates: a float beyond i128 becomes its bound.
            number
                .as_f64()
                .filter(|f| f.fract() == 0.0)
                .map(|f| f as i128)
        })
}

impl<'a> Reader<'a> {
    pub(crate) fn new(object: &'a Map<String, Value>) -> Self {
        Self {
            object,
            errors: ValidationErrors::new(),
        }
    }

    pub(crate) fn errors(&mut self) -> &mut ValidationErrors {
        &mut self.errors
    }

    /// The object read.
    pub(crate) fn body(&self) -> &'a Map<String, Value> {
        self.object
    }

    pub(crate) fn finish(self) -> ValidationErrors {
        self.errors
    }

    fn invalid<T>(&mut self, key: &str) -> Option<T> {
        self.errors.add(key, message::INVALID);
        None
    }

    /// A string where blank means unset, within `rule`. The value itself is kept exactly as
    /// sent.
    pub(crate) fn text(&mut self, key: &str, rule: Text) -> Given<String> {
        match self.object.get(key)? {
            Value::Null => Some(None),
            Value::String(s) if s.trim().is_empty() => Some(None),
            Value::String(s) => self.checked(key, s, rule).map(Some),
            _ => self.invalid(key),
        }
    }

    /// A string kept as sent, `""` included, within `rule`; null gives `""`.
    pub(crate) fn raw_text(&mut self, key: &str, rule: Text) -> Option<String> {
        match self.object.get(key)? {
            Value::Null => Some(String::new()),
            Value::String(s) => self.checked(key, s, rule),
            _ => self.invalid(key),
        }
    }

    /// `value` when `rule` allows it, else `None` with the rule's message on `key`.
    fn checked(&mut self, key: &str, value: &str, rule: Text) -> Option<String> {
        match rule.check(value) {
            Ok(()) => Some(value.to_owned()),
            Err(message) => {
                self.errors.add(key, message);
                None
            }
        }
    }

    /// A string within `rule` that must be non-blank when given, and present when `required`.
    pub(crate) fn required_text(
        &mut self,
        key: &str,
        required: bool,
        rule: Text,
    ) -> Option<String> {
        match self.text(key, rule) {
            None if required => self.blank(key),
            None => None,
            Some(None) => self.blank(key),
            Some(Some(value)) => Some(value),
        }
    }

    /// Records `can't be blank`, unless the field already has an error: a value of the wrong
    /// type is `is invalid` only, not also blank.
    /// A string that names one value of a wire enum (see `wire_enum!`), non-blank when given and
    /// present when `required`; another name gets the enum's `must be one of: …`.
    pub(crate) fn choice<T: std::str::FromStr<Err = String>>(
        &mut self,
        key: &str,
        required: bool,
    ) -> Option<T> {
        let name = self.required_text(key, required, Text::Line(NAME_MAX))?;
        match name.parse() {
            Ok(value) => Some(value),
            Err(choices) => {
                self.errors.add(key, choices);
                None
            }
        }
    }

    pub(crate) fn blank<T>(&mut self, key: &str) -> Option<T> {
        if self.errors.get(key).is_none() {
            self.errors.add(key, message::BLANK);
        }
        None
    }

    pub(crate) fn boolean(&mut self, key: &str) -> Given<bool> {
        match self.object.get(key)? {
            Value::Null => Some(None),
            Value::Bool(b) => Some(Some(*b)),
            _ => self.invalid(key),
        }
    }

    /// Whether the body holds `key` (null included).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.object.contains_key(key)
    }

    /// A whole number within `min..=max`. A whole number beyond 64 bits gets the bound it
    /// breaks, like any other.
    pub(crate) fn integer(&mut self, key: &str, min: i64, max: i64) -> Given<i64> {
        let value = self.object.get(key)?;
        if value.is_null() {
            return Some(None);
        }
        let Some(number) = whole_number(value) else {
            return self.invalid(key);
        };
        let (min, max) = (i128::from(min), i128::from(max));
        if number < min {
            self.errors
                .add(key, format!("must be greater than or equal to {min}"));
            None
        } else if number > max {
            self.errors
                .add(key, format!("must be less than or equal to {max}"));
            None
        } else {
            // Within `min..=max`, which are `i64`.
            Some(Some(number as i64))
        }
    }

    /// A list of objects. Null means unset; an item that is not an object makes the whole field
    /// invalid.
    pub(crate) fn objects(&mut self, key: &str) -> Given<Vec<&'a Map<String, Value>>> {
        let object = self.object;
        match object.get(key)? {
            Value::Null => Some(None),
            Value::Array(items) => {
                let objects: Option<Vec<_>> = items.iter().map(Value::as_object).collect();
                match objects {
                    Some(objects) => Some(Some(objects)),
                    None => self.invalid(key),
                }
            }
            _ => self.invalid(key),
        }
    }

    /// A nested object. Null means unset.
    pub(crate) fn object(&mut self, key: &str) -> Given<&'a Map<String, Value>> {
        let object = self.object;
        match object.get(key)? {
            Value::Null => Some(None),
            Value::Object(map) => Some(Some(map)),
            _ => self.invalid(key),
        }
    }

    /// Base64 text (whitespace ignored) taken out of the body as `taken`, decoded into a
    /// secret; blank means unset. The field's errors are `key`'s.
    pub(crate) fn base64_secret(&mut self, key: &str, taken: &TakenSecret) -> Given<Secret> {
        let Some(text) = self.secret_text(key, taken, Text::Lines(CERTIFICATE_MAX))? else {
            return Some(None);
        };
        let compact: Zeroizing<Vec<u8>> = Zeroizing::new(
            text.bytes()
                .filter(|byte| !byte.is_ascii_whitespace())
                .collect(),
        );
        match base64::engine::general_purpose::STANDARD.decode(compact.as_slice()) {
            Ok(bytes) if !bytes.is_empty() => Some(Some(Secret::new(bytes))),
            _ => self.invalid(key),
        }
    }

    /// A password taken out of the body as `taken`: kept as sent when it is a non-empty string;
    /// null or blank clear it.
    pub(crate) fn password(&mut self, key: &str, taken: &TakenSecret) -> Given<Secret> {
        self.secret_text(key, taken, Text::Opaque(PASSWORD_MAX))
            .map(|text| text.map(|text| Secret::new(text.as_bytes())))
    }

    /// What [`Reader::text`] answers for a secret's text, without copying it.
    fn secret_text<'t>(&mut self, key: &str, taken: &'t TakenSecret, rule: Text) -> Given<&'t str> {
        match taken {
            TakenSecret::Absent => None,
            TakenSecret::Null => Some(None),
            TakenSecret::Text(text) if text.trim().is_empty() => Some(None),
            TakenSecret::Text(text) => match rule.check(text) {
                Ok(()) => Some(Some(text.as_str())),
                Err(message) => {
                    self.errors.add(key, message);
                    None
                }
            },
            TakenSecret::Other => self.invalid(key),
        }
    }

    /// A secret of field `key` (from [`Reader::password`] or [`Reader::base64_secret`]),
    /// sealed for `place`. Sealing fails only when the system random number generator does (or
    /// for a value far beyond any body limit); the field then reports it.
    pub(crate) fn sealed(
        &mut self,
        key: &str,
        given: Given<Secret>,
        sealer: &Sealer,
        place: &Place,
    ) -> Given<SealedSecret> {
        match given? {
            None => Some(None),
            Some(secret) => match sealer.seal(&secret, place) {
                Ok(sealed) => Some(Some(sealed)),
                Err(_) => {
                    self.errors.add(key, message::NOT_SEALED);
                    None
                }
            },
        }
    }
}

/// The items of one list field, each read with a [`Reader`] of its own: what each item gave
/// (`None` when it could not be read) and each item's errors, in order.
pub(crate) struct Items<T> {
    values: Vec<Option<T>>,
    errors: Vec<ValidationErrors>,
}

impl<T> Items<T> {
    /// Reads every item with `read`, which gets the item and a reader on it.
    pub(crate) fn read<'a>(
        items: &[&'a Map<String, Value>],
        mut read: impl FnMut(&'a Map<String, Value>, &mut Reader<'a>) -> Option<T>,
    ) -> Self {
        let mut values = Vec::with_capacity(items.len());
        let mut errors = Vec::with_capacity(items.len());
        for item in items {
            let mut reader = Reader::new(item);
            values.push(read(item, &mut reader));
            errors.push(reader.finish());
        }
        Self { values, errors }
    }

    /// Records `has already been taken` on `field` of every item whose `key` equals the key of
    /// an earlier item (the error sits on the later one); items whose key is `None` take part
    /// in no comparison.
    pub(crate) fn unique_by<K: Eq + Hash>(
        mut self,
        field: &str,
        key: impl Fn(&T) -> Option<K>,
    ) -> Self {
        let mut seen = HashSet::new();
        for (value, errors) in self.values.iter().zip(&mut self.errors) {
            if let Some(key) = value.as_ref().and_then(&key)
                && !seen.insert(key)
            {
                errors.add(field, message::TAKEN);
            }
        }
        self
    }

    /// Records the item errors under `field`; the values when every item is valid.
    pub(crate) fn finish(self, errors: &mut ValidationErrors, field: &str) -> Option<Vec<T>> {
        let valid = self.errors.iter().all(ValidationErrors::is_empty);
        errors.add_items(field, self.errors);
        if valid {
            self.values.into_iter().collect()
        } else {
            None
        }
    }
}
