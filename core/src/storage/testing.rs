//! Storage conformance suite (filled in next).
