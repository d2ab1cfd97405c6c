//! A memory budget shared by concurrent jobs: how many bytes may be in flight at once across
//! all of them (download bodies being received, source files being analyzed), instead of a cap
//! per job that multiplies with the number of jobs.
//!
//! A job takes a [`Lease`] and grows it as its buffer grows; the lease is given back when it is
//! dropped. Growing waits while the budget is spent, with one exception that keeps it free of
//! deadlocks: a job that already holds part of the budget and is the only holder still running
//! (every other holder waits) goes on, over the budget if it must. So at most one job is over
//! the budget at a time, by at most what that one job holds.
//!
//! A job may also give part of its lease back early ([`Lease::shrink`]) when it frees memory
//! it no longer needs. The limit may be changed while leases are out ([`Budget::set_limit`]):
//! the command line sets the analyses' budget once, before any job starts.
//!
//! Nothing here knows what the bytes are. Waiting only ever delays a job: what a job computes
//! never depends on how long it waited (the deterministic budgets of the work itself are
//! [`crate::resources::meter`]'s).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A number of bytes that concurrent jobs share.
#[derive(Debug)]
pub struct Budget {
    limit: AtomicU64,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    in_use: u64,
    /// Leases holding more than nothing.
    holders: usize,
    /// Of those, how many wait to grow.
    waiting_holders: usize,
    /// The most ever in use at once.
    peak: u64,
}

/// One job's share of a [`Budget`]; given back when dropped.
#[derive(Debug)]
pub struct Lease<'a> {
    budget: &'a Budget,
    held: u64,
}

impl Budget {
    pub const fn new(limit: u64) -> Budget {
        Budget {
            limit: AtomicU64::new(limit),
            state: Mutex::new(State { in_use: 0, holders: 0, waiting_holders: 0, peak: 0 }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A lease holding nothing yet.
    pub fn lease(&self) -> Lease<'_> {
        Lease { budget: self, held: 0 }
    }

    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    /// Changes the limit; jobs waiting for room look again.
    pub fn set_limit(&self, limit: u64) {
        let _st = self.lock();
        self.limit.store(limit, Ordering::Relaxed);
        drop(_st);
        self.freed.notify_all();
    }

    /// Bytes held by all leases now.
    pub fn in_use(&self) -> u64 {
        self.lock().in_use
    }

    /// The most bytes ever held at once.
    pub fn peak(&self) -> u64 {
        self.lock().peak
    }
}

impl Lease<'_> {
    /// Bytes this lease holds.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Takes `n` more bytes of the budget, waiting while it is spent (see the module
    /// documentation for when it does not wait). Returns how long it waited.
    pub fn grow(&mut self, n: u64) -> Duration {
        let start = Instant::now();
        let budget = self.budget;
        let mut st = budget.lock();
        loop {
            let fits = st.in_use.saturating_add(n) <= budget.limit();
            let go = if self.held == 0 {
                fits || st.holders == 0
            } else {
                // Holders other than this one that are not waiting.
                let running_others = st.holders - st.waiting_holders - 1;
                fits || running_others == 0
            };
            if go {
                break;
            }
            if self.held > 0 {
                st.waiting_holders += 1;
            }
            st = budget.freed.wait(st).unwrap_or_else(|p| p.into_inner());
            if self.held > 0 {
                st.waiting_holders -= 1;
            }
        }
        if self.held == 0 && n > 0 {
            st.holders += 1;
        }
        st.in_use += n;
        st.peak = st.peak.max(st.in_use);
        self.held += n;
        drop(st);
        // A waiting holder may now be the only one running.
        budget.freed.notify_all();
        start.elapsed()
    }
}

impl Lease<'_> {
    /// Gives `n` bytes back (at most what the lease holds) before the lease is dropped.
    pub fn shrink(&mut self, n: u64) {
        let n = n.min(self.held);
        if n == 0 {
            return;
        }
        let mut st = self.budget.lock();
        st.in_use -= n;
        self.held -= n;
        if self.held == 0 {
            st.holders -= 1;
        }
        drop(st);
        self.budget.freed.notify_all();
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if self.held == 0 {
            return;
        }
        let mut st = self.budget.lock();
        st.in_use -= self.held;
        st.holders -= 1;
        drop(st);
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn a_lone_job_may_exceed_the_budget() {
        let b = Budget::new(10);
        let mut l = b.lease();
        l.grow(8);
        l.grow(8);
        assert_eq!(b.in_use(), 16);
        drop(l);
        assert_eq!(b.in_use(), 0);
        assert_eq!(b.peak(), 16);
    }

    #[test]
    fn shrinking_gives_room_back() {
        let b = Budget::new(10);
        let mut l = b.lease();
        l.grow(8);
        l.shrink(5);
        assert_eq!((l.held(), b.in_use()), (3, 3));
        // More than it holds: all of it, and it is no longer a holder.
        l.shrink(100);
        assert_eq!((l.held(), b.in_use()), (0, 0));
        let mut other = b.lease();
        other.grow(10);
        drop(other);
        drop(l);
        assert_eq!(b.in_use(), 0);
        b.set_limit(20);
        assert_eq!(b.limit(), 20);
    }

    #[test]
    fn concurrent_jobs_stay_within_the_budget_and_never_deadlock() {
        // Eight jobs each growing to 40 bytes in steps of 5, with a budget of 50: without the
        // budget 320 bytes would be in flight at once.
        let b = Budget::new(50);
        let max_seen = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let mut l = b.lease();
                    for _ in 0..8 {
                        l.grow(5);
                        max_seen.fetch_max(b.in_use(), Ordering::Relaxed);
                        std::thread::sleep(Duration::from_millis(1));
                    }
                });
            }
        });
        assert_eq!(b.in_use(), 0);
        // Over the limit only by what one lone holder grew while every other holder waited.
        assert!(b.peak() <= 50 + 40, "peak {}", b.peak());
        assert!(max_seen.load(Ordering::Relaxed) <= 90);
    }
}
