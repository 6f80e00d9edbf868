//! [`Params`]: the path parameters of a recognized path, percent-decoded, kept in place.

use std::borrow::Cow;

/// The path parameters of a recognized path, percent-decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Params<'p> {
    // In place, without an allocation (a `SmallVec` would make `Call` invariant in `'p`).
    len: usize,
    items: [(&'static str, Cow<'p, str>); MAX_PARAMS],
}

/// The most parameters a template has (the table's tests check it).
pub(crate) const MAX_PARAMS: usize = 3;

impl<'p> Params<'p> {
    /// The value of parameter `name` (empty when the template has none of that name, which the
    /// table's tests rule out).
    pub(crate) fn get(&self, name: &str) -> &str {
        self.iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, value)| value.as_ref())
    }

    /// Adds parameter `name` with its decoded `value`: `None` when there is no room left
    /// ([`MAX_PARAMS`]).
    pub(crate) fn push(&mut self, name: &'static str, value: Cow<'p, str>) -> Option<()> {
        let slot = self.items.get_mut(self.len)?;
        *slot = (name, value);
        self.len += 1;
        Some(())
    }

    /// The parameters, in the template's order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(&'static str, Cow<'p, str>)> {
        self.items[..self.len].iter()
    }
}
