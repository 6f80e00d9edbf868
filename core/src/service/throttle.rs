//! Failed sign-ins counted per address (docs/console.md, "Signing in"): a key, a one-time
//! link or (later) a passkey that does not sign in counts against the address it came from
//! ([`super::call::PeerAddr`]); beyond [`MAX_FAILURES`] within [`WINDOW`], that address's
//! sign-ins are answered 429 with `Retry-After` until the window ends, whatever they hold, so
//! guesses are slow. Each node counts its own (a guess spread over nodes is slowed per node).
//! A request without an address (an embedding program that gives none) is counted under none.

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

/// Failures per address, each with the start of its window.
#[derive(Debug, Default)]
pub(crate) struct SignInThrottle(Mutex<HashMap<Option<IpAddr>, (Instant, u32)>>);

impl SignInThrottle {
    /// `Err` with the seconds to wait when `peer` has failed too often within its window.
    pub(crate) fn check(&self, peer: Option<IpAddr>) -> Result<(), u64> {
        let now = Instant::now();
        let counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match counts.get(&peer) {
            Some((start, failures))
                if *failures >= MAX_FAILURES && now.duration_since(*start) < WINDOW =>
            {
                let left = WINDOW.saturating_sub(now.duration_since(*start));
                Err(left.as_secs().max(1))
            }
            _ => Ok(()),
        }
    }

    /// Counts a failed sign-in from `peer`; whether it is the one that reached the limit.
    pub(crate) fn failed(&self, peer: Option<IpAddr>) -> bool {
        let now = Instant::now();
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if counts.len() >= MAX_ADDRESSES {
            counts.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let entry = counts.entry(peer).or_insert((now, 0));
        if now.duration_since(entry.0) >= WINDOW {
            *entry = (now, 0);
        }
        entry.1 += 1;
        entry.1 == MAX_FAILURES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_waits_after_its_failures_and_others_do_not() {
        let throttle = SignInThrottle::default();
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        let b = Some(IpAddr::from([10, 0, 0, 2]));
        for n in 1..=MAX_FAILURES {
            assert!(throttle.check(a).is_ok(), "attempt {n}");
            assert_eq!(throttle.failed(a), n == MAX_FAILURES);
        }
        let wait = throttle.check(a).expect_err("the address waits");
        assert!((1..=60).contains(&wait), "{wait}");
        assert!(throttle.check(b).is_ok(), "another address does not");
    }
}
