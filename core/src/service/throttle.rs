//! Failed sign-ins counted per address (docs/console.md, "Signing in"): a key, a one-time
//! link or (later) a passkey that does not sign in counts against the address it came from
//! ([`super::call::PeerAddr`]; an IPv6 address by its /64, which one host holds whole); beyond
//! [`MAX_FAILURES`] within [`WINDOW`], that address's failures are answered 429 with
//! `Retry-After` and no longer audited, so a flood neither fills the audit trail nor goes fast.
//! A valid key or link still signs in: one who guesses from a shared address (a proxy) can't
//! lock everyone else out. Each node counts its own. A request without an address (an
//! embedding program that gives none) is counted under none.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long failures count.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);

/// How many failed sign-ins one address has within a window before it waits.
pub(crate) const MAX_FAILURES: u32 = 10;

/// The most addresses counted at once: beyond, the oldest windows are dropped.
const MAX_ADDRESSES: usize = 100_000;

/// What failures are counted under: an address (or none), or a user a failure named.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Counted {
    Address(Option<IpAddr>),
    User(String),
}

/// Failures per address and per user, each with the start of its window.
#[derive(Debug, Default)]
pub(crate) struct SignInThrottle(Mutex<HashMap<Counted, (Instant, u32)>>);

/// What failures are counted under: the address, an IPv6 one by its /64.
fn bucket(peer: Option<IpAddr>) -> Option<IpAddr> {
    match peer? {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            Some(IpAddr::V6(bits.into()))
        }
        v4 => Some(v4),
    }
}

impl SignInThrottle {
    /// Counts a failed sign-in from `peer`, under one lock: `Ok` while it is within the limit
    /// (answer and audit it), `Err` with the seconds to wait once beyond.
    pub(crate) fn failed(&self, peer: Option<IpAddr>) -> Result<(), u64> {
        self.count(Counted::Address(bucket(peer)))
    }

    /// Counts a failed sign-in that named user `user` (a passkey of theirs that did not
    /// verify), wherever it came from: a guesser spread over many addresses still waits.
    pub(crate) fn failed_for(&self, user: &str) -> Result<(), u64> {
        self.count(Counted::User(crate::model::identity::normalized(user)))
    }

    fn count(&self, counted: Counted) -> Result<(), u64> {
        let now = Instant::now();
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if counts.len() >= MAX_ADDRESSES {
            counts.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
            if counts.len() >= MAX_ADDRESSES {
                // A flood of addresses: forget them all rather than grow.
                counts.clear();
            }
        }
        let entry = counts.entry(counted).or_insert((now, 0));
        if now.duration_since(entry.0) >= WINDOW {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(1);
        if entry.1 <= MAX_FAILURES {
            return Ok(());
        }
        let left = WINDOW.saturating_sub(now.duration_since(entry.0));
        Err(left.as_secs().max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_waits_after_failures_from_many_addresses() {
        let throttle = SignInThrottle::default();
        for n in 1..=MAX_FAILURES {
            assert!(
                throttle.failed_for("Ann@Example.com").is_ok(),
                "failure {n}"
            );
        }
        assert!(
            throttle.failed_for("ann@example.com").is_err(),
            "one user whatever the case"
        );
        assert!(
            throttle.failed_for("bob@example.com").is_ok(),
            "another user is not held"
        );
        assert!(throttle.failed(Some(IpAddr::from([10, 0, 0, 9]))).is_ok());
    }

    #[test]
    fn an_address_waits_after_its_failures_and_others_do_not() {
        let throttle = SignInThrottle::default();
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        let b = Some(IpAddr::from([10, 0, 0, 2]));
        for n in 1..=MAX_FAILURES {
            assert!(
                throttle.failed(a).is_ok(),
                "failure {n} is within the limit"
            );
        }
        let wait = throttle.failed(a).expect_err("the address waits");
        assert!((1..=60).contains(&wait), "{wait}");
        assert!(throttle.failed(b).is_ok(), "another address does not");
    }

    #[test]
    fn an_ipv6_host_counts_once_for_its_slash_64() {
        let throttle = SignInThrottle::default();
        for n in 0..MAX_FAILURES {
            let address: IpAddr = format!("2001:db8:1:2::{n:x}").parse().unwrap();
            assert!(throttle.failed(Some(address)).is_ok());
        }
        let same: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        assert!(throttle.failed(Some(same)).is_err(), "the same /64");
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(throttle.failed(Some(other)).is_ok(), "another /64");
    }
}
