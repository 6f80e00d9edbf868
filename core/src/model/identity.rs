//! One normalisation of user identity (docs/api.md, "Who may do what"): a user name or a group
//! name is compared, stored and indexed as its Unicode NFKC case fold (`toNFKC_Casefold`, as
//! Unicode defines it for identifiers: NFKC, full case folding, NFKC again), trimmed. So
//! `ALICE@example.com`, `alice@example.com` and `ａｌｉｃｅ@example.com` are one user: a key
//! made for one can't approve the other's query as someone else's.
//!
//! Every way in normalises ([`super::Principal::member`], `groups`, stored keys and records as
//! they are read, permission subjects as they are written), and every comparison goes through
//! [`same`], so that a principal an embedding program builds by hand compares the same way.

use unicode_normalization::UnicodeNormalization as _;

/// `name`'s normal form: trimmed, NFKC, case folded, NFKC again.
pub fn normalized(name: &str) -> String {
    let name = name.trim();
    if name
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase() && !b.is_ascii_control())
    {
        // ASCII without capitals is its own normal form: no allocation of the fold.
        return name.to_owned();
    }
    let composed: String = name.nfkc().collect();
    caseless::default_case_fold_str(&composed).nfkc().collect()
}

/// Whether `a` and `b` name the same user (or group). ASCII names (nearly all of them) compare
/// without allocating: their normal form is their trimmed lowercase.
pub fn same(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if a.is_ascii() && b.is_ascii() {
        return a.trim().eq_ignore_ascii_case(b.trim());
    }
    normalized(a) == normalized(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_width_and_compatibility_forms_are_one_name() {
        assert_eq!(normalized("ALICE@Example.com"), "alice@example.com");
        assert_eq!(normalized(" alice@example.com "), "alice@example.com");
        assert_eq!(normalized("ａｌｉｃｅ@example.com"), "alice@example.com");
        assert_eq!(normalized("STRASSE"), normalized("straße"));
        assert_eq!(normalized("ﬁnance"), "finance");
        assert_eq!(normalized("Ǆ"), normalized("ǆ"));
        assert!(same("Data-Team", "data-team"));
        assert!(!same("alice@example.com", "alice2@example.com"));
        assert!(same(" Alice@Example.com", "alice@example.com "));
        assert!(same("ALICE@example.com", "\u{ff41}lice@example.com"));
        // Idempotent.
        for name in ["ALICE", "ﬁnance", "Straße", "ａｂｃ", "İstanbul"] {
            assert_eq!(normalized(&normalized(name)), normalized(name), "{name}");
        }
    }
}
